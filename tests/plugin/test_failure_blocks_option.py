"""``--dw-failures=blocks``: no tracebacks, and one block per failure at the end."""

from __future__ import annotations

import pytest

FAILING = """
import pytest

@pytest.mark.dw_clause("C-GET-1")
def test_reads_back(dw_store):
    dw_store.put("k", b"")
    assert dw_store.get("k") is None, "an empty record read as b''; this test wants None"
"""


@pytest.mark.parametrize("style", ["blocks", "pytest"])
def test_blocks_replace_the_traceback_with_the_clause_and_the_fix(
    pytester: pytest.Pytester, style: str,
) -> None:
    pytester.makepyfile(test_blocks=FAILING)
    result = pytester.runpytest("-q", "test_blocks.py", "--dw-store=memory",
                                f"--dw-failures={style}", "--dw-profile=quick")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    shown = "  clause   C-GET-1: `get` returns the whole record or `None`." in output
    assert shown is (style == "blocks"), output
    if style == "blocks":
        assert "dw-testing: what to fix" in output
        assert "  fix      return the whole record as bytes" in output
        assert "def test_reads_back" not in output  # no traceback, no source
    else:
        assert "def test_reads_back" in output
