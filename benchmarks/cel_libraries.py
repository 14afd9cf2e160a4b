"""Which CEL library the workflow language runs on: the candidates side by side.

For each maintained CEL implementation on the package index this prints, in one run:
compile time of a typical ``when:`` and of a bigger expression, evaluation time of a
compiled program, whether compiling alone refuses an unknown variable, a type error and a
syntax error (with line and column), and how many of the CEL specification's cases that
``tests/workflows/test_cel_spec_cases.py`` holds it gets right. A candidate that is not
installed is shown as such. Install all three to compare:

    pip install common-expression-language cel-python cel-expr-python
    python benchmarks/cel_libraries.py [--n 20000]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "workflows"))

WHEN = "inputs.env in ['prod', 'staging'] && size(inputs.tags) >= 2"
BIG = ("(inputs.env == 'prod' || inputs.env == 'staging') && size(inputs.tags) >= 2 && "
       "inputs.tags.all(t, t.startsWith('team-')) && steps['build'].outputs.version != '' "
       "&& (inputs.count > 3 ? 'many' : 'few') == 'many'")
DATA: dict[str, Any] = {"inputs": {"env": "prod", "tags": ["team-a", "team-b"], "count": 4},
                        "steps": {"build": {"outputs": {"version": "1.2"}}}}


class Candidate:
    """One library behind the same three calls."""

    name = ""
    module = ""

    def compile(self, text: str) -> Any:
        raise NotImplementedError

    def run(self, program: Any, data: dict[str, Any]) -> Any:
        raise NotImplementedError


class Rust(Candidate):
    name, module = "common-expression-language", "cel"

    def __init__(self) -> None:
        import cel

        self.cel = cel

    def compile(self, text: str) -> Any:
        return self.cel.compile(text)

    def run(self, program: Any, data: dict[str, Any]) -> Any:
        return program.execute(data)


class PurePython(Candidate):
    name, module = "cel-python", "celpy"

    def __init__(self) -> None:
        import celpy

        self.celpy = celpy
        self.env = celpy.Environment()

    def compile(self, text: str) -> Any:
        return self.env.program(self.env.compile(text))

    def run(self, program: Any, data: dict[str, Any]) -> Any:
        result = program.evaluate({k: self.celpy.json_to_cel(v) for k, v in data.items()})
        if isinstance(result, Exception):
            raise result
        return _plain(result)


class Cpp(Candidate):
    name, module = "cel-expr-python", "cel_expr_python"

    def __init__(self) -> None:
        from cel_expr_python import cel

        dyn = cel.Type.DYN
        self.env = cel.NewEnv(variables={"inputs": cel.Type.Map(cel.Type.STRING, dyn),
                                         "steps": cel.Type.Map(cel.Type.STRING, dyn)})

    def compile(self, text: str) -> Any:
        return self.env.compile(text)

    def run(self, program: Any, data: dict[str, Any]) -> Any:
        value = program.eval(data=data)
        if value.type().name() == "ERROR":
            raise ValueError(str(value.value()))
        return value.plain_value()


def _plain(value: Any) -> Any:
    """cel-python's typed values as plain Python ones (its BoolType is an int)."""
    if type(value).__name__ == "BoolType":
        return bool(value)
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value


def _per_call(fn: Callable[[], Any], n: int) -> float:
    """Microseconds per call, best of three batches."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - started) / n)
    return best * 1e6


def _refuses(candidate: Candidate, text: str) -> str:
    try:
        candidate.compile(text)
    except Exception as exc:  # each library raises its own kind
        return "refused" + (" at 1:14" if "1:14" in str(exc) else "")
    return "accepted"


def _spec_score(candidate: Candidate) -> str:
    from test_cel_spec_cases import CASES, ERROR

    right, wrong = 0, []
    for case in CASES:
        try:
            got = candidate.run(candidate.compile(case.expr), {})
        except Exception:
            got = ERROR
        good = got == case.expected and type(got) is type(case.expected)
        right += good
        if not good:
            wrong.append(case.origin)
    return f"{right}/{len(CASES)}" + (f" (wrong: {', '.join(wrong[:3])})" if wrong else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20000, help="evaluations per batch")
    args = parser.parse_args()
    rows: list[list[str]] = []
    for kind in (Rust, PurePython, Cpp):
        if importlib.util.find_spec(kind.module) is None:
            rows.append([kind.name, "not installed", "", "", "", "", "", "", ""])
            continue
        candidate = kind()
        program = candidate.compile(WHEN)
        n = args.n if kind is not PurePython else max(args.n // 50, 50)
        rows.append([
            kind.name,
            f"{_per_call(lambda c=candidate: c.compile(WHEN), max(n // 20, 20)):.0f}",
            f"{_per_call(lambda c=candidate: c.compile(BIG), max(n // 20, 20)):.0f}",
            f"{_per_call(lambda c=candidate, p=program: c.run(p, DATA), n):.1f}",
            _refuses(candidate, "nosuch.x == 1"),
            _refuses(candidate, "1 + 'x'"),
            _refuses(candidate, "inputs.env =="),
            _spec_score(candidate),
        ])
    head = ["library", "compile when µs", "compile big µs", "eval when µs", "unknown var",
            "type error", "syntax error", "spec cases"]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)))


if __name__ == "__main__":
    main()
