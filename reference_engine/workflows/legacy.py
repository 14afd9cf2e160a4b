"""The old expression language, read only to keep a stored run's meaning: translated to CEL.

Before CEL (docs/reference/expressions.md), ``when:``, ``for_each:`` and ``${{ }}`` held a
small language of their own. A run suspended under it stores its workflow without the
``expressions: cel`` marker; on resume the loader translates each of its expressions here
into CEL that keeps the old meaning exactly, through three functions only such snapshots
can reach: ``dw_old_path`` (a missing path, or one that walks into the wrong kind, is
null), ``dw_old_truthy`` (JSON truthiness) and ``dw_old_eq`` (JSON equality, ``true != 1``).
The old grammar, loosest binding first::

    expr    := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | compare
    compare := primary (('==' | '!=') primary)?
    primary := literal | '(' expr ')' | call | path
    call    := ('failed' | 'succeeded') '(' 'job-name' ')'
    path    := root ('.' name | '[' 'text' ']' | '[' integer ']')*

:func:`cel_form` gives a person the CEL spelling of an old expression, for the loader's
refusal of a new workflow file still written the old way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from reference_engine.workflows.errors import WorkflowError

MAX_EXPRESSION_CHARS = 2000
MAX_NESTING = 40
ROOTS = ("inputs", "steps", "jobs", "item")
FUNCTIONS = ("failed", "succeeded")
_KEYWORDS = {"and", "or", "not", "true", "false", "null"}
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}


class ExpressionError(WorkflowError):
    """An old expression does not parse."""


Node = tuple[Any, ...]


@dataclass(frozen=True)
class Expression:
    """A parsed old expression and what it reads."""

    text: str
    node: Node = field(repr=False)
    inputs: frozenset[str] = frozenset()  # names read as inputs.<name>
    steps: frozenset[str] = frozenset()  # names read as steps.<name> (may be 's[0]')
    jobs: frozenset[str] = frozenset()  # jobs read by failed()/succeeded()/jobs.<name>
    uses_item: bool = False  # reads ``item`` (only valid inside a for_each step)
    failed_jobs: frozenset[str] = frozenset()  # jobs named by failed(): a handled failure


# ---------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class _Token:
    kind: str  # ident, string, number, op, end
    value: Any
    pos: int


def _is_name_start(ch: str) -> bool:
    return ch.isascii() and (ch.isalpha() or ch == "_")


def _is_name_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch in "_-")


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif text.startswith(("==", "!="), i):
            tokens.append(_Token("op", text[i:i + 2], i))
            i += 2
        elif ch in "().[]":
            tokens.append(_Token("op", ch, i))
            i += 1
        elif ch in "'\"":
            start = i
            text_value, i = _read_string(text, i)
            tokens.append(_Token("string", text_value, start))
        elif ch.isascii() and (ch.isdigit() or (ch == "-" and i + 1 < n and text[i + 1].isdigit())):
            start = i
            number, i = _read_number(text, i)
            tokens.append(_Token("number", number, start))
        elif _is_name_start(ch):
            start = i
            while i < n and _is_name_char(text[i]):
                i += 1
            tokens.append(_Token("ident", text[start:i], start))
        else:
            shown = f"'{ch}' " if ch.isascii() and ch.isprintable() else ""
            raise ExpressionError(
                f"unexpected character {shown}at position {i + 1}; expressions use names, "
                "quoted text, numbers, ==, !=, and, or, not and parentheses")
    tokens.append(_Token("end", None, n))
    return tokens


def _read_string(text: str, start: int) -> tuple[str, int]:
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\":
            nxt = text[i + 1] if i + 1 < len(text) else ""
            if nxt not in _ESCAPES:
                raise ExpressionError(
                    f"unknown escape in the text starting at position {start + 1}; "
                    "use \\\\, \\', \\\", \\n or \\t")
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(ch)
            i += 1
    raise ExpressionError(f"the text starting at position {start + 1} is never closed; "
                          f"end it with {quote}")


def _read_number(text: str, start: int) -> tuple[int | float, int]:
    i = start + 1
    while i < len(text) and (text[i].isascii() and (text[i].isalnum() or text[i] in ".+-")):
        # a number runs to the next separator; 1e+5 needs the sign, the rest is checked below
        if text[i] in "+-" and text[i - 1] not in "eE":
            break
        i += 1
    raw = text[start:i]
    try:
        value: int | float = int(raw) if raw.lstrip("-").isdigit() else float(raw)
    except ValueError:
        value = math.nan
    if len(raw) > 40 or (isinstance(value, float) and not math.isfinite(value)):
        raise ExpressionError(f"the number at position {start + 1} is not a plain finite "
                              "number; write e.g. 3, -2 or 0.5")
    return value, i


# ---------------------------------------------------------------------------- parser


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.at = 0
        self.depth = 0
        self.inputs: set[str] = set()
        self.steps: set[str] = set()
        self.jobs: set[str] = set()
        self.uses_item = False
        self.failed_jobs: set[str] = set()

    @property
    def tok(self) -> _Token:
        return self.tokens[self.at]

    def take(self) -> _Token:
        tok = self.tokens[self.at]
        self.at += 1
        return tok

    def is_op(self, op: str) -> bool:
        return self.tok.kind == "op" and self.tok.value == op

    def is_word(self, word: str) -> bool:
        return self.tok.kind == "ident" and self.tok.value == word

    def expect_op(self, op: str, what: str) -> None:
        if not self.is_op(op):
            raise self.error(f"expected '{op}' {what}")
        self.take()

    def error(self, what: str) -> ExpressionError:
        tok = self.tok
        found = "the end" if tok.kind == "end" else f"position {tok.pos + 1}"
        return ExpressionError(f"{what} at {found}")

    def parse(self) -> Node:
        node = self.parse_or()
        if self.tok.kind != "end":
            raise self.error("unexpected extra input (join conditions with 'and' or 'or')")
        return node

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"the expression nests deeper than {MAX_NESTING} levels")

    def parse_or(self) -> Node:
        self.nested()
        node = self.parse_and()
        while self.is_word("or"):
            self.take()
            node = ("or", node, self.parse_and())
        self.depth -= 1
        return node

    def parse_and(self) -> Node:
        node = self.parse_not()
        while self.is_word("and"):
            self.take()
            node = ("and", node, self.parse_not())
        return node

    def parse_not(self) -> Node:
        if self.is_word("not"):
            self.take()
            self.nested()
            inner = self.parse_not()
            self.depth -= 1
            return ("not", inner)
        return self.parse_compare()

    def parse_compare(self) -> Node:
        left = self.parse_primary()
        if self.is_op("==") or self.is_op("!="):
            op = "eq" if self.take().value == "==" else "ne"
            right = self.parse_primary()
            if self.is_op("==") or self.is_op("!="):
                raise self.error("comparisons do not chain; use 'and' between them")
            return (op, left, right)
        return left

    def parse_primary(self) -> Node:
        tok = self.tok
        if tok.kind in ("string", "number"):
            self.take()
            return ("lit", tok.value)
        if self.is_op("("):
            self.take()
            node = self.parse_or()
            self.expect_op(")", "to close the parenthesis")
            return node
        if tok.kind == "ident":
            word = tok.value
            if word in ("true", "false", "null"):
                self.take()
                return ("lit", {"true": True, "false": False, "null": None}[word])
            if word in FUNCTIONS:
                return self.parse_call()
            if word in ROOTS:
                return self.parse_path()
            if word in _KEYWORDS:
                raise self.error(f"'{word}' needs a value on its left")
            raise self.error(
                f"unknown name '{word[:40]}'; a path starts with inputs, steps, jobs or item, "
                "and the functions are failed('job') and succeeded('job')")
        if tok.kind == "end":
            raise self.error("expected a value")
        raise self.error(f"unexpected '{tok.value}'")

    def parse_call(self) -> Node:
        name = self.take().value
        self.expect_op("(", f"after {name}")
        if self.tok.kind != "string":
            raise self.error(f"{name}() takes one job name in quotes, like {name}('build')")
        job = self.take().value
        self.expect_op(")", f"to close {name}(...)")
        self.jobs.add(job)
        if name == "failed":
            self.failed_jobs.add(job)
        return ("call", name, job)

    def parse_path(self) -> Node:
        root = self.take().value
        segments: list[str | int] = []
        while True:
            if self.is_op("."):
                self.take()
                if self.tok.kind != "ident":
                    raise self.error("expected a name after '.'")
                segments.append(self.take().value)
            elif self.is_op("["):
                self.take()
                tok = self.tok
                if tok.kind == "string" or (tok.kind == "number" and isinstance(tok.value, int)
                                            and tok.value >= 0):
                    segments.append(self.take().value)
                else:
                    raise self.error("a subscript takes quoted text or a whole number, like "
                                     "['name[0]'] or [0]")
                self.expect_op("]", "to close the subscript")
            else:
                break
        if root == "item":
            self.uses_item = True
        elif segments and isinstance(segments[0], str):
            {"inputs": self.inputs, "steps": self.steps, "jobs": self.jobs}[root].add(segments[0])
        return ("path", root, tuple(segments))


def parse_old(text: str) -> Expression:
    """Parse old-language ``text`` or raise :class:`ExpressionError`."""
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be text, got {type(text).__name__}; "
                              "quote it in the YAML")
    return _compile(text)


@lru_cache(maxsize=512)
def _compile(text: str) -> Expression:
    if not text.strip():
        raise ExpressionError("the expression is empty; write a condition such as "
                              "\"inputs.env == 'prod'\"")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"the expression is over {MAX_EXPRESSION_CHARS} characters; "
                              "shorten it")
    parser = _Parser(text)
    node = parser.parse()
    return Expression(text, node, frozenset(parser.inputs), frozenset(parser.steps),
                      frozenset(parser.jobs), parser.uses_item, frozenset(parser.failed_jobs))


# ---------------------------------------------------------------------------- to CEL


def _literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and -2**63 <= value < 2**63:
        return str(value)
    if isinstance(value, int):  # past CEL's 64 bits: a double, as JSON would read it
        value = float(value)
    if isinstance(value, float):
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    return json.dumps(value, ensure_ascii=False)


def _to_cel(node: Node) -> str:
    """The CEL that evaluates ``node`` with the old rules (through the dw_old_* functions)."""
    kind = node[0]
    if kind == "lit":
        return _literal(node[1])
    if kind == "path":
        return "dw_old_path([" + ", ".join([node[1], *(_literal(s) for s in node[2])]) + "])"
    if kind == "call":
        return f"{node[1]}({_literal(node[2])})"
    if kind == "not":
        return f"!{_truthy(node[1])}"
    if kind in ("and", "or"):
        op = " && " if kind == "and" else " || "
        return "(" + _truthy(node[1]) + op + _truthy(node[2]) + ")"
    pair = f"dw_old_eq([{_to_cel(node[1])}, {_to_cel(node[2])}])"
    return pair if kind == "eq" else f"!{pair}"


def _truthy(node: Node) -> str:
    if node[0] in ("not", "and", "or", "eq", "ne", "call"):
        return _to_cel(node)  # already a boolean
    return f"dw_old_truthy([{_to_cel(node)}])"


def translate(text: str, *, condition: bool = False) -> tuple[str, Expression]:
    """Old ``text`` as CEL with the old meaning, and what it reads.

    ``condition``: the text is a ``when:``, whose value was JSON truthiness.
    """
    parsed = parse_old(text)
    return (_truthy(parsed.node) if condition else _to_cel(parsed.node)), parsed


def cel_form(text: str) -> str | None:
    """How a person writes old ``text`` in CEL (``and`` -> ``&&``...), or None if not old."""
    try:
        tokens = _tokenize(text)
        parse_old(text)
    except WorkflowError:
        return None
    out: list[str] = []
    for tok in tokens[:-1]:
        if tok.kind == "ident" and tok.value in ("and", "or"):
            out.append(" && " if tok.value == "and" else " || ")
        elif tok.kind == "ident" and tok.value == "not":
            out.append("!")
        elif tok.kind == "op" and tok.value in ("==", "!="):
            out.append(f" {tok.value} ")
        elif tok.kind in ("string", "number"):
            out.append(_literal(tok.value).replace('"', "'") if tok.kind == "string"
                       and "'" not in tok.value and '"' not in tok.value
                       else _literal(tok.value))
        else:
            out.append(str(tok.value))
    return "".join(out).strip()


# ---------------------------------------------------------------------------- the old rules


def old_path(parts: list[Any]) -> Any:
    """``dw_old_path([root, segment...])``: null where the path is missing or of a wrong kind."""
    value = parts[0] if parts else None
    for segment in parts[1:]:
        if isinstance(segment, str) and isinstance(value, Mapping):
            value = value.get(segment)
        elif isinstance(segment, int) and not isinstance(segment, bool) \
                and isinstance(value, list):
            value = value[segment] if 0 <= segment < len(value) else None
        else:
            return None
    return value


def old_truthy(parts: list[Any]) -> bool:
    """``dw_old_truthy([x])``: null, false, 0, "", [] and {} are false."""
    value = parts[0] if parts else None
    if value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (str, list, Mapping)):
        return len(value) > 0
    return True


def old_eq(parts: list[Any]) -> bool:
    """``dw_old_eq([a, b])``: JSON equality (booleans are not numbers, 1 == 1.0)."""
    return _json_equal(parts[0], parts[1]) if len(parts) == 2 else False


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    return bool(a == b)
