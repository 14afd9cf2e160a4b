"""get, put, delete, values and handles (C-GET-1, C-PUT-1, C-DEL-1, C-VAL-1,
C-HANDLE-1, C-HANDLE-3), and no partial record (C-CREATE-4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dw_testing.kit.listing import listed
from dw_testing.kit.together import observe_while
from dw_testing.models.verdicts import bytes_difference
from reference_engine.stores.contract import close_store

pytestmark = pytest.mark.dw_store_contract

MIB = 1024 * 1024
SMALL_LARGE = 64 * 1024


def _large_size(caps: dict[str, bool]) -> int:
    return MIB if caps["large_values"] else SMALL_LARGE


def _every_byte(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) + bytes(range(size % 256))


def _describer(**known: bytes | None) -> Callable[[bytes | None], str]:
    def describe(value: bytes | None) -> str:
        for name, expected in known.items():
            if value == expected:
                return name
        return "empty" if value == b"" else f"other ({len(value or b'')} bytes)"
    return describe


@pytest.mark.dw_clause("C-GET-1")
def test_missing_key_reads_none_and_an_empty_record_reads_empty_bytes(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    assert dw_store.get("never/written") is None
    dw_store.put("empty/by-put", b"")
    assert dw_store.get("empty/by-put") == b"", "an empty record must read as b'', not None"
    if dw_caps["put_if_absent"]:
        assert dw_store.put_if_absent("empty/by-create", b"") is True
        assert dw_store.get("empty/by-create") == b""
        assert dw_store.put_if_absent("empty/by-create", b"x") is False


@pytest.mark.dw_clause("C-VAL-1")
@pytest.mark.dw_requires("large_values")
def test_values_up_to_one_mebibyte_round_trip_byte_for_byte(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    value = _every_byte(MIB)
    dw_store.put("large/put", value)
    # Compared by hand: pytest's own explanation would print the two 1 MiB values.
    problem = bytes_difference(dw_store.get("large/put"), value)
    if problem:
        pytest.fail(f"a 1 MiB put did not read back whole: {problem}", pytrace=False)
    if dw_caps["put_if_absent"]:
        assert dw_store.put_if_absent("large/create", value[::-1]) is True
        problem = bytes_difference(dw_store.get("large/create"), value[::-1])
        if problem:
            pytest.fail(f"a 1 MiB create did not read back whole: {problem}", pytrace=False)


@pytest.mark.dw_clause("C-CREATE-4")
@pytest.mark.dw_requires("put_if_absent")
def test_a_reader_during_a_large_create_sees_nothing_or_the_whole_record(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    whole = b"c" * _large_size(dw_caps)
    seen = observe_while(
        lambda: dw_store.get("growing/record"),
        lambda: dw_store.put_if_absent("growing/record", whole),
        _describer(none=None, whole=whole),
    )
    assert set(seen) <= {"none", "whole"}, (
        f"a reader saw {dict(seen)} during a create; only 'none' or 'whole' is allowed: "
        "write the record aside and move it into place (e.g. temp file + os.link)"
    )
    assert seen["whole"] >= 1


@pytest.mark.dw_clause("C-PUT-1")
def test_a_reader_during_a_large_put_sees_the_old_or_the_new_record_whole(
    dw_store: Any, dw_caps: dict[str, bool],
) -> None:
    size = _large_size(dw_caps)
    old, new = b"o" * size, b"n" * (size - 1000)
    dw_store.put("replaced/record", old)
    seen = observe_while(
        lambda: dw_store.get("replaced/record"),
        lambda: dw_store.put("replaced/record", new),
        _describer(old=old, new=new),
    )
    assert set(seen) <= {"old", "new"}, (
        f"a reader saw {dict(seen)} during a put; put must replace atomically "
        "(e.g. temp file + os.replace)"
    )
    assert dw_store.get("replaced/record") == new


@pytest.mark.dw_clause("C-DEL-1")
def test_delete_removes_the_record_and_deleting_a_missing_key_is_no_error(
    dw_store: Any,
) -> None:
    dw_store.put("gone/soon", b"x")
    dw_store.delete("gone/soon")
    assert dw_store.get("gone/soon") is None
    assert dw_store.list("gone/") == []
    dw_store.delete("gone/soon")
    dw_store.delete("never/there")


@pytest.mark.dw_clause("C-HANDLE-1")
@pytest.mark.dw_requires("cross_handle")
def test_a_write_on_one_handle_is_read_at_once_on_another(
    dw_store: Any, dw_open_handle: Callable[[], Any], dw_caps: dict[str, bool],
) -> None:
    other = dw_open_handle()
    # The other handle reads first, so a handle that caches its reads is caught.
    assert other.get("shared/k") is None
    dw_store.put("shared/k", b"v1")
    assert other.get("shared/k") == b"v1", "a put was not visible on a second handle"
    dw_store.put("shared/k", b"v2")
    assert other.get("shared/k") == b"v2", "a replacing put was not visible on a second handle"
    dw_store.delete("shared/k")
    assert other.get("shared/k") is None, "a delete was not visible on a second handle"
    assert other.list("shared/") == []
    if dw_caps["put_if_absent"]:
        assert other.get("shared/created") is None
        assert dw_store.put_if_absent("shared/created", b"c") is True
        assert other.get("shared/created") == b"c", "a create was not visible on a second handle"
        assert other.put_if_absent("shared/created", b"d") is False


@pytest.mark.dw_clause("C-HANDLE-3")
@pytest.mark.dw_requires("durable_reopen")
def test_records_survive_closing_the_handles_and_opening_a_new_one(
    dw_open_handle: Callable[[], Any], dw_caps: dict[str, bool],
) -> None:
    writer = dw_open_handle()
    writer.put("durable/put", b"one")
    writer.put("durable/replaced", b"before")
    writer.put("durable/replaced", b"after")
    writer.put("durable/deleted", b"x")
    writer.delete("durable/deleted")
    if dw_caps["put_if_absent"]:
        writer.put_if_absent("durable/created", b"made")
    close_store(writer)

    reader = dw_open_handle()
    try:
        assert reader.get("durable/put") == b"one"
        assert reader.get("durable/replaced") == b"after"
        assert reader.get("durable/deleted") is None
        if dw_caps["put_if_absent"]:
            assert reader.get("durable/created") == b"made"
        expected = ["durable/put", "durable/replaced"]
        if dw_caps["put_if_absent"]:
            expected.insert(0, "durable/created")
        assert listed(reader, "durable/", dw_caps) == expected
    finally:
        close_store(reader)
