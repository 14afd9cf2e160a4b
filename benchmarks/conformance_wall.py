"""Wall time of the full conformance run, per store (docs/explanation/profiles.md).

    python benchmarks/conformance_wall.py [--stores memory,file,...] [-n N] [--profile ci]
    python benchmarks/conformance_wall.py --exec     # memory, file, sqlite: in process, exec:
    python benchmarks/conformance_wall.py --exec --baseline /tmp/dw-main-src  # before, after

Each store gets its own ``pytest --dw-store=STORE --dw-suite-only`` in an empty temporary
directory, so no project's ``addopts`` or tests join the run, and one store's time is
not shared with another. ``-n 0`` (the default) runs serially; ``-n 2`` or ``-n auto`` uses
pytest-xdist. Server-backed stores include starting their emulator. ``--baseline PATH``
(a copy of other code, e.g. ``git archive main``) runs every store on that code too, in
turns with this tree (each run's ``PYTHONPATH`` names its tree), so both see the same
machine. ``DW_EXEC_FORK=0`` in the environment starts each Python child as written
instead of forking it from a warm process.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

DEFAULT_STORES = ("memory", "file", "sqlite", "moto-serialized", "fake-gcs")
ROOT = Path(__file__).resolve().parents[1]
TS_EXAMPLE = ROOT / "examples" / "typescript" / "fs_store.ts"
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)")


@dataclass
class Row:
    store: str
    code: str
    seconds: float
    cpu: float
    counts: dict[str, int]
    exit_code: int


def run_suite(store: str, workers: str, profile: str, tree: Path | None = None,
              code: str = "this tree") -> Row:
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--dw-store={store}", "--dw-suite-only", f"--dw-profile={profile}"]
    if workers != "0":
        command += ["-n", workers]
    with tempfile.TemporaryDirectory(prefix="dw-wall-") as empty:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=empty, capture_output=True, text=True, check=False,
                              env=env)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The run's own CPU and that of every process under it that was waited for (a forked
    # exec child is reaped by its fork server, the server by the run): robust to a machine
    # busy with other work, where wall time is not.
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
              for n, kind in _COUNT.findall(tail)}
    return Row(store, code, seconds, cpu, counts, done.returncode)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--stores", default=",".join(DEFAULT_STORES),
                        help="comma-separated --dw-store values (default: %(default)s)")
    parser.add_argument("-n", dest="workers", default="0",
                        help="pytest-xdist workers: 0 (serial, the default), 2, auto")
    parser.add_argument("--profile", default="ci", choices=("quick", "ci", "thorough"))
    parser.add_argument("--exec", dest="exec_pairs", action="store_true",
                        help="compare memory, file and sqlite in process with the same "
                        "stores through exec: (exec-memory, exec-file, exec-sqlite), plus "
                        "the TypeScript example")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="a copy of other code to run each store on as well, in turns")
    args = parser.parse_args(argv)
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline is not None:
        trees = [("baseline", args.baseline.resolve()), ("this tree", ROOT)]
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if args.exec_pairs:
        stores = ["memory", "exec-memory", "file", "exec-file", "sqlite", "exec-sqlite"]
        deno = shutil.which("deno")
        if deno is not None:
            stores.append(f"exec:{shlex.join([deno, 'run', '-A', str(TS_EXAMPLE)])}")
        else:
            print("deno is not on PATH: the TypeScript example's row is left out",
                  file=sys.stderr)

    console = Console(width=120)
    mode = "serial" if args.workers == "0" else f"-n {args.workers}"
    table = Table(title=f"full conformance run per store ({mode}, profile {args.profile})")
    columns = ("store", "code", "wall s", "cpu s", "passed", "xfailed", "skipped", "failed", "exit")
    for column in columns if len(trees) > 1 else tuple(c for c in columns if c != "code"):
        table.add_column(column, justify="left" if column in ("store", "code") else "right")
    worst = 0
    seconds: dict[tuple[str, str], float] = {}
    cpu: dict[tuple[str, str], float] = {}
    for store in stores:
        for code, tree in trees:
            if code == "baseline" and store.endswith(str(TS_EXAMPLE)):
                continue  # the TypeScript example runs no Python child: one row is enough
            console.print(f"running the suite on {store} ({code}) ...", style="dim")
            row = run_suite(store, args.workers, args.profile, tree, code)
            seconds[(store, code)] = row.seconds
            cpu[(store, code)] = row.cpu
            worst = max(worst, row.exit_code)
            shown = "exec: fs_store.ts (Deno)" if store.endswith(str(TS_EXAMPLE)) else row.store
            cells = [f"{row.seconds:.1f}", f"{row.cpu:.1f}",
                     *(str(row.counts.get(k, 0)) for k in ("passed", "xfailed", "skipped")),
                     str(row.counts.get("failed", 0) + row.counts.get("error", 0)),
                     str(row.exit_code)]
            table.add_row(shown, *([code] if len(trees) > 1 else []), *cells)
    console.print(table)
    console.print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the end")
    for code, _ in trees:
        for inside in ("memory", "file", "sqlite"):
            if (inside, code) in seconds and (f"exec-{inside}", code) in seconds:
                ratio = seconds[(f"exec-{inside}", code)] / seconds[(inside, code)]
                cpu_ratio = cpu[(f"exec-{inside}", code)] / cpu[(inside, code)]
                console.print(f"{inside} ({code}): through exec: {ratio:.1f}x the in-process "
                              f"wall time ({'within' if ratio <= 3 else 'OVER'} the 3x aim), "
                              f"{cpu_ratio:.1f}x its CPU")
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
