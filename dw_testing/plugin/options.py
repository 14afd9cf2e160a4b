"""The plugin's command-line options and markers."""

from __future__ import annotations

import pytest

MARKERS = (
    "dw_store_contract: a conformance test of the store alone (docs/contract.md)",
    "dw_engine: a conformance test of the reference engine's wait lifecycle on the store",
    "dw_requires(*capabilities): skip unless the store under test declares every capability",
    "dw_network: a conformance test that holds with the --dw-network profile's faults on the "
    "wire; it runs with them (other tests run through the proxy with no fault set)",
    "dw_clause(*ids): the clauses of docs/contract.md this test checks, e.g. C-CREATE-2 "
    "(shown in the report; an id the contract does not define stops the run)",
)
PROFILE_NAMES = ("quick", "ci", "thorough")
NETWORK_NAMES = ("none", "lossy", "lost-replies")


def add_options(parser: pytest.Parser) -> None:
    """The ``--dw-*`` options, in their own group of ``pytest --help``."""
    group = parser.getgroup("dw-testing", "dw-testing conformance suite")
    group.addoption(
        "--dw-store", action="append", default=[], dest="dw_store",
        metavar="NAME|URI|module:obj",
        help="run the conformance suite against this store; repeat for several "
        "(names: see --dw-stores)",
    )
    group.addoption("--dw-stores", action="store_true", dest="dw_stores",
                    help="list the known store names and exit")
    group.addoption("--dw-profile", choices=PROFILE_NAMES, default=None, dest="dw_profile",
                    help="Hypothesis effort for the suite (default: ci)")
    group.addoption("--dw-network", choices=NETWORK_NAMES, default="none", dest="dw_network",
                    help="route each store that declares a NetworkRoute through a fault proxy "
                    "and run the engine-level and dw_network tests with its faults: lossy "
                    "(resets, lost and cut replies, jitter) or lost-replies (default: none)")
    group.addoption("--dw-seed", type=int, default=None, dest="dw_seed",
                    help="seed Hypothesis and the suite's randomness to reproduce a run")
    group.addoption("--dw-report", default=None, dest="dw_report", metavar="PATH",
                    help="write the JSON report to PATH, and a Markdown matrix and an HTML "
                    "page beside it")
    group.addoption("--dw-failures", choices=("pytest", "blocks"), default="pytest",
                    dest="dw_failures",
                    help="blocks: no tracebacks; at the end, one block per failure naming "
                    "the clause, what the store did and the fix, in the words of an exec: "
                    "store's handshake (as dw conformance prints them)")
    group.addoption("--dw-allow-unknown", action="store_true", dest="dw_allow_unknown",
                    help="do not fail the run when a history check ran out of budget "
                    "(UNKNOWN); it is reported as skipped")
    group.addoption("--dw-suite-only", action="store_true", dest="dw_suite_only",
                    help="collect only the conformance suite, not the run's own test paths")
    group.addoption("--dw-judge", choices=("on", "off"), default="on", dest="dw_judge",
                    help="record every store call of each test and check its whole history "
                    "against the contract's model when the test ends (default: on)")
