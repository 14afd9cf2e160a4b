"""C-LAST-1: records last until they are deleted.

The judge writes a few records when the session first uses the store (values of every byte
class, on a handle kept open all session, so no reopen excuses a loss) and reads them back
on every handle kind when the session ends. This test reads them mid-run, on a new handle,
whenever the test order puts it, after writing more records than a small cache holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from dw_testing.history.labels import digest
from dw_testing.judge.lasting import LASTING_VALUES
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.judging import JudgeBook

pytestmark = [pytest.mark.dw_store_contract]

# More records than a cache with a small capacity keeps.
LATER_WRITES = 200


@pytest.mark.dw_clause("C-LAST-1")
@pytest.mark.dw_requires("cross_handle")
def test_records_written_when_the_session_began_are_still_there(
    request: pytest.FixtureRequest, dw_spec: StoreSpec, dw_raw_store: Any, dw_store: Any,
) -> None:
    lasting = JudgeBook.of(request.config).lasting
    lasting.start(dw_spec.name, dw_spec.factory)
    for n in range(LATER_WRITES):
        dw_store.put(f"later/{n}", b"%d" % n)
    problems = []
    for label, value in LASTING_VALUES:
        got = dw_raw_store.get(lasting.key(label))
        if got != value:
            shown = "no record (None)" if got is None else digest(bytes(got))
            problems.append(f"get({label!r}) answered {shown}, expected {digest(value)}")
    keeper = lasting.keepers.get(dw_spec.name)
    writer_sees = keeper is not None and all(
        keeper.get(lasting.key(label)) == value for label, value in LASTING_VALUES)
    assert not problems or not writer_sees, (
        f"C-HANDLE-1: records written when the session began read back right on the handle "
        f"that wrote them, wrong on a new one: {'; '.join(problems)}. Drop per-handle caches "
        "so every handle reads the backend")
    assert not problems, (
        f"C-LAST-1: records written when the session began, never deleted, read back wrong "
        f"on a new handle: {'; '.join(problems)}. Keep records until they are deleted: no "
        "expiry (TTL), no eviction")
