"""How fast `dw` starts, beside `python -c pass`, and a shell's `dw signal` + `dw resume`.

Each command runs as a whole process, as a user's shell runs it (the console script's
own two lines: import ``reference_engine.cli.main``, call ``main()``). CPU is the
child's user + system time from the operating system; wall is measured around it.
Commands run in turn (A B A B ...) so a machine that slows down slows all of them.
``--baseline PATH`` adds the code in PATH (a checkout of another commit, e.g.
``git worktree add /tmp/dw-main main``) beside this tree. Medians are printed; the
load average shows how busy the machine was.

    python benchmarks/cli_start.py [--n 15] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
HELP_GOAL_X = 3.0  # dw --help's CPU time, at most this many times python -c pass's
PAIR_GOAL_S = 0.25  # dw signal then dw resume on file://, wall time in all
DW = "import sys; from reference_engine.cli.main import main; sys.argv[0] = 'dw'; main()"
WORKFLOW = """\
name: bench
jobs:
  approve:
    steps:
      - name: approval
        wait_for_signal: {timeout: 3600, schema: {type: object, required: [ok],
                          properties: {ok: {type: boolean}}}}
  after:
    depends_on: [approve]
    steps: [{name: done, log: done}]
"""


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """``(cpu seconds, wall seconds, stdout)`` of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # From a neutral folder: ``python -c`` puts the working folder first on sys.path.
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False,
                          cwd=tempfile.gettempdir())
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {done.returncode}: "
                         f"{done.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def _dw(tree: Path, *args: str) -> tuple[float, float, str]:
    return _run([sys.executable, "-c", DW, *args], _env(tree))


def _signal_then_resume(tree: Path, store: str, workflow: Path) -> tuple[float, float]:
    """One suspended run (not timed), then `dw signal` and `dw resume` (timed)."""
    _, _, out = _dw(tree, "run", str(workflow), "--store", store, "--json")
    view = json.loads(out)
    cpu1, wall1, _ = _dw(tree, "signal", view["waits"][0]["waitId"], "--payload",
                         '{"ok": true}', "--store", store)
    cpu2, wall2, out = _dw(tree, "resume", view["runId"], "--store", store, "--json")
    if json.loads(out)["status"] != "succeeded":
        raise SystemExit(f"run {view['runId']} did not succeed")
    return cpu1 + cpu2, wall1 + wall2


def _pair_measure(store: str, workflow: Path) -> Callable[[Path], tuple[float, float]]:
    def measure(tree: Path) -> tuple[float, float]:
        return _signal_then_resume(tree, store, workflow)
    return measure


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=15, help="tries of each command")
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="dw-start-"))
    workflow = scratch / "bench.yaml"
    workflow.write_text(WORKFLOW, encoding="utf-8")
    trees = [("this tree", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    measures: dict[str, Callable[[Path], tuple[float, float]]] = {
        "python -c pass": lambda tree: _run([sys.executable, "-c", "pass"], _env(tree))[:2],
        "dw --help": lambda tree: _dw(tree, "--help")[:2],
    }
    for label, _tree in trees:
        measures[f"dw signal + dw resume [{label}]"] = _pair_measure(
            f"file://{scratch / label.replace(' ', '-')}?fsync=0", workflow)
    samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(args.n):
        for name, measure in measures.items():
            for label, tree in trees:
                if name.startswith("dw signal") and not name.endswith(f"[{label}]"):
                    continue
                samples.setdefault((name.split(" [")[0], label), []).append(measure(tree))
    base_cpu = {label: statistics.median(c for c, _ in samples[("python -c pass", label)])
                for label, _ in trees}
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, {args.n} tries each")
    header = ("command", "code", "cpu ms", "wall ms", "cpu / python -c pass")
    rows = [header]
    for (name, label), got in samples.items():
        cpu = statistics.median(c for c, _ in got)
        wall = statistics.median(w for _, w in got)
        rows.append((name, label, f"{cpu * 1000:.0f}", f"{wall * 1000:.0f}",
                     f"{cpu / base_cpu[label]:.2f}x"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in [rows[0], tuple("-" * w for w in widths), *rows[1:]]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    _goals(samples, base_cpu)


def _goals(samples: dict[tuple[str, str], list[tuple[float, float]]],
           base_cpu: dict[str, float]) -> None:
    """The issue's two goals, for this tree: met or not, with the figure."""
    help_cpu = statistics.median(c for c, _ in samples[("dw --help", "this tree")])
    pair_wall = statistics.median(w for _, w in samples[("dw signal + dw resume", "this tree")])
    ratio = help_cpu / base_cpu["this tree"]
    print(f"goal: dw --help within {HELP_GOAL_X:g}x of python -c pass in CPU: {ratio:.2f}x, "
          f"{'met' if ratio <= HELP_GOAL_X else 'NOT met'}")
    print(f"goal: dw signal + dw resume under {PAIR_GOAL_S * 1000:.0f} ms wall: "
          f"{pair_wall * 1000:.0f} ms, {'met' if pair_wall < PAIR_GOAL_S else 'NOT met'}")


if __name__ == "__main__":
    main()
