"""One block per failure, in the store's terms and without Python frames.

``dw conformance`` prints these after the capability table, writes them to a job summary,
and ``pytest --dw-failures=blocks`` prints them at the end of a run. A block names the
clause the failure breaks, what the store did (from the test's own message), what the
contract allows (the clause's sentence) and the fix. For a store served over ``exec:``, the
words are its handshake's: ``putIfAbsent``, ``true``/``false``, ``null``, ``Uint8Array``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dw_testing.plugin.catalogue.providers import exec_name
from dw_testing.plugin.clauses import Clause, clause_titles

CONTRACT_PAGE = "docs/contract.md"
_FAILING = ("FAIL", "UNKNOWN")
# An exception's name ahead of its message (``AssertionError: ``, a dotted path too).
_EXCEPTION_PREFIX = re.compile(r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Mismatch|"
                               r"Violation|Failed|Exit)?: ")
_LEADING_CLAUSE = re.compile(r"^(C-[A-Z]+-\d+): ")
_BARE_ASSERT = re.compile(r"^assert .*$")

# What to change in the store, per clause: the sentence the block ends with.
FIXES: Mapping[str, str] = {
    "C-KEY-1": "check the key before any I/O (checkKey in the shim) and raise InvalidKey "
               "for a broken one; accept every key the rules allow, up to 1024 bytes",
    "C-KEY-2": "compare and store keys by their exact code points: no case folding, "
               "Unicode normalisation, trimming or decoding on the way to the backend",
    "C-KEY-3": "keep a and a/b as two records: map a key's segments so that a name and a "
               "directory of the same name can coexist",
    "C-VAL-1": "store the value as raw bytes of any length up to 1 MiB, never through a "
               "string; or declare large_values = false",
    "C-GET-1": "return the whole record as bytes, b'' for an empty record, and None only "
               "when no record exists",
    "C-PUT-1": "write to a temporary object and rename or swap it into place, so a reader "
               "sees the old bytes or the new, never a mix",
    "C-DEL-1": "delete the record and treat a missing key as done, not as an error",
    "C-LAST-1": "keep every record until it is deleted: no expiry, eviction or time to live "
                "on the backend (a cache's default TTL included)",
    "C-LIST-3": "return every key that starts with the prefix, whole, each once, and "
                "nothing else",
    "C-LIST-4": "match a bare prefix on whole segments, or stop declaring segment_prefixes",
    "C-LIST-5": "sort by code point (sorted() in Python, byCodePoint in the shim), or stop "
                "declaring sorted_list",
    "C-CREATE-1": "create with one atomic step that fails when the key exists (a hard link, "
                  "O_EXCL, If-None-Match: *, INSERT without REPLACE) and answer False "
                  "when it fails, True when it wrote",
    "C-CREATE-2": "decide the create in the backend in one atomic step; a check followed by "
                  "a write lets every racer win",
    "C-CREATE-3": "answer True to the call whose write created the record",
    "C-CREATE-4": "make the record whole before it becomes visible: write it elsewhere, "
                  "then link or swap it in",
    "C-CREATE-5": "let a create succeed on a key whose record was deleted (clear any "
                  "tombstone or cached existence)",
    "C-CREATE-6": "retry a backend's conflict inside the store, and raise "
                  "TransientStoreError when you give up; never answer False for it",
    "C-LOST-1": "nothing in the store: the suite treats a call that did not answer as "
                "maybe applied",
    "C-HANDLE-1": "drop per-handle caches, or make every handle read the backend; or "
                  "declare cross_handle = false",
    "C-HANDLE-2": "make the handle safe for concurrent calls: no shared mutable state "
                  "between a check and a write, one lock around any client that is not",
    "C-HANDLE-3": "keep records across close and reopen, or stop declaring durable_reopen",
    "C-ERR-1": "raise InvalidKey, TransientStoreError, StoreUnavailable or StoreError "
               "(errors named so in the shim), with the operation and the key",
    "C-ERR-2": "map the backend's own exceptions to the store's error classes; retry busy "
               "or throttled calls inside the store and raise TransientStoreError on giving up",
    "C-CAP-1": "declare only the capabilities the store keeps",
    "C-CAP-2": "offer put_if_absent (putIfAbsent), or accept runs without waits",
    "C-CHILD-1": "make the store open from its command line or URI alone, sharing the "
                 "records of every other process; or stop declaring cross_process",
    "C-ENGINE-1": "keep the store clauses above: the engine relies on nothing else",
    "C-ENGINE-2": "fix the store clauses the same run fails; this engine test fails because "
                  "of them",
}

# Python words and their dw-store/1 handshake words, for a store served over exec:.
_HANDSHAKE_WORDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), word) for pattern, word in (
        (r"\bput_if_absent\b", "putIfAbsent"),
        (r"\bbytes or None\b", "a Uint8Array or null"),
        (r"\bas bytes\b", "as a Uint8Array"),
        (r"\bbytes\(\.\.\.\)", "new Uint8Array(...)"),
        (r"\bb''", "an empty Uint8Array"),
        (r"\ba list of str\b", "a string[]"),
        (r"\bsorted\(\)", "byCodePoint"),
        (r"\ba bool\b", "a boolean"),
        (r"(?<![\w-])True(?![\w-])", "true"),
        (r"(?<![\w-])False(?![\w-])", "false"),
        (r"(?<![\w-])None(?![\w-])", "null"),
    ))
_JSON_STRING = re.compile(r'("(?:[^"\\]|\\.)*")')
# A Python string literal as a call's argument: put('a/b') -> put("a/b"), as JSON spells it.
_CALL_ARGUMENT = re.compile(r"\(('(?:[^'\\]|\\.)*')")


def _as_json_string(literal: str) -> str:
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else literal


@dataclass(frozen=True)
class FailureBlock:
    """One failing test, told as what the store did and what to change."""

    store: str
    test: str
    outcome: str
    clause: Clause | None
    what: str
    fix: str

    def text(self) -> str:
        lines = [f"{self.outcome} {self.store}: {self.test}"]
        if self.clause is not None:
            lines.append(f"  clause   {self.clause.id}: {self.clause.title}")
        lines.append(f"  what     {self.what}")
        if self.fix:
            lines.append(f"  fix      {self.fix}")
        if self.clause is not None:
            lines.append(f"  read     {CONTRACT_PAGE}#{self.clause.anchor}")
        return "\n".join(lines)

    def markdown(self) -> str:
        head = f"**{self.outcome}** `{self.store}`: `{self.test}`"
        rows = []
        if self.clause is not None:
            rows.append(f"- clause: [{self.clause.id}]({CONTRACT_PAGE}#{self.clause.anchor}): "
                        f"{self.clause.title}")
        rows.append(f"- what: {_md(self.what)}")
        if self.fix:
            rows.append(f"- fix: {_md(self.fix)}")
        return "\n".join([head, "", *rows])


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def in_handshake_terms(text: str) -> str:
    """Python's words for a call and its answer, as a ``dw-store/1`` store sees them."""
    text = _CALL_ARGUMENT.sub(lambda m: "(" + _as_json_string(m.group(1)), text)
    # Words inside a quoted key stay as the store received them: a key "False" is not false.
    pieces = _JSON_STRING.split(text)
    for index in range(0, len(pieces), 2):
        for pattern, word in _HANDSHAKE_WORDS:
            pieces[index] = pattern.sub(word, pieces[index])
    return "".join(pieces)


# The judge's note before a failing test's own message: "[C-X judged: <the call>] ...".
_JUDGED = re.compile(r"^\[(C-[A-Z]+-\d+) judged: (.*?)\] ")


def _what(reason: str) -> tuple[str | None, str]:
    """The message without its exception's name; the clause it leads with, if any. A
    judged cause comes first: its clause, then the wrong answer, then what the test saw."""
    judged = _JUDGED.match(reason.strip())
    if judged is not None:
        _, saw = _what(reason.strip()[judged.end():])
        return judged.group(1), f"{judged.group(2)}; then the test saw: {saw}"
    first = reason.strip()
    while True:
        stripped = _EXCEPTION_PREFIX.sub("", first, count=1)
        if stripped == first:
            break
        first = stripped
    lead = _LEADING_CLAUSE.match(first)
    clause = lead.group(1) if lead else None
    if lead:
        first = first[lead.end():]
    if _BARE_ASSERT.match(first) or first.startswith("DID NOT RAISE"):
        first = f"the store's answers broke the clause (the check that failed: {first})"
    return clause, first


def failure_block(test: Mapping[str, Any], *, handshake: bool,
                  titles: Mapping[str, str] | None = None) -> FailureBlock:
    """The block for one failing test of a report."""
    known = clause_titles() if titles is None else titles
    leading, what = _what(str(test.get("reason") or test.get("message") or "failed"))
    cited = [c for c in test.get("clauses") or [] if c in known]
    blamed = leading if leading in known else (cited[0] if cited else None)
    clause = Clause(blamed, known[blamed]) if blamed is not None else None
    fix = FIXES.get(blamed or "", "")
    store = str(test.get("store", ""))
    name = str(test.get("nodeid", "")).removesuffix(f"[{store}]")
    if handshake:
        what, fix = in_handshake_terms(what), in_handshake_terms(fix)
        if clause is not None:
            clause = Clause(clause.id, in_handshake_terms(clause.title))
    return FailureBlock(store=store, test=name,
                        outcome=str(test.get("outcome", "FAIL")), clause=clause, what=what,
                        fix=fix)


def failure_blocks(report: Mapping[str, Any],
                   exec_stores: Collection[str] = ()) -> list[FailureBlock]:
    """A block per FAIL or UNKNOWN test; ``exec_stores`` are told in handshake terms."""
    titles = clause_titles()
    # The report names the exec: stores by their handshake's name (what --store said may not).
    exec_stores = {*exec_stores, *(report.get("exec_stores") or [])}
    # A store that could not be opened failed every test on that one error, told once
    # (setup_error_lines), not once a test under each test's clauses.
    unopened = set(report.get("setup_errors") or {})
    return [failure_block(test, handshake=test.get("store") in exec_stores, titles=titles)
            for test in report.get("tests", []) if test.get("outcome") in _FAILING
            and not (test.get("store") in unopened
                     and "could not be opened" in str(test.get("message", "")))]


def setup_error_lines(report: Mapping[str, Any]) -> list[str]:
    """Markdown for the stores that could not be opened: the error, whole, once each."""
    lines: list[str] = []
    for store, message in (report.get("setup_errors") or {}).items():
        lines += [f"## `{store}` could not be opened", "",
                  "Every test of this store failed on it:", "", "```", *message.splitlines(),
                  "```", ""]
    return lines


def exec_store_names(stores: Iterable[str]) -> set[str]:
    """The report names of the ``exec:`` stores among ``--store`` values."""
    return {exec_name(store.removeprefix("exec:")) for store in stores
            if store.startswith("exec:")}


def summary_markdown(matrix: str, blocks: Iterable[FailureBlock]) -> str:
    """The job summary: the capability matrix, then what is wrong, one block per failure."""
    told = list(blocks)
    parts = [matrix.rstrip(), ""]
    if told:
        parts += ["## What to fix", ""]
        for block in told:
            parts += [block.markdown(), ""]
    return "\n".join(parts)
