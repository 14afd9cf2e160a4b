"""A result of the wrong type is labelled by its type, never shown as a bool or as '-'."""

from __future__ import annotations

from dw_testing.history.events import Operation
from dw_testing.history.labels import call_label, result_text


def test_a_memoryview_read_is_labelled_by_its_type_not_by_a_dash() -> None:
    read = Operation("A", "get", "k", None, memoryview(b"v"), 0, 1)  # type: ignore[arg-type]
    assert result_text(read) == "memoryview (not bytes)"
    assert "memoryview" in call_label(read)


def test_a_create_answering_none_is_not_shown_as_false() -> None:
    create = Operation("A", "put_if_absent", "k", b"v", None, 0, 1)
    assert result_text(create) == "NoneType (not a bool)"
    assert "False" not in call_label(create)


def test_real_answers_keep_their_labels() -> None:
    assert result_text(Operation("A", "put_if_absent", "k", b"v", True, 0, 1)) == "True"
    assert result_text(Operation("A", "get", "k", None, None, 0, 1)) == "None"
    assert result_text(Operation("A", "get", "k", None, b"ab", 0, 1)).endswith("(2B)")
