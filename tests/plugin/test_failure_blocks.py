"""One block per failure: the clause, what the store did, the fix; for an exec: store in
the words of its handshake."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from dw_testing.models.verdicts import created_problem, value_type_problem
from dw_testing.plugin.clauses import clause_titles
from dw_testing.plugin.failure_blocks import (
    FIXES,
    exec_store_names,
    failure_block,
    in_handshake_terms,
    summary_markdown,
)

# Keys as the differential machine names them: anything but quotes and backslashes.
_KEYS = st.text(st.characters(blacklist_characters="'\"\\", blacklist_categories=("Cs",)),
                min_size=1, max_size=12)
_PYTHON_WORDS = re.compile(r"(?<![\w-])(True|False|None)(?![\w-])|\bput_if_absent\b|b''")


def test_every_clause_of_the_contract_has_a_fix_and_every_fix_a_clause() -> None:
    assert set(FIXES) == set(clause_titles())


@given(key=_KEYS, answered=st.booleans(), store=st.sampled_from(["fs_store", "kv"]))
def test_a_create_failure_of_an_exec_store_reads_in_handshake_terms(
    key: str, answered: bool, store: str,
) -> None:
    call = f"put_if_absent({key!r}) on h1"
    reason = "dw_testing.models.differential.ModelMismatch: " + (
        created_problem(answered, not answered, call) or "")
    test = {"nodeid": f"test_store_differential.py::test_x[{store}]", "store": store,
            "outcome": "FAIL", "reason": reason, "clauses": ["C-GET-1", "C-CREATE-1"]}
    block = failure_block(test, handshake=True)
    text = block.text()
    assert block.clause is not None and block.clause.id == ("C-CREATE-1" if answered
                                                           else "C-CREATE-3")
    shown = json.dumps(key, ensure_ascii=False)
    assert f"putIfAbsent({shown}) on h1 returned {str(answered).lower()}" in text
    assert not _PYTHON_WORDS.search(text.replace(shown, "")), text
    assert "ModelMismatch" not in text and "dw_testing." not in text
    assert text.splitlines()[0] == f"FAIL {store}: test_store_differential.py::test_x"
    python = failure_block(test, handshake=False).text()
    assert f"put_if_absent({key!r}) on h1 returned {answered}" in python


def test_a_get_of_the_wrong_type_names_a_uint8array_or_null_for_an_exec_store() -> None:
    reason = value_type_problem(bytearray(b"x"), "get('a') on h1")
    assert reason is not None
    block = failure_block({"store": "s", "nodeid": "t", "outcome": "FAIL", "reason": reason,
                           "clauses": []}, handshake=True)
    assert 'get("a") on h1 must return a Uint8Array or null' in block.what
    assert "new Uint8Array(...)" in block.what
    assert block.fix.startswith("return the whole record as a Uint8Array, an empty "
                                "Uint8Array for an empty record, and null only")


def test_a_bare_assertion_is_told_as_the_check_that_failed() -> None:
    block = failure_block({"store": "s", "nodeid": "t[s]", "outcome": "FAIL",
                           "reason": "AssertionError: assert True is False",
                           "clauses": ["C-CREATE-1"]}, handshake=True)
    assert block.what == ("the store's answers broke the clause (the check that failed: "
                          "assert true is false)")
    assert block.test == "t"


def test_in_handshake_terms_keeps_words_that_only_contain_python_names() -> None:
    assert in_handshake_terms("If-None-Match: * or None") == "If-None-Match: * or null"


def test_exec_stores_are_named_as_the_report_names_them() -> None:
    assert exec_store_names(["exec:deno run -A fs_store.ts /tmp/x", "memory://",
                             "exec:node dist/kv.js"]) == {"fs_store", "kv"}


def test_the_summary_holds_the_matrix_then_one_block_per_failure() -> None:
    block = failure_block({"store": "s", "nodeid": "t[s]", "outcome": "FAIL",
                           "reason": "C-DEL-1: delete of a missing key raised",
                           "clauses": []}, handshake=False)
    text = summary_markdown("| capability | s |", [block])
    assert text.index("| capability | s |") < text.index("## What to fix")
    assert "[C-DEL-1](docs/contract.md#c-del-1)" in text
    assert "- fix: delete the record and treat a missing key as done" in text
    assert "What to fix" not in summary_markdown("| m |", [])
