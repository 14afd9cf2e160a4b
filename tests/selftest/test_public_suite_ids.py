"""Suite test ids are public: users' known-deviation entries and reports match them.

``public_suite_ids.txt`` lists every id a release has shipped (store part of the parameter
left out). A rename or removal fails here; keep the old id, or add an alias with a
deprecation warning and a CHANGELOG entry, then update the list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

LEDGER = Path(__file__).with_name("public_suite_ids.txt")


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
    gone = sorted(shipped - collected)
    assert not gone, (
        "suite tests users may name in known deviations disappeared: " + ", ".join(gone)
        + "; keep their ids, or alias them for a release and record it in CHANGELOG.md")
