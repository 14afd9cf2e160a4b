"""Workflow expressions, before and after CEL: loading a 100-step workflow, and one `when:`.

Budgets (issue 25): compiling the expressions of a 100-step workflow under 50 ms, and
evaluating a typical `when:` under 20 µs. Each tree is measured in a child process of its
own, in turn (A B A B ...), so a machine that slows down slows both. This tree is "after";
``--baseline PATH`` adds a checkout of the code before CEL (e.g. ``git worktree add
/tmp/dw-main <commit>``) as "before", run with the same interpreter. The expression texts
are the same in both, except ``&&`` for the old ``and``. Medians are printed.

    python benchmarks/expressions.py [--n 5] [--baseline PATH]

Columns: ``first load`` is the first workflow a process loads (CEL's runtime sets itself
up once, then); ``load 100 steps`` is the parse and check of the whole 100-step workflow
with every expression compiled anew (the compile caches cleared); ``when: µs`` is one
evaluation of a compiled `when:` in a run-sized context.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
LOAD_GOAL_MS = 50.0
WHEN_GOAL_US = 20.0

# Run in the child: measures the tree on its PYTHONPATH. Prints one JSON line.
PROBE = r"""
import importlib, json, sys, time
t0 = time.perf_counter()
from reference_engine.workflows import loader
cel = importlib.util.find_spec("reference_engine.workflows.cel") is not None
AND = " && " if cel else " and "

def workflow(tag):
    jobs = {}
    for j in range(10):
        steps = []
        for s in range(10):
            n = j * 10 + s
            prev = f"steps.s{n - 1}.outputs.message" if s else "inputs.env"
            steps.append({"name": f"s{n}", "log": f"{tag} ${{{{ inputs.env }}}} after "
                                                    f"${{{{ {prev} }}}}"})
        job = {"steps": steps}
        if j:
            job["depends_on"] = [f"j{j - 1}"]
            job["when"] = f"inputs.env == 'prod'{AND}succeeded('j{j - 1}')"
        jobs[f"j{j}"] = job
    return {"name": "bench", "inputs": {"env": "prod", "n": 3}, "jobs": jobs}

def clear():
    if cel:
        from reference_engine.workflows import cel as c
        c._compile.cache_clear()
    else:
        from reference_engine.workflows import expressions as e
        e._compile.cache_clear()

first = time.perf_counter()
loader.parse_workflow(workflow("warm"))
first = time.perf_counter() - first
loads = []
for i in range(15):
    clear()
    doc = workflow(f"run{i}")
    started = time.perf_counter()
    loader.parse_workflow(doc)
    loads.append(time.perf_counter() - started)
when = f"inputs.env == 'prod'{AND}succeeded('build')"
context = {"inputs": {"env": "prod", "n": 3},
           "steps": {f"s{i}": {"outputs": {"message": "x" * 40}, "status": "succeeded"}
                     for i in range(100)},
           "jobs": {"build": "succeeded", **{f"j{i}": "succeeded" for i in range(10)}}}
if cel:
    from reference_engine.workflows.cel import Scope, compile_cel
    program = compile_cel(when, Scope.of(context["inputs"]))
    run = lambda: program.condition(context)
else:
    from reference_engine.workflows.expressions import compile_expression, evaluate_condition
    compiled = compile_expression(when)
    run = lambda: evaluate_condition(compiled, context)
assert run() is True
best = float("inf")
for _ in range(5):
    n = 20000
    started = time.perf_counter()
    for _ in range(n):
        run()
    best = min(best, (time.perf_counter() - started) / n)
print(json.dumps({"cel": cel, "first_ms": first * 1e3,
                  "load_ms": sorted(loads)[len(loads) // 2] * 1e3, "when_us": best * 1e6}))
"""


def _measure(tree: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, cwd=tree, check=True, timeout=600)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5, help="child processes per tree")
    parser.add_argument("--baseline", type=Path, help="a checkout of the code before CEL")
    args = parser.parse_args()
    trees = [("before", args.baseline)] if args.baseline else []
    trees.append(("after", HERE))
    samples: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for _ in range(args.n):
        for name, tree in trees:
            samples[name].append(_measure(tree))
    head = ["tree", "language", "first load ms", "load 100 steps ms", "when: µs"]
    rows = []
    for name, _ in trees:
        got = samples[name]
        rows.append([name, "CEL" if got[0]["cel"] else "old",
                     f"{statistics.median(s['first_ms'] for s in got):.1f}",
                     f"{statistics.median(s['load_ms'] for s in got):.1f}",
                     f"{statistics.median(s['when_us'] for s in got):.2f}"])
    rows.append(["budget", "", "", f"< {LOAD_GOAL_MS:.0f}", f"< {WHEN_GOAL_US:.0f}"])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
