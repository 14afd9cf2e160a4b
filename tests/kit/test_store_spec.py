"""StoreSpec checks what an extension author declares, and fills in the defaults."""

from __future__ import annotations

import pytest

from dw_testing.kit.doubles import NoCreateStore
from dw_testing.kit.spec import CAPABILITIES, StoreSpec, UnknownCapability, default_capabilities
from reference_engine.stores.memory import MemoryStore


@pytest.mark.dw_clause("C-CAP-1")
def test_unknown_capability_names_are_refused_with_the_known_ones() -> None:
    with pytest.raises(UnknownCapability) as caught:
        StoreSpec(MemoryStore, capabilities={"cross_proces": True}, name="mine")
    message = str(caught.value)
    assert "cross_proces" in message and "mine" in message
    assert all(name in message for name in CAPABILITIES)
    assert isinstance(caught.value, ValueError)


def test_capability_values_must_be_booleans() -> None:
    with pytest.raises(TypeError, match="cross_process"):
        StoreSpec(MemoryStore, capabilities={"cross_process": "false"})  # type: ignore[dict-item]


def test_factory_must_be_callable() -> None:
    with pytest.raises(TypeError, match="zero-argument callable"):
        StoreSpec(MemoryStore())  # type: ignore[arg-type]  # a handle, not a factory


@pytest.mark.dw_clause("C-CAP-1")
def test_declared_capabilities_override_the_defaults() -> None:
    spec = StoreSpec(MemoryStore, uri="memory://x", capabilities={"cross_process": True,
                                                                  "large_values": False})
    caps = spec.resolved_capabilities(MemoryStore())
    assert caps["cross_process"] is True and caps["large_values"] is False
    assert set(caps) == set(CAPABILITIES)


@pytest.mark.parametrize(
    ("uri", "local"),
    [("file:///tmp/x", True), ("sqlite:///tmp/x.db", True), ("./.dw", True),
     ("memory://x", False), ("s3://bucket/p", False), ("pkg.mod:factory", False), (None, False)],
)
@pytest.mark.dw_clause("C-CAP-1")
def test_defaults_follow_the_uri(uri: str | None, local: bool) -> None:
    caps = default_capabilities(MemoryStore(), uri)
    assert caps["cross_process"] is local and caps["durable_reopen"] is local
    assert caps["cross_handle"] and caps["large_values"] and caps["distinguishes_conflict"]


@pytest.mark.dw_clause("C-CAP-1")
def test_put_if_absent_default_follows_the_store() -> None:
    assert default_capabilities(MemoryStore(), None)["put_if_absent"] is True
    assert default_capabilities(NoCreateStore(), None)["put_if_absent"] is False
