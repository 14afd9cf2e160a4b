"""docs/how-to/read-a-history-failure.md shows the checker's real output: its examples are
regenerated here."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from history_calls import TORN_READ, create, delete, get

from dw_testing.history import HistoryViolation, assert_linearizable
from dw_testing.history.events import Operation
from dw_testing.history.timeline import render_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "read-a-history-failure.md"
DELETED_READ = [create("A", b"v1", True, 0, 1), delete("B", 2, 3), get("C", b"v1", 4, 5)]


def blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return [re.sub(r"(?m)^  ", "", body) if indent else body
            for indent, body in re.findall(r"(?ms)^( *)```text\n(.*?)^\1```", text)]


def message(history: list[Operation]) -> str:
    with pytest.raises(HistoryViolation) as caught:
        assert_linearizable(history)
    return str(caught.value)


@pytest.fixture(autouse=True)
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))


@pytest.mark.parametrize("history", [TORN_READ, DELETED_READ], ids=["torn read", "deleted"])
def test_the_documented_failure_is_what_the_checker_prints(history: list[Operation]) -> None:
    assert message(history) + "\n" in blocks(), (
        "docs/how-to/read-a-history-failure.md shows an out-of-date failure; paste the "
        "message above into it")


def test_the_documented_ascii_timeline_is_what_render_text_draws() -> None:
    drawn = render_text(TORN_READ, marked=[1], width=100, ascii=True)
    assert drawn + "\n" in blocks(), (
        "docs/how-to/read-a-history-failure.md shows an out-of-date ASCII timeline; paste the "
        "drawing above into it")
