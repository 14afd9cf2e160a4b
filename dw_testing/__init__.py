"""The dw-testing kit: store specs, wrappers that order and break calls, and the fake clock."""

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.gates import GatedStore, GateTimeout
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.spec import StoreSpec
from dw_testing.plugin.capabilities import conformance_test
from dw_testing.plugin.catalogue import DwChildTarget

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
