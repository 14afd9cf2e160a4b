"""The store fixtures every suite test (and an author's own tests) can use.

Without ``--dw-store`` they work on a session-shared memory store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.fault_proxy import FaultProxy
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.procs import DwChildTarget
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin import capabilities as caps_mod
from dw_testing.plugin import fault_tally, network
from dw_testing.plugin.catalogue.setup_error import StoreSetupError
from dw_testing.plugin.session import STORE_FIXTURE, close_quietly, dw_session


@pytest.fixture(scope="session")
def dw_spec(request: pytest.FixtureRequest) -> StoreSpec:
    """The StoreSpec under test (its provider is entered once per session or xdist worker)."""
    session = dw_session(request.config)
    try:
        return session.stores.spec(session.entry(getattr(request, "param", None)))
    except StoreSetupError as exc:
        failure = str(exc)
    # Failed outside the except block: pytest would print the chained exceptions, the
    # author's message among them, again and again.
    pytest.fail(failure, pytrace=False)


@pytest.fixture
def dw_caps(request: pytest.FixtureRequest, dw_spec: StoreSpec) -> dict[str, bool]:
    """The store's capabilities: defaults, then what the factory, provider or pyproject say."""
    session = dw_session(request.config)
    try:
        return session.stores.capabilities(session.entry(dw_spec.name))
    except StoreSetupError as exc:
        failure = str(exc)
    pytest.fail(failure, pytrace=False)


@pytest.fixture(autouse=True)
def _dw_capability_gate(request: pytest.FixtureRequest) -> None:
    if STORE_FIXTURE not in request.fixturenames:
        return
    needed = caps_mod.required(request.node)
    if not needed:
        return
    spec: StoreSpec = request.getfixturevalue(STORE_FIXTURE)
    absent = caps_mod.missing(needed, request.getfixturevalue("dw_caps"))
    if absent:
        source = dw_session(request.config).entry(spec.name).source
        pytest.skip(caps_mod.skip_reason(spec.name, absent, source, spec.capabilities))


@pytest.fixture(autouse=True)
def _dw_probed_deviations(request: pytest.FixtureRequest) -> None:
    """Known emulator deviations, marked once the provider's probes have shown their bugs."""
    session = dw_session(request.config)
    if STORE_FIXTURE not in request.fixturenames or not session.active:
        return
    from dw_testing.plugin.collection import deviations_for

    spec: StoreSpec = request.getfixturevalue(STORE_FIXTURE)
    for deviation in deviations_for(session, request.node, spec.name, spec.emulator_bugs):
        # An xfail added during setup is read when the test is called (pytest >= 6.0.1).
        request.node.add_marker(pytest.mark.xfail(
            strict=not deviation.intermittent, reason=deviation.xfail_reason()))


@pytest.fixture
def dw_fault_proxy(request: pytest.FixtureRequest, dw_spec: StoreSpec) -> FaultProxy | None:
    """The fault proxy between the store under test and its server under ``--dw-network``
    (the store declares a ``NetworkRoute``), else ``None``."""
    return dw_session(request.config).stores.routing.proxy(dw_spec.name)


@pytest.fixture(autouse=True)
def _dw_network_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    """The network profile's faults during a ``dw_engine`` or ``dw_network`` test."""
    routing = dw_session(request.config).stores.routing
    if (STORE_FIXTURE not in request.fixturenames or routing.profile is None
            or not network.faulted(request.node)):
        yield
        return
    spec: StoreSpec = request.getfixturevalue(STORE_FIXTURE)
    proxy = routing.proxy(spec.name)
    if proxy is None:
        if request.node.get_closest_marker(network.NETWORK_MARK) is not None:
            pytest.skip(f"store {spec.name} declares no NetworkRoute, so --dw-network cannot "
                        "put faults on its wire; give its StoreSpec network=NetworkRoute(...)")
        yield
        return
    if "_dw_prefix" in request.fixturenames:
        # Set up first, so it is torn down after this fixture: faults stop before the clear.
        request.getfixturevalue("_dw_prefix")
    if "_dw_judge" in request.fixturenames:
        # The judge's own writes (the lasting records) are the harness's, made before faults.
        request.getfixturevalue("_dw_judge")
    from dw_testing.plugin.heal import ended_early

    tally = routing.tally(spec.name)
    before = {**tally.snapshot(), "played": dict(proxy.counters)}
    try:
        with network.playing(proxy, routing.profile, lambda: ended_early(request.node)):
            yield
    finally:
        # Faults are off: count the creates that answered False over their own bytes.
        tally.settle(spec.factory)
        after = {**tally.snapshot(), "played": dict(proxy.counters)}
        met = fault_tally.delta(after, before)
        met["played"] = {k: v for k, v in (met.get("played") or {}).items()
                         if k in fault_tally.FAULT_COUNTERS}
        request.node.user_properties.append(("dw_faults_met", {"store": spec.name, **met}))


def _opened(spec: StoreSpec) -> Any:
    """A new handle; a factory that raises fails the test in its own words."""
    try:
        return spec.factory()
    except Exception as exc:
        failure = str(StoreSetupError(spec.name, exc))
    pytest.fail(failure, pytrace=False)


@pytest.fixture
def _dw_prefix(request: pytest.FixtureRequest, dw_spec: StoreSpec) -> Iterator[str]:
    session = dw_session(request.config)
    prefix = session.next_prefix()
    yield prefix
    session.clear_prefix(dw_spec, prefix)


@pytest.fixture
def dw_store(dw_spec: StoreSpec, _dw_prefix: str) -> Iterator[PrefixedStore]:
    """A fresh handle on the test's own prefix ``dwc-<session>-<worker>/<n>``, cleared after."""
    handle = _opened(dw_spec)
    yield PrefixedStore(handle, _dw_prefix)
    close_quietly(handle)


@pytest.fixture
def dw_open_handle(
    dw_spec: StoreSpec, _dw_prefix: str
) -> Iterator[Callable[[], PrefixedStore]]:
    """``dw_open_handle()`` returns another handle (a new factory call) on the same prefix."""
    opened: list[object] = []

    def open_handle() -> PrefixedStore:
        handle = dw_spec.factory()
        opened.append(handle)
        return PrefixedStore(handle, _dw_prefix)

    yield open_handle
    for handle in opened:
        close_quietly(handle)


@pytest.fixture
def dw_raw_store(dw_spec: StoreSpec) -> Iterator[Any]:
    """An unprefixed handle, for the key-validation tests only: it is not cleared."""
    handle = _opened(dw_spec)
    yield handle
    close_quietly(handle)


@pytest.fixture
def dw_child_target(dw_spec: StoreSpec, _dw_prefix: str) -> DwChildTarget:
    """The URI and prefix a child process opens: ``PrefixedStore(open_store(uri), prefix)``."""
    if not dw_spec.uri:
        pytest.fail(
            f"store {dw_spec.name} has no uri, so a child process cannot open it; give its "
            "StoreSpec a uri (or an import path), or declare cross_process = false",
            pytrace=False,
        )
    return DwChildTarget(uri=dw_spec.uri, prefix=_dw_prefix)


@pytest.fixture
def dw_clock(tmp_path: Path) -> FakeClock:
    """A FakeClock mirrored to a file, so ``dw_clock.env`` drives CLI processes too."""
    return FakeClock(mirror_to=tmp_path / "dw-clock")
