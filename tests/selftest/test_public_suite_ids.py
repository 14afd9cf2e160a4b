"""Suite test ids are public: users' known-deviation entries and reports match them.

``public_suite_ids.txt`` lists every id a release has shipped (store part of the parameter
left out). A rename or removal fails here; keep the old id, or add an alias with a
deprecation warning and a CHANGELOG entry, then update the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dw_testing.plugin.deviations import RENAMED_TESTS, renamed

LEDGER = Path(__file__).with_name("public_suite_ids.txt")


def renamed_id(test: str) -> str:
    """The id a renamed test now has (an alias in ``RENAMED_TESTS``), else ``test``."""
    module, _, name = test.partition("::")
    function, bracket, params = name.partition("[")
    return f"{module}::{RENAMED_TESTS.get(function, function)}{bracket}{params}"


def _collected(pytester: pytest.Pytester) -> set[str]:
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider",
                                           "--dw-store=memory", "--dw-suite-only")
    ids = set()
    for line in result.outlines:
        if "::" not in line:
            continue
        test = line.rpartition("conformance/")[2]
        ids.add(test.replace("[memory]", "").replace("-memory]", "]").replace("[memory-", "["))
    return ids


def test_no_public_suite_id_disappears(pytester: pytest.Pytester) -> None:
    shipped = set(LEDGER.read_text(encoding="utf-8").split())
    collected = _collected(pytester)
    assert collected, "the suite collected nothing; the check could not run"
    gone = sorted(test for test in shipped - collected if renamed_id(test) not in collected)
    assert not gone, (
        "suite tests users may name in known deviations disappeared: " + ", ".join(gone)
        + "; keep their ids, or alias them for a release and record it in CHANGELOG.md")


def test_a_deviation_naming_a_renamed_test_matches_its_new_name_with_a_warning() -> None:
    from dw_testing.plugin.deviations import from_pyproject
    old, new = next(iter(RENAMED_TESTS.items()))
    entry = {"store": "mine", "test": f"conformance.test_engine_crashes::{old}[*]",
             "reference": "https://example.invalid/1", "reason": "r"}
    with pytest.warns(DeprecationWarning, match=new):
        (parsed,) = from_pyproject([entry])
    assert parsed.test == f"conformance.test_engine_crashes::{new}[*]"
    assert renamed("conformance.test_store_list::*") == "conformance.test_store_list::*"
