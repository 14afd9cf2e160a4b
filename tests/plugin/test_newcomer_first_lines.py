"""A newcomer's store, broken as newcomers break theirs, is told what is wrong in the first
lines of a ``pytest -n 2`` run: the cause's clause and its fix, before any failure's
traceback, and never an engine refusal written for CLI users ("Run ... is busy", "Run ...
already exists. Pick another --run-id").

The store is a dict behind a lock, as a first store is; one variant folds keys to lower
case, the other returns only the first page of its paged listing. Each run is narrowed to
a store-level test and an engine-level test that the defect fails, so it stays cheap.
"""

from __future__ import annotations

import pytest

NEWCOMER_STORE = '''
"""My first store: a dict behind a lock, shared by every handle."""
import threading

from reference_engine.stores.keys import validate_key, validate_prefix

_RECORDS = {}
_LOCK = threading.Lock()
PAGE = 100  # my backend pages its listings


class DictStore:
    def _key(self, key, op):
        return validate_key(key, op=op)

    def put(self, key, data):
        with _LOCK:
            _RECORDS[self._key(key, "put")] = bytes(data)

    def put_if_absent(self, key, data):
        name = self._key(key, "put_if_absent")
        with _LOCK:
            if name in _RECORDS:
                return False
            _RECORDS[name] = bytes(data)
            return True

    def get(self, key):
        with _LOCK:
            return _RECORDS.get(self._key(key, "get"))

    def delete(self, key):
        with _LOCK:
            _RECORDS.pop(self._key(key, "delete"), None)

    def page(self, prefix, after):
        with _LOCK:
            keys = sorted(k for k in _RECORDS if k.startswith(prefix) and k > after)
        return keys[:PAGE], len(keys) > PAGE

    def list(self, prefix):
        validate_prefix(prefix)
        keys, more = self.page(prefix, "")
        while more:
            page, more = self.page(prefix, keys[-1])
            keys += page
        return keys

    def close(self):
        pass


class FoldingStore(DictStore):
    """Keys are folded to lower case on the way to the backend."""

    def _key(self, key, op):
        return validate_key(key, op=op).lower()


class FirstPageStore(DictStore):
    """The listing stops at the backend's first page."""

    def list(self, prefix):
        validate_prefix(prefix)
        return self.page(prefix, "")[0]


def folding():
    return FoldingStore()


def first_page():
    return FirstPageStore()
'''

# The engine's refusals, written for someone typing `dw run`: never the first thing a
# store author reads about a broken store.
REFUSALS = ("is busy", "already exists. Pick another --run-id")


def _first_lines(pytester: pytest.Pytester, store: str, tests: str) -> list[str]:
    """The output after the progress lines, up to pytest's own failures section included."""
    pytester.makepyfile(newcomer_store=NEWCOMER_STORE)
    result = pytester.runpytest_subprocess(
        f"--dw-store=newcomer_store:{store}", "--dw-suite-only", "-n", "2",
        "-p", "no:cacheprovider", "-p", "no:randomly", "-k", tests, timeout=300)
    assert result.ret == 1, result.stdout.str()[-3000:]
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if line.startswith("====") and i > 0
                 and "test session starts" not in line)
    return lines[start:]


def _told_before_any_traceback(lines: list[str], *wanted: str) -> list[str]:
    failures = next(i for i, line in enumerate(lines) if " FAILURES " in line)
    head = lines[:failures]
    for text in wanted:
        assert any(text in line for line in head[:6]), (text, head)
    refused = [line for line in lines[:failures + 40] if any(r in line for r in REFUSALS)]
    return refused


def test_a_store_that_folds_keys_is_told_c_key_2_first(pytester: pytest.Pytester) -> None:
    lines = _first_lines(pytester, "folding", "test_keys_are_case_sensitive or "
                         "test_run_ids_that_differ_only_by_case_are_two_runs")
    assert "What is wrong with this store" in lines[0]
    refused = _told_before_any_traceback(lines, "C-KEY-2, cause of 2 failures",
                                         "instead of folding case")
    assert not refused, f"an engine refusal came before the store's own failure: {refused}"
    # The engine test is told last, as explained by the cause, not as a cause of its own.
    assert any("(engine, explained by C-KEY-2 above" in line for line in lines[:8]), lines[:8]
    first_failure = next(line for line in lines if line.startswith("_"))
    assert "test_keys_are_case_sensitive" in first_failure, first_failure


def test_a_store_that_stops_at_the_first_page_is_told_to_follow_every_page(
    pytester: pytest.Pytester,
) -> None:
    lines = _first_lines(pytester, "first_page",
                         "test_list_returns_every_key_under_a_prefix_holding_over_two_backend "
                         "or test_a_run_killed_at_any_write_is_taken_over_by_the_next_fresh")
    assert "What is wrong with this store" in lines[0]
    refused = _told_before_any_traceback(lines, "C-LIST-3, cause of 2 failures",
                                         "follow every page")
    assert not refused, f"an engine refusal came before the store's own failure: {refused}"
    first_failure = next(line for line in lines if line.startswith("_"))
    assert "test_list_returns_every_key_under_a_prefix" in first_failure, first_failure
