"""A correct store passes the suite under many seeds in a row, and what the suite costs.

    python benchmarks/seeds.py [--stores memory,file,sqlite] [--seeds 20] [--first 1]
    python benchmarks/seeds.py --seeds 1 --baseline /tmp/dw-before   # wall time, before/after
    python benchmarks/seeds.py --marker dw_store_contract --stores memory   # store level only

Each (store, seed) is its own ``pytest --dw-store=STORE --dw-suite-only --dw-seed=SEED`` in
an empty temporary directory (serial, profile ``ci`` unless ``--profile``). With
``--baseline SRC`` (a source tree of an older commit, e.g. from ``git archive``) every run is
made twice, once with the tree on ``PYTHONPATH``, so the two wall times sit side by side in
one table from one run. A failing seed is printed with the command that replays it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class Outcome:
    seconds: float
    passed: bool
    # The end of pytest's output: the diagnosis and short summary of a failing seed.
    tail: str = ""


def run_once(store: str, seed: int, profile: str, source: Path | None,
             marker: str | None = None, cwd: Path | None = None) -> Outcome:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--dw-store={store}", "--dw-suite-only", f"--dw-profile={profile}",
               f"--dw-seed={seed}", *(["-m", marker] if marker else [])]
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source),
                                                          env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="dw-seeds-") as empty:
        start = time.perf_counter()
        done = subprocess.run(command, cwd=cwd or empty, env=env, capture_output=True,
                              text=True, check=False)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
    return Outcome(time.perf_counter() - start, done.returncode == 0,
                   "" if done.returncode == 0 else tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--stores", default="memory,file,sqlite",
                        help="comma-separated --dw-store values (default: %(default)s)")
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds in a row")
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("--profile", default="ci", choices=("quick", "ci", "thorough"))
    parser.add_argument("--baseline", type=Path, default=None,
                        help="an older source tree to time beside this one")
    parser.add_argument("--marker", default=None,
                        help="run only the tests with this mark (dw_store_contract: the "
                             "store level)")
    parser.add_argument("--cwd", type=Path, default=None,
                        help="run from this directory (where a store module is found; "
                             "default: an empty temporary one)")
    args = parser.parse_args(argv)
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    seeds = range(args.first, args.first + args.seeds)
    trees: dict[str, Path | None] = {"this tree": None}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this tree": None}

    console = Console()
    table = Table(title=f"the suite under {args.seeds} seeds from {args.first} "
                        f"(serial, profile {args.profile})")
    for column in ("store", "tree", "seeds passed", "failed seeds", "median wall s",
                   "max wall s", "total wall s"):
        table.add_column(column, justify="left" if column in ("store", "tree") else "right")
    failed_any = False
    for store in stores:
        for tree, source in trees.items():
            results: dict[int, Outcome] = {}
            for seed in seeds:
                console.print(f"{store} ({tree}) seed {seed} ...", style="dim")
                results[seed] = run_once(store, seed, args.profile, source, args.marker,
                                         args.cwd)
            failed = [seed for seed, result in results.items() if not result.passed]
            failed_any = failed_any or (bool(failed) and source is None)
            walls = [result.seconds for result in results.values()]
            table.add_row(store, tree, f"{len(results) - len(failed)}/{len(results)}",
                          ", ".join(map(str, failed)) or "-",
                          f"{statistics.median(walls):.1f}", f"{max(walls):.1f}",
                          f"{sum(walls):.0f}")
            for seed in failed:
                console.print(results[seed].tail, style="dim", markup=False)
                marked = f" -m {args.marker}" if args.marker else ""
                console.print(f"replay: pytest --dw-store={store} --dw-suite-only "
                              f"--dw-profile={args.profile} --dw-seed={seed}{marked}",
                              style="red")
    console.print(table)
    console.print(f"machine: {os.cpu_count()} cores; load average "
                  f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
