"""The dw-testing kit: store specs, wrappers that order and break calls, and the fake clock."""

from dw_testing.capabilities import conformance_test
from dw_testing.catalogue import DwChildTarget
from dw_testing.clock import FakeClock
from dw_testing.faults import FaultyStore, SimulatedCrash
from dw_testing.gates import GatedStore, GateTimeout
from dw_testing.prefixed import PrefixedStore
from dw_testing.spec import StoreSpec

__all__ = [
    "DwChildTarget",
    "FakeClock",
    "FaultyStore",
    "GateTimeout",
    "GatedStore",
    "PrefixedStore",
    "SimulatedCrash",
    "StoreSpec",
    "conformance_test",
]
