"""The dw-testing kit: store specs, wrappers that order and break calls, and the fake clock.

Everything here imports without pytest. ``conformance_test`` (a pytest marker helper) is
loaded from the plugin on first use.
"""

from typing import Any

from dw_testing.kit.clock import FakeClock
from dw_testing.kit.doubles import NoCreateStore
from dw_testing.kit.fault_proxy import FaultProxy, Faults
from dw_testing.kit.faults import FaultyStore, SimulatedCrash
from dw_testing.kit.gates import GatedStore, GateTimeout
from dw_testing.kit.prefixed import PrefixedStore
from dw_testing.kit.procs import DwChildTarget
from dw_testing.kit.spec import NetworkRoute, StoreSpec
from dw_testing.kit.together import run_together
from dw_testing.kit.wrappers import StoreWrapper

__all__ = [
    "DwChildTarget",
    "FakeClock",
    "FaultProxy",
    "Faults",
    "FaultyStore",
    "GateTimeout",
    "GatedStore",
    "NetworkRoute",
    "NoCreateStore",
    "PrefixedStore",
    "SimulatedCrash",
    "StoreSpec",
    "StoreWrapper",
    "conformance_test",
    "run_together",
]


def __getattr__(name: str) -> Any:
    if name == "conformance_test":
        try:
            from dw_testing.plugin.capabilities import conformance_test
        except ImportError as exc:  # the base install has no pytest
            raise ImportError(
                f"dw_testing.conformance_test belongs to the pytest plugin, which needs "
                f"{exc.name!r}: pip install 'dw-testing[suite]'"
            ) from exc
        return conformance_test
    raise AttributeError(f"module 'dw_testing' has no attribute {name!r}")
