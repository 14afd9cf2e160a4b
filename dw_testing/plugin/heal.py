"""The heal phase of a faulted engine test (``--dw-network``): safety, then recovery.

Under a network profile any store call may raise (C-ERR-1, C-LOST-1), so an engine test
that ends on a ``StoreError`` has ended early; it has not failed. Every faulted engine test
then ends the same way, as Jepsen's and etcd's robustness tests do: faults off, the engine
on a fresh handle drives every run of the test's prefix with its own retries (scheduler
passes), and the stored records are judged:

- every accepted signal is applied exactly once, and to its own run (none lost, doubled
  or misapplied);
- no run is left suspended with every wait decided (the engine resumed it).

A store that still fails with the faults off fails the test, naming the call that kept
failing and its error. The early end itself is kept for the teardown's message
(:func:`ended_early`) and the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.plugin import fault_tally
from dw_testing.plugin.session import STORE_FIXTURE, DwSession
from reference_engine.errors import InvalidKey, StoreError
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.outcome import ACCEPTED
from reference_engine.records.run import SUCCEEDED
from reference_engine.runs.reading import read_run
from reference_engine.stores.contract import close_store
from reference_engine.waits.outcomes import read_outcome

ENDED_EARLY = pytest.StashKey[str]()
HEAL_PASSES = 5
# Between passes the clock moves on past the scheduler's back-off of a run whose resume
# failed; far less than any deadline the suite's workflows set.
PASS_GAP_S = 30.0


def ended_early(item: pytest.Item) -> str:
    """How the test ended early on a store error (``get('k') raised StoreError: ...``),
    or ``""``."""
    return item.stash.get(ENDED_EARLY, "")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def describe(exc: BaseException) -> str:
    """``op('key') raised Type: first line``, from the error's own ``op`` and ``key``."""
    op = getattr(exc, "op", None)
    key = getattr(exc, "key", None)
    call = f"{op}({key!r})" if op and key else (f"{op}()" if op else "a store call")
    return f"{call} raised {type(exc).__name__}: {_first_line(str(exc))[:200]}"


class CallNotes:
    """The store, with the last call that raised noted (``op('key') raised ...``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failures: list[str] = []

    def _noted(self, op: str, key: str, call: Any) -> Any:
        try:
            return call()
        except Exception as exc:
            self.failures.append(f"{op}({key!r}) raised {type(exc).__name__}: "
                                 f"{_first_line(str(exc))[:200]}")
            raise

    def put(self, key: str, data: bytes) -> None:
        self._noted("put", key, lambda: self.inner.put(key, data))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        created: bool = self._noted("put_if_absent", key,
                                    lambda: self.inner.put_if_absent(key, data))
        return created

    def get(self, key: str) -> bytes | None:
        found: bytes | None = self._noted("get", key, lambda: self.inner.get(key))
        return found

    def delete(self, key: str) -> None:
        self._noted("delete", key, lambda: self.inner.delete(key))

    def list(self, prefix: str) -> list[str]:
        listed: list[str] = self._noted("list", prefix, lambda: self.inner.list(prefix))
        return listed


def judge(store: Any) -> list[str]:
    """What the stored records say is wrong: a signal lost, doubled or misapplied."""
    problems: list[str] = []
    runs = {}
    for run_id in keys.run_ids_from_keys(store.list(keys.runs_root())):
        try:
            runs[run_id] = read_run(store, run_id)
        except StoreError:
            raise
        except Exception:  # refused (unreadable): the engine's own tests judge that
            continue
    for run_id, record in runs.items():
        own = record.wait_refs()
        applied = [e for e in record.journal if e.get("type") == "answer_applied"]
        for wait_id, count in Counter(str(e.get("waitId")) for e in applied).items():
            if count > 1:
                problems.append(f"run {run_id} applied the answer to wait {wait_id} "
                                f"{count} times (doubled)")
            if wait_id not in own:
                problems.append(f"run {run_id} applied an answer to wait {wait_id}, which "
                                "is not one of its own (misapplied)")
    for wait_id in sorted({w for key in store.list(keys.outcomes_root())
                           if (w := keys.wait_id_from_key(key)) is not None}):
        decoded = read_outcome(store, wait_id)
        if not isinstance(decoded, Found) or decoded.record.kind != ACCEPTED:
            continue
        outcome = decoded.record
        owner = runs.get(outcome.run_id)
        if owner is None or owner.status != SUCCEEDED or outcome.receipt is None:
            continue
        receipts = [e.get("receiptId") for e in owner.journal
                    if e.get("type") == "answer_applied" and e.get("waitId") == wait_id]
        if receipts != [outcome.receipt.id]:
            problems.append(f"run {outcome.run_id} succeeded without applying the accepted "
                            f"signal {outcome.receipt.id} of wait {wait_id} (lost)")
    return problems


def heal(item: pytest.Item) -> list[str]:
    """Faults are off: drive the test's runs to where their outcomes take them, then judge."""
    args = getattr(item, "funcargs", {})
    spec, prefix = args.get(STORE_FIXTURE), args.get("_dw_prefix")
    if spec is None or not isinstance(prefix, str):
        return []
    clock = args.get("dw_clock")
    clock = clock if isinstance(clock, FakeClock) else FakeClock()
    from dw_testing.plugin.engine_fixtures import engine_factory  # a plugin of its own

    make = args.get("dw_make_engine") or engine_factory(clock, None)
    handle = spec.factory()
    store = CallNotes(PrefixedStore(handle, prefix))
    try:
        engine = make(store)
        try:
            for _ in range(HEAL_PASSES):
                engine.serve_once(full_scan=True)
                if not engine.ready_runs():
                    break
                clock.advance(PASS_GAP_S)
            stuck = engine.ready_runs()
            problems = judge(store)
        except (StoreError, OSError) as exc:
            if isinstance(exc, InvalidKey):
                raise
            return [f"with the faults off the store still fails: {describe(exc)}; a store "
                    "may raise under faults (C-ERR-1), but must work again once they stop"]
        if stuck:
            kept = store.failures[-1] if store.failures else "no call raised"
            problems.append(f"runs {stuck} stayed suspended with every wait decided: the "
                            f"engine could not resume them with the faults off (last store "
                            f"failure: {kept})")
        return problems
    finally:
        close_store(handle)


class HealHooks:
    """Lets a faulted engine test end early on a store error, then runs its heal phase."""

    def __init__(self, session: DwSession) -> None:
        self.session = session

    def _proxy(self, item: pytest.Item) -> Any:
        routing = self.session.stores.routing
        if (routing.profile is None or item.get_closest_marker("dw_engine") is None
                or STORE_FIXTURE not in getattr(item, "funcargs", {})):
            return None
        return routing.proxy(item.funcargs[STORE_FIXTURE].name)  # type: ignore[attr-defined]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Gather each faulted test's tally (sent by the workers under xdist)."""
        if self.session.is_worker or report.when != "teardown":
            return
        met = dict(report.user_properties).get("dw_faults_met")
        if isinstance(met, dict) and isinstance(met.get("store"), str):
            part = {k: v for k, v in met.items() if k != "store"}
            fault_tally.merge(self.session.faults_met.setdefault(met["store"], {}), part)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        """A fixture's store call that raised under faults ends the test early too: its
        body is not run, and the heal phase judges what the store kept."""
        try:
            return (yield)
        except StoreError as exc:
            if isinstance(exc, InvalidKey) or self._proxy(item) is None:
                raise
            item.stash[ENDED_EARLY] = f"{describe(exc)} (in a fixture, before the test ran)"
            item.runtest = lambda: None  # type: ignore[method-assign]
            return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        proxy = self._proxy(item)
        if proxy is None:
            return (yield)
        result: object = None
        try:
            result = yield
        except StoreError as exc:
            if isinstance(exc, InvalidKey):
                raise
            item.stash[ENDED_EARLY] = describe(exc)
        proxy.clear()  # the heal: faults off from here on
        problems = heal(item)
        if problems:
            early = ended_early(item)
            lead = (f"the test ended early under faults ({early}), which the contract allows; "
                    if early else "")
            pytest.fail(f"{lead}after the heal (faults off): " + "; ".join(problems),
                        pytrace=False)
        return result
