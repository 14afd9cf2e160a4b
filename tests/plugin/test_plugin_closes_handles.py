"""C-HANDLE-3: ``close()`` is optional, and whoever opened a handle calls it once, when done.

The suite's fixtures open every handle a test uses through the store's factory; each is
closed exactly once, after the test, including handles a test opened for itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

COUNTING = '''
import itertools, json, os, pathlib, threading
from reference_engine.stores.memory import MemoryStore

LEDGER = pathlib.Path(os.environ["DW_TEST_HANDLE_LEDGER"])
_lock = threading.Lock()
# A serial number, not id(): a handle closed and freed may hand its id to the next one.
_serials = itertools.count()


class Counted(MemoryStore):
    def close(self):
        with _lock:
            ledger = json.loads(LEDGER.read_text())
            ledger[self.serial] = ledger.get(self.serial, 0) + 1
            LEDGER.write_text(json.dumps(ledger))


def factory():
    handle = Counted("closes-" + LEDGER.name)
    with _lock:
        handle.serial = str(next(_serials))
        ledger = json.loads(LEDGER.read_text())
        ledger.setdefault(handle.serial, 0)
        LEDGER.write_text(json.dumps(ledger))
    return handle
'''


@pytest.mark.dw_clause("C-HANDLE-3")
def test_every_handle_the_suite_opens_is_closed_once(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.json"
    ledger.write_text("{}")
    monkeypatch.setenv("DW_TEST_HANDLE_LEDGER", str(ledger))
    pytester.makepyfile(counting_store=COUNTING)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--dw-store=counting_store:factory", "--dw-suite-only", "-p", "no:cacheprovider",
        "-k", "test_a_write_on_one_handle_is_read_at_once_on_another or "
              "test_records_survive_closing or test_create_returns_true_once", "-q")
    result.assert_outcomes(passed=2, skipped=1)
    closes = json.loads(ledger.read_text())
    assert len(closes) >= 3, f"the suite opened only {len(closes)} handles"
    wrong = {handle: count for handle, count in closes.items() if count != 1}
    assert not wrong, f"handles closed other than once: {wrong}"
