"""The many-key listing test's cost per store: one writer beside eight, in one run.

    python benchmarks/many_key_listing.py [--keys 2001] [--stores memory,file,...]

For each store (entered through the plugin's catalogue, so emulators start as in a run),
it writes ``--keys`` keys under one prefix, lists them, and deletes them, first with one
thread and then with eight threads on one handle, as
``conformance/test_store_limits.py::test_list_returns_every_key_under_a_prefix_holding_over_two_backend_pages``
does. It checks the listing is whole both times.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rich.console import Console
from rich.table import Table

from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.plugin.catalogue import EnteredStores, resolve
from reference_engine.stores.contract import close_store

DEFAULT_STORES = ("memory", "file", "sqlite", "moto-serialized", "fake-gcs")


def _each(writers: int, call: Callable[[str], object], keys: Iterable[str]) -> None:
    if writers == 1:
        for key in keys:
            call(key)
        return
    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(call, keys))


def one_pass(store: Any, keys: list[str], writers: int) -> float:
    started = time.perf_counter()
    _each(writers, lambda key: store.put(key, b"m"), keys)
    listed = store.list("many")
    _each(writers, store.delete, keys)
    seconds = time.perf_counter() - started
    if listed != keys:
        raise AssertionError(f"the listing returned {len(listed)} of {len(keys)} keys")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2001)
    parser.add_argument("--stores", default=",".join(DEFAULT_STORES))
    args = parser.parse_args()
    keys = [f"many/{n:05d}" for n in range(args.keys)]
    table = Table(title=f"write, list and delete {args.keys} keys under one prefix")
    for column in ("store", "1 writer (s)", "8 writers (s)", "speed-up"):
        table.add_column(column, justify="left" if column == "store" else "right")
    entered = EnteredStores()
    try:
        for name in args.stores.split(","):
            spec = entered.spec(resolve(name, session=uuid.uuid4().hex[:8], rootpath=None))
            handle = spec.factory()
            try:
                store = PrefixedStore(handle, f"dwb-{uuid.uuid4().hex[:8]}")
                serial = one_pass(store, keys, 1)
                parallel = one_pass(store, keys, 8)
            finally:
                close_store(handle)
            table.add_row(name, f"{serial:.2f}", f"{parallel:.2f}", f"{serial / parallel:.1f}x")
    finally:
        entered.close()
    Console().print(table)


if __name__ == "__main__":
    main()
