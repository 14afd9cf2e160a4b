"""Failures on the wire surface as errors (C-ERR-1, C-LOST-1), never as answers.

These tests need ``--dw-network`` and a store whose ``StoreSpec`` declares a
``NetworkRoute``: they put faults between the store's client and its server through the
run's fault proxy, and skip otherwise. While the proxy resets every request before the
server sees it, no call can have happened, so every call must raise a ``StoreError``: a
``get`` that answers ``None``, a create that answers ``False``, a ``list`` that answers the
keys of the pages it got, or a ``put`` or ``delete`` that returns as if it wrote, each
turns a failure into a wrong answer that the caller acts on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dw_testing.kit.fault_proxy import FaultProxy, Faults
from reference_engine.errors import StoreError

pytestmark = [pytest.mark.dw_store_contract]

KEPT, NEW = "net/kept", "net/new"
REFUSE_EVERY_REQUEST = Faults(reset_before=1.0)


def _needs_proxy(proxy: FaultProxy | None) -> FaultProxy:
    if proxy is None:
        pytest.skip("needs --dw-network and a store whose StoreSpec declares a NetworkRoute")
    return proxy


def _calls(store: Any) -> dict[str, Callable[[], object]]:
    calls: dict[str, Callable[[], object]] = {
        "get": lambda: store.get(KEPT),
        "put": lambda: store.put(KEPT, b"replaced"),
        "delete": lambda: store.delete(KEPT),
        "list": lambda: store.list("net/"),
    }
    if hasattr(store, "put_if_absent"):
        calls["put_if_absent"] = lambda: store.put_if_absent(NEW, b"created")
    return calls


@pytest.mark.dw_clause("C-ERR-1", "C-LOST-1")
def test_while_no_request_reaches_the_server_every_call_raises_and_nothing_changes(
    dw_store: Any, dw_fault_proxy: FaultProxy | None,
) -> None:
    proxy = _needs_proxy(dw_fault_proxy)
    dw_store.put(KEPT, b"kept")
    answered: dict[str, object] = {}
    with proxy.playing(REFUSE_EVERY_REQUEST):
        for name, call in _calls(dw_store).items():
            try:
                answered[name] = call()
            except StoreError:
                continue
    assert proxy.counters.get("reset-before", 0) > 0, "the proxy reset no request"
    assert not answered, (
        "while the network refused every request, these calls answered instead of raising "
        f"a StoreError: {answered}; a failure is not an answer (C-ERR-1): raise it"
    )
    assert dw_store.get(KEPT) == b"kept", "a call the server never saw changed the record"
    assert dw_store.get(NEW) is None
    assert dw_store.list("net/") == [KEPT]
