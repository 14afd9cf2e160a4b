"""Store operations per second for each built-in backend, beside raw filesystem creates.

    python benchmarks/store_ops.py [--n 2000] [--dir DIR] [--no-remote]

Every row runs the same sequence on N distinct keys in one "directory" (``bench/k<i>``):
``put_if_absent`` of each key, ``put`` over each key, ``get`` of each key, then ``list`` of
the whole prefix (N keys per call; fewer calls). The two raw rows create N files in one
directory on the same disk as the file store: ``O_CREAT|O_EXCL`` + write, and the file
store's own recipe done by hand (temp file + ``os.link`` + unlink). The done-bar is the
file store with ``fsync=0`` reaching 0.7x the raw temp+link create.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

PAYLOAD = b"x" * 1024
LIST_CALLS = 20
RAW_EXCL = "raw O_CREAT|O_EXCL"
RAW_LINK = "raw temp + os.link"
FILE_FAST = "file fsync=0"
EXEC_FIRST_ROW = "memory:// in process"


@dataclass
class Row:
    store: str
    n: int
    ops: dict[str, float]
    note: str = ""


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def _timed(action: Callable[[int], Any], count: int) -> float:
    start = time.perf_counter()
    for i in range(count):
        action(i)
    return _rate(count, time.perf_counter() - start)


def measure_store(name: str, store: Any, n: int, note: str = "") -> Row:
    keys = [f"bench/k{i}" for i in range(n)]
    ops = {
        "put_if_absent": _timed(lambda i: store.put_if_absent(keys[i], PAYLOAD), n),
        "put": _timed(lambda i: store.put(keys[i], PAYLOAD), n),
        "get": _timed(lambda i: store.get(keys[i]), n),
        "list": _timed(lambda i: store.list("bench"), max(1, min(LIST_CALLS, 20_000 // n))),
    }
    for key in keys:
        store.delete(key)
    return Row(name, n, ops, note)


class AsyncFacade:
    """``store``'s methods as coroutines: what the async adapter's round trip costs."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def put(self, key: str, data: bytes) -> None:
        self.store.put(key, data)

    async def put_if_absent(self, key: str, data: bytes) -> bool:
        return bool(self.store.put_if_absent(key, data))

    async def get(self, key: str) -> bytes | None:
        found: bytes | None = self.store.get(key)
        return found

    async def delete(self, key: str) -> None:
        self.store.delete(key)

    async def list(self, prefix: str) -> list[str]:
        return list(self.store.list(prefix))


def _create_rate(store: Any, keys: list[str]) -> float:
    return _timed(lambda i: store.put_if_absent(keys[i], PAYLOAD), len(keys))


def raw_excl_create(directory: Path, n: int) -> float:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [str(directory / f"k{i}") for i in range(n)]

    def create(i: int) -> None:
        fd = os.open(paths[i], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, PAYLOAD)
        os.close(fd)

    return _timed(create, n)


def raw_temp_link_create(directory: Path, n: int) -> float:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [str(directory / f"k{i}") for i in range(n)]
    temps = [str(directory / f".t{i}.tmp") for i in range(n)]

    def create(i: int) -> None:
        fd = os.open(temps[i], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, PAYLOAD)
        os.close(fd)
        os.link(temps[i], paths[i])
        os.unlink(temps[i])

    return _timed(create, n)


@contextlib.contextmanager
def _remote_specs(console: Console) -> Iterator[list[tuple[str, Callable[[], Any], str]]]:
    """(name, factory, note) for S3 on moto-serialized and GCS on fake-gcs, when installed."""
    from dw_testing.emulators import fake_gcs, moto_serialized
    from reference_engine.errors import StoreUnavailable

    candidates = [
        ("s3 (moto-serialized)", moto_serialized, "loopback HTTP to a moto child process"),
        ("gs (fake-gcs)", fake_gcs, "loopback HTTP to the fake-gcs-server binary"),
    ]
    specs: list[tuple[str, Callable[[], Any], str]] = []
    with contextlib.ExitStack() as stack:
        for name, provider, note in candidates:
            try:
                spec = stack.enter_context(provider())
            except (ImportError, RuntimeError, StoreUnavailable) as exc:
                console.print(f"[yellow]skipping {name}: {exc}; install the test extra "
                              "(pip install '.[test]')[/]")
                continue
            specs.append((name, spec.factory, note))
        yield specs


def _filesystem_type(path: Path) -> str:
    best, kind = "", "?"
    with contextlib.suppress(OSError), open("/proc/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            mount_point = fields[1]
            if str(path).startswith(mount_point) and len(mount_point) > len(best):
                best, kind = mount_point, fields[2]
    return kind


def compare_creates(base: Path, n: int, rounds: int) -> dict[str, list[float]]:
    """Raw creates and the file store's create, interleaved round by round on fresh dirs.

    Interleaving and best-of-rounds keep a noisy shared disk from deciding the ratio.
    """
    from reference_engine.stores.fs import FsStore

    rates: dict[str, list[float]] = {RAW_EXCL: [], RAW_LINK: [], FILE_FAST: []}
    keys = [f"bench/k{i}" for i in range(n)]
    for r in range(rounds):
        rates[RAW_EXCL].append(raw_excl_create(base / f"excl{r}", n))
        rates[RAW_LINK].append(raw_temp_link_create(base / f"link{r}", n))
        rates[FILE_FAST].append(_create_rate(FsStore(base / f"fs-create{r}", fsync=False), keys))
        for folder in (f"excl{r}", f"link{r}", f"fs-create{r}"):
            shutil.rmtree(base / folder, ignore_errors=True)
    return rates


def run(n: int, base: Path, rounds: int, remote: bool, console: Console) -> list[Row]:
    from reference_engine.stores.async_adapter import adapt_if_async
    from reference_engine.stores.fs import FsStore
    from reference_engine.stores.memory import MemoryStore
    from reference_engine.stores.sqlite import SqliteStore

    durable_n = min(n, 500)
    remote_n = min(n, 300)
    creates = compare_creates(base, n, rounds)

    def best(name: str) -> float:
        return max(creates[name])

    def spread(name: str) -> str:
        return f"best of {rounds}; median {statistics.median(creates[name]):,.0f}"

    fast = measure_store(FILE_FAST, FsStore(base / "fs0", fsync=False), n)
    fast.ops["put_if_absent"] = best(FILE_FAST)
    fast.note = "put_if_absent: " + spread(FILE_FAST)
    rows = [
        Row(RAW_EXCL, n, {"put_if_absent": best(RAW_EXCL)},
            f"{spread(RAW_EXCL)}; readers can see partial files"),
        Row(RAW_LINK, n, {"put_if_absent": best(RAW_LINK)},
            f"{spread(RAW_LINK)}; the bar's baseline"),
        measure_store("memory://", MemoryStore(), n),
        measure_store("memory:// as async def", adapt_if_async(AsyncFacade(MemoryStore())), n,
                      "each call a round trip to the handle's event-loop thread"),
        fast,
        measure_store("file fsync=1", FsStore(base / "fs1", fsync=True), durable_n),
        measure_store("sqlite (WAL, sync=FULL)", SqliteStore(base / "s.db"), durable_n),
    ]
    rows += exec_rows(base, min(n, 1000), console)
    if remote:
        with _remote_specs(console) as specs:
            for name, factory, note in specs:
                rows.append(measure_store(name, factory(), remote_n, note))
    return rows


def exec_rows(base: Path, n: int, console: Console) -> list[Row]:
    """The same stores through ``exec:`` (a child process, JSON lines), beside in process.

    Each op is one round trip, made one after another: the latency a single-threaded caller
    sees. The TypeScript example store under Deno joins when Deno is installed.
    """
    import shlex

    from reference_engine.stores.fs import FsStore
    from reference_engine.stores.memory import MemoryStore
    from reference_engine.stores.registry import open_store

    child = [sys.executable, "-m", "reference_engine.stores.exec.child"]
    file_uri = f"file://{base / 'fs-exec'}?fsync=0"
    pairs: list[tuple[str, Any, str, str]] = [
        ("memory://", MemoryStore(), "exec: memory://", shlex.join([*child, "memory://"])),
        ("file fsync=0", FsStore(base / "fs-exec-in", fsync=False), "exec: file fsync=0",
         shlex.join([*child, file_uri])),
    ]
    deno = shutil.which("deno")
    example = Path(__file__).resolve().parents[1] / "examples" / "typescript" / "fs_store.ts"
    if deno is not None and example.is_file():
        pairs.append(("", None, "exec: fs_store.ts (Deno)",
                      shlex.join([deno, "run", "-A", str(example), str(base / "fs-ts")])))
    else:
        console.print("[yellow]skipping the Deno row: deno is not installed "
                      "(pip install '.[test]')[/]")
    rows: list[Row] = []
    for in_name, in_store, exec_name, command in pairs:
        if in_store is not None:
            rows.append(measure_store(f"{in_name} in process", in_store, n))
        handle = open_store(f"exec:{command}")
        try:
            rows.append(measure_store(exec_name, handle, n, "one child, one call at a time"))
        finally:
            handle.close()  # type: ignore[attr-defined]
    rows.append(open_close_row(f"exec:{pairs[0][3]}", 30))
    return rows


def open_close_row(reference: str, count: int) -> Row:
    """Handles opened and closed per second through exec: (a child started per handle)."""
    from reference_engine.stores.exec import end_spares
    from reference_engine.stores.registry import open_store

    end_spares()

    def cycle(_: int) -> None:
        handle = open_store(reference)
        handle.close()  # type: ignore[attr-defined]

    rate = _timed(cycle, count)
    end_spares()
    return Row("exec: open + close", count, {"put": rate},
               "handles/s in the put column: a Python child each, with spares")


def by_op(rows: list[Row], store: str, op: str) -> float:
    return next((row.ops.get(op, 0.0) for row in rows if row.store == store), 0.0)


def render(rows: list[Row], base: Path, console: Console) -> None:
    table = Table(title=f"store ops/s (1 KiB values; dir on {_filesystem_type(base)})")
    table.add_column("store")
    table.add_column("N", justify="right")
    for op in ("put_if_absent", "put", "get", "list"):
        table.add_column(op, justify="right")
    table.add_column("note")
    for row in rows:
        if row.store == EXEC_FIRST_ROW:
            table.add_section()
        cells = [f"{row.ops[op]:,.0f}" if op in row.ops else "" for op in
                 ("put_if_absent", "put", "get", "list")]
        table.add_row(row.store, str(row.n), *cells, row.note)
    console.print(table)
    by_name = {row.store: row.ops["put_if_absent"] for row in rows if "put_if_absent" in row.ops}
    ratio = by_name[FILE_FAST] / by_name[RAW_LINK]
    verdict = "meets" if ratio >= 0.7 else "MISSES"
    console.print(f"file fsync=0 put_if_absent / raw temp+link = {ratio:.2f}x "
                  f"({verdict} the 0.7x bar); / raw O_EXCL = "
                  f"{by_name[FILE_FAST] / by_name[RAW_EXCL]:.2f}x")
    console.print("list: calls/s, each returning every key under bench/ (N keys)")
    exec_ratios = []
    for name in ("memory://", "file fsync=0"):
        inside, through = by_op(rows, f"{name} in process", "get"), by_op(rows, f"exec: {name}",
                                                                          "get")
        if inside and through:
            exec_ratios.append(f"{name} get through exec: {inside / through:,.0f}x slower")
    if exec_ratios:
        console.print("; ".join(exec_ratios))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=2000, help="keys per row (default 2000)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where to put the file stores (default: a temp dir)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved rounds of the create comparison (default 5)")
    parser.add_argument("--no-remote", action="store_true", help="skip the s3 and gs rows")
    args = parser.parse_args(argv)
    console = Console(width=140)
    base = Path(tempfile.mkdtemp(prefix="dw-bench-", dir=args.dir))
    try:
        rows = run(args.n, base, args.rounds, not args.no_remote, console)
        render(rows, base, console)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
