"""The expression language of ``when:``, ``for_each:`` and ``${{ }}``: CEL, through cel-expr-python.

CEL (the Common Expression Language) is specified, bounded and type-checked; the library
is Google's C++ implementation (docs/reference/expressions.md says why it was chosen).
Every expression is compiled when the workflow loads, against a scope built from the
workflow: the variables ``inputs`` (typed from each input's default), ``steps``, ``jobs``
and, inside a ``for_each`` step only, ``item``; the functions ``failed('job')`` and
``succeeded('job')``. Nothing else is reachable: not the process environment, not files.

Decisions (docs/reference/expressions.md has them for users):
- A missing key is an error, as in CEL; guard it with ``has(a.b)`` or ``'b' in a``.
- ``when:`` must be a boolean (CEL's rule); JSON truthiness is gone.
- A path segment with ``-`` (``steps.my-step.outputs``) is rewritten to bracket access
  (``steps["my-step"].outputs``) before compiling, as swamp does; write ``a - b`` with
  spaces for subtraction.
- Cost: at most :data:`MAX_EXPRESSION_CHARS` characters; without macros CEL is linear in
  the expression and the data. The macros (``all``, ``exists``, ``exists_one``, ``map``,
  ``filter``) share the runtime's budget of :data:`ITERATION_BUDGET` iterations per
  evaluation; going over it is a clear :class:`CelRuntimeError`.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from cel_expr_python import cel as _cel

from reference_engine.workflows.errors import WorkflowError, shown

MAX_EXPRESSION_CHARS = 2000
ITERATION_BUDGET = 10_000  # cel-expr-python's own limit on macro iterations (measured)
ROOTS = ("inputs", "steps", "jobs", "item")
FUNCTIONS = ("failed", "succeeded")
_MACROS = re.compile(r"\.\s*(all|exists|exists_one|map|filter)\s*\(")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DASHED = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+)")
_CHAIN = re.compile(r"(?<![A-Za-z0-9_.])(inputs|steps|jobs|item)\b"
                    r"((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_-]*|\s*\[[^\[\]]*\])*)")
_ROOT_READ = re.compile(r"(?<![A-Za-z0-9_.])(inputs|steps|jobs)\s*(?:\.\s*(" + _NAME +
                        r")|\[\s*(['\"])((?:(?!\3).)*)\3\s*\])")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])(failed|succeeded)\s*\(\s*(?:(['\"])((?:(?!\2).)*)\2"
                   r"\s*\))?")
_ITEM = re.compile(r"(?<![A-Za-z0-9_.])item\b")
_ROOT = re.compile(r"(?<![A-Za-z0-9_.])(inputs|steps|jobs|item)\b")
_HAS_INPUT = re.compile(r"has\s*\(\s*inputs\s*\.\s*(" + _NAME + r")\s*\)")
# The jobs of the run being evaluated, for failed()/succeeded() (set around each evaluation).
_ERROR = _cel.Type.ERROR
_JOBS: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("jobs",
                                                                                 default=None)


class ExpressionError(WorkflowError):
    """An expression is refused at load. The message names the column and what to write."""


class CelRuntimeError(Exception):
    """Evaluating an expression failed at run time; the message names the expression."""


# ---------------------------------------------------------------------------- scope


def cel_type(value: Any) -> str:
    """The CEL type an input's default gives it: ``int``, ``string``, ``list``... or ``dyn``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return "dyn"  # a null default: any value


@dataclass(frozen=True)
class Scope:
    """What an expression may read: typed inputs, and ``item`` inside ``for_each``."""

    inputs: tuple[tuple[str, str], ...] = ()  # (name, cel_type(default)), sorted
    item: bool = False

    @staticmethod
    def of(inputs: Mapping[str, Any], *, item: bool = False) -> Scope:
        return Scope(tuple(sorted((k, cel_type(v)) for k, v in inputs.items())), item)


_TYPES = {"bool": _cel.Type.BOOL, "int": _cel.Type.INT, "double": _cel.Type.DOUBLE,
          "string": _cel.Type.STRING, "list": _cel.Type.List(_cel.Type.DYN),
          "map": _cel.Type.Map(_cel.Type.STRING, _cel.Type.DYN), "dyn": _cel.Type.DYN}


def _job_is(status: str) -> Any:
    def check(job: str) -> bool:
        return (_JOBS.get() or {}).get(job) == status
    return check


@lru_cache(maxsize=256)
def _env(typed: tuple[tuple[str, str], ...], item: bool, old: bool = False) -> Any:
    t = _cel.Type
    variables: dict[str, Any] = {"inputs": t.Map(t.STRING, t.DYN),
                                 "steps": t.Map(t.STRING, t.DYN),
                                 "jobs": t.Map(t.STRING, t.STRING)}
    # ``inputs.count`` as a qualified name of its own type: the checker then refuses
    # ``inputs.count + 'x'`` at load. Bracket access (``inputs['count']``) stays dyn.
    variables.update({f"inputs.{name}": _TYPES[kind] for name, kind in typed})
    if item:
        variables["item"] = t.DYN
    functions = [_cel.FunctionDecl(name, [_cel.Overload(f"{name}_string", t.BOOL, [t.STRING],
                                                        impl=_job_is(status))])
                 for name, status in (("failed", "failed"), ("succeeded", "succeeded"))]
    if old:  # only a stored run's translated old expressions reach these
        from reference_engine.workflows import legacy

        for name, kind, impl in (("dw_old_path", t.DYN, legacy.old_path),
                                 ("dw_old_truthy", t.BOOL, legacy.old_truthy),
                                 ("dw_old_eq", t.BOOL, legacy.old_eq)):
            functions.append(_cel.FunctionDecl(name, [_cel.Overload(
                f"{name}_list", kind, [t.List(t.DYN)], impl=impl)]))
    return _cel.NewEnv(variables=variables, functions=functions)


# ---------------------------------------------------------------------------- text


def _mask(text: str) -> str:
    """``text`` with every string literal's characters (quotes included) replaced by NUL.

    Regexes then see only code, at the same positions as in ``text``.
    """
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            start = i
            raw = i > 0 and text[i - 1] in "rR" and (i < 2 or not text[i - 2].isalnum())
            quote = text[i:i + 3] if text.startswith(ch * 3, i) else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                i += 2 if text[i] == "\\" and not raw else 1
            i = min(i + len(quote), n)
            for j in range(start, i):
                out[j] = "\0"
        else:
            i += 1
    return "".join(out)


def rewrite_dashes(text: str) -> str:
    """``steps.my-step.outputs`` -> ``steps["my-step"].outputs`` on paths from a root."""
    masked = _mask(text)
    edits: list[tuple[int, int, str]] = []
    for chain in _CHAIN.finditer(masked):
        base = chain.start(2)
        for seg in _DASHED.finditer(chain.group(2)):
            edits.append((base + seg.start(), base + seg.end(), f'["{seg.group(1)}"]'))
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


def _column(message: str) -> str:
    """CEL's ``ERROR: <input>:1:14: what`` as ``column 14: what``."""
    found = re.search(r"<input>:(\d+):(\d+): ([^\n]*)", message)
    if not found:
        return shown(message.strip().splitlines()[0] if message.strip() else "refused", 160)
    line, col, what = found.groups()
    where = f"column {col}" if line == "1" else f"line {line}, column {col}"
    what = re.sub(r" expecting .*", "", what.replace(" (in container '')", ""))
    return f"{where}: {shown(what, 160)}"


# ---------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Program:
    """A compiled expression and what it reads, so the loader can check references."""

    text: str  # as written
    source: str = field(repr=False)  # the CEL compiled (dashes rewritten)
    result_type: str = "dyn"  # the checker's type: bool, int, string, list, map, dyn...
    inputs: frozenset[str] = frozenset()
    steps: frozenset[str] = frozenset()  # may be iteration names like 's[0]'
    jobs: frozenset[str] = frozenset()  # read by failed()/succeeded()/jobs.<name>
    failed_jobs: frozenset[str] = frozenset()
    uses_item: bool = False
    macros: int = 0
    old: bool = False  # translated from the old language (a stored run)
    roots: tuple[str, ...] = ("inputs", "steps", "jobs")  # the root variables it names
    typed: tuple[str, ...] = ()  # inputs bound as qualified names
    compiled: Any = field(default=None, repr=False, compare=False)

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The plain value of the expression in ``context``; :class:`CelRuntimeError` if not."""
        inputs = context.get("inputs") or {}
        # Only the roots the expression names cross into CEL: converting a run's every step
        # output for a `when:` that reads none of them would be most of the cost.
        data: dict[str, Any] = {root: context.get(root) or {} for root in self.roots}
        for name in self.typed:
            if name in inputs:
                data[f"inputs.{name}"] = inputs[name]
        if self.uses_item:
            data["item"] = context.get("item")
        if _holds_nul(data):
            # The CEL runtime cuts text at U+0000: it would answer for a shorter, other value.
            raise CelRuntimeError(f"the expression {_quoted(self.text)} reads data holding a "
                                  "NUL character (U+0000), which CEL cannot carry; remove or "
                                  "replace it in a step before the expression reads it")
        token = _JOBS.set(context.get("jobs") or {})
        try:
            value = self.compiled.eval(data=data)
            result = value.plain_value()
            # An error's plain value is its message: only a text result needs the type check.
            failed = isinstance(result, str) and value.type() == _ERROR
            if failed and "out of range for" in result:
                # JSON allows integers past CEL's 64 bits: read those as doubles, as JSON would
                value = self.compiled.eval(data=_fit(data))
                result = value.plain_value()
                failed = isinstance(result, str) and value.type() == _ERROR
        except RuntimeError as exc:  # the runtime's budget; no traceback reaches the user
            if "budget" not in str(exc):
                raise CelRuntimeError(f"the expression {_quoted(self.text)} failed: "
                                      f"{_runtime_reason(str(exc))}") from None
            raise CelRuntimeError(f"the expression {_quoted(self.text)} went over the budget "
                                  f"of {ITERATION_BUDGET:,} macro iterations (all, exists, "
                                  "map, filter); filter the data in a step first") from None
        finally:
            _JOBS.reset(token)
        if failed:
            raise CelRuntimeError(f"the expression {_quoted(self.text)} failed: "
                                  f"{_runtime_reason(result)}")
        return result

    def condition(self, context: Mapping[str, Any]) -> bool:
        """``evaluate`` for a ``when:``: the value must be true or false."""
        value = self.evaluate(context)
        if not isinstance(value, bool):
            raise CelRuntimeError(f"the condition {_quoted(self.text)} gave "
                                  f"{kind_of(value)}, not true or false; compare it, "
                                  "e.g. x != '' or size(x) > 0")
        return value


def kind_of(value: Any) -> str:
    """A value's JSON kind, for messages: null, a boolean, a number, text, a list, a map."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "a map"


def _quoted(text: str) -> str:
    return "'" + shown(" ".join(text.split()), 120) + "'"


def _runtime_reason(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "error"
    first = re.sub(r"^[A-Z_]+: ", "", first)
    if "Key not found" in first or "No such key" in first:
        return (f"{shown(first, 100)}; guard a path that may be missing with has(a.b) "
                "or 'b' in a")
    return shown(first, 140)


def _holds_nul(value: Any) -> bool:
    """Whether any text in ``value``, a key or a string, holds U+0000."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(v) for v in value)
    return False


def _fit(value: Any) -> Any:
    """``value`` with every integer outside 64 bits as a double."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -2**63 <= value < 2**63 else float(value)
    if isinstance(value, Mapping):
        return {k: _fit(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_fit(v) for v in value]
    return value


def compile_cel(text: str, scope: Scope = Scope()) -> Program:
    """Compile ``text`` in ``scope`` or raise :class:`ExpressionError` saying where and what."""
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be text, got {type(text).__name__}; "
                              "quote it in the YAML")
    return _compile(text, scope)


@lru_cache(maxsize=2048)
def _compile(text: str, scope: Scope) -> Program:
    if not text.strip():
        raise ExpressionError("the expression is empty; write a condition such as "
                              "\"inputs.env == 'prod'\"")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"the expression is over {MAX_EXPRESSION_CHARS} characters; "
                              "shorten it")
    source = rewrite_dashes(text)
    code = _mask(source)
    macros = len(_MACROS.findall(code))
    inputs: set[str] = set()
    steps: set[str] = set()
    jobs: set[str] = set()
    failed: set[str] = set()
    for read in _ROOT_READ.finditer(source):
        if code[read.start()] == "\0":
            continue
        name = read.group(2) if read.group(2) is not None else read.group(4)
        {"inputs": inputs, "steps": steps, "jobs": jobs}[read.group(1)].add(name)
    for call in _CALL.finditer(source):
        if code[call.start()] == "\0":
            continue
        if call.group(3) is None:
            raise ExpressionError(f"{call.group(1)}() takes one job name in quotes, like "
                                  f"{call.group(1)}('build')")
        jobs.add(call.group(3))
        if call.group(1) == "failed":
            failed.add(call.group(3))
    uses_item = any(code[m.start()] != "\0" for m in _ITEM.finditer(source))
    roots = tuple(sorted({m.group(1) for m in _ROOT.finditer(code)} - {"item"}))
    guarded = set(_HAS_INPUT.findall(code))
    typed = tuple((name, kind) for name, kind in scope.inputs
                  if kind != "dyn" and name not in guarded
                  and re.fullmatch(_NAME, name))
    env = _env(typed, scope.item)
    try:
        compiled = env.compile(source)
    except RuntimeError as exc:
        raise ExpressionError(_column(str(exc))) from None
    return Program(text=text, source=source, result_type=_type_name(compiled),
                   inputs=frozenset(inputs), steps=frozenset(steps), jobs=frozenset(jobs),
                   failed_jobs=frozenset(failed), uses_item=uses_item, macros=macros,
                   roots=roots,
                   typed=tuple(name for name, _ in typed if name in inputs),
                   compiled=compiled)


def _type_name(compiled: Any) -> str:
    name = str(compiled.return_type().name()).lower()
    return {"list<dyn>": "list", "map<string, dyn>": "map"}.get(name, name.split("<")[0])


def compile_old(text: str, *, condition: bool = False) -> Program:
    """An old-language expression of a stored run, as CEL that keeps its old meaning."""
    from reference_engine.workflows.legacy import translate

    source, parsed = translate(text, condition=condition)
    try:
        compiled = _env((), True, True).compile(source)
    except RuntimeError as exc:  # a translation bug, never the user's: say so plainly
        raise ExpressionError(f"the stored expression could not be translated "
                              f"({_column(str(exc))})") from None
    return Program(text=text, source=source, result_type=_type_name(compiled),
                   inputs=parsed.inputs, steps=parsed.steps, jobs=parsed.jobs,
                   failed_jobs=parsed.failed_jobs, uses_item=parsed.uses_item, old=True,
                   roots=tuple(sorted({r for r in _ROOT.findall(source) if r != "item"})),
                   compiled=compiled)
