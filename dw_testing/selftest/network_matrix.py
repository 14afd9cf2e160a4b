"""The network kill matrix: the network-only mutants, caught under ``--dw-network`` and
missed without it, and the correct S3 store passing both ways.

:func:`run_network_kill_matrix` runs the store-level suite twice against every mutant of
:mod:`dw_testing.selftest.mutants.network` and the control (each on a moto server of its
own): once with the ``lossy`` network profile and once with no fault on the wire.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dw_testing.selftest.killmatrix import KillMatrix, run_matrix, short_name
from dw_testing.selftest.mutants.network import CONTROL, MODULE, NETWORK_MUTANTS

NETWORK_PROFILE = "lossy"
NAME_LIMIT_TEST = "test_keys_of_exactly_1024_bytes_are_accepted_and_kept_apart"
# pytest's exit status when tests failed; any other non-zero status is a broken run.
TESTS_FAILED = 1


@dataclass(frozen=True)
class NetworkKillMatrix:
    """The same suite with faults on the wire (``with_faults``) and without (``without``)."""

    mutants: list[str]
    with_faults: KillMatrix
    without: KillMatrix

    def problems(self) -> list[str]:
        """What the matrix must not show: a mutant missed under faults or caught without
        them, a correct store failing, or a run that went wrong."""
        found = []
        for matrix, how in ((self.with_faults, f"--dw-network={NETWORK_PROFILE}"),
                            (self.without, "no network profile")):
            if matrix.exit_code not in (0, TESTS_FAILED):
                found.append(f"the run with {how} went wrong (pytest exit {matrix.exit_code}): "
                             f"{' '.join(matrix.command)}")
            if matrix.killed_by(CONTROL):
                found.append(f"the correct store failed with {how}: "
                             f"{', '.join(map(short_name, matrix.killed_by(CONTROL)))}")
        for mutant in self.mutants:
            if not self.with_faults.killed_by(mutant):
                found.append(f"{mutant} survived --dw-network={NETWORK_PROFILE}")
            if self.without.killed_by(mutant):
                found.append(f"{mutant} was caught with no fault on the wire, by "
                             f"{short_name(self.without.killed_by(mutant)[0])}: its defect "
                             "is not a network-only one")
        return found


def network_targets(names: Iterable[str] | None = None) -> dict[str, str]:
    chosen = list(NETWORK_MUTANTS) if names is None else list(names)
    unknown = sorted(set(chosen) - set(NETWORK_MUTANTS))
    if unknown:
        raise KeyError(f"unknown network mutant(s) {', '.join(unknown)}; known: "
                       f"{', '.join(NETWORK_MUTANTS)}")
    return {name: f"{MODULE}:{name}" for name in [*chosen, CONTROL]}


def run_network_kill_matrix(names: Iterable[str] | None = None, *, tests: str | None = None,
                            without: bool = True, profile: str = "quick",
                            extra: Sequence[str] = (), timeout: float = 1800.0,
                            ) -> NetworkKillMatrix:
    """Run the store-level suite (``-k tests`` if given) on the network mutants and the
    control, with the network profile and, if ``without``, with no fault on the wire."""
    targets = network_targets(names)
    # S3's own 1024-byte name limit is a known deviation of the moto stores by name; the
    # mutants' stores have names of their own, and the limit has nothing to do with the wire.
    selection = f"({tests}) and not {NAME_LIMIT_TEST}" if tests else f"not {NAME_LIMIT_TEST}"
    only = ["-k", selection]
    faulted = run_matrix(targets, profile=profile, workers=None, timeout=timeout,
                         extra=[*only, f"--dw-network={NETWORK_PROFILE}", *extra])
    plain = (run_matrix(targets, profile=profile, workers=None, timeout=timeout,
                        extra=[*only, *extra]) if without
             else KillMatrix(list(targets), [], {}, exit_code=0))
    return NetworkKillMatrix([n for n in targets if n != CONTROL], faulted, plain)


def render(matrix: NetworkKillMatrix) -> Any:
    """A rich table: each mutant, the first test that caught it under faults, and without."""
    from rich.table import Table

    table = Table(title=f"Network kill matrix: caught with --dw-network={NETWORK_PROFILE}, "
                        "missed without")
    for column in ("mutant", f"with {NETWORK_PROFILE}", "without"):
        table.add_column(column)
    for name in [*matrix.mutants, CONTROL]:
        with_kill = matrix.with_faults.first_kill(name)
        without_kill = matrix.without.first_kill(name)
        table.add_row(name, short_name(with_kill) if with_kill else "passed",
                      short_name(without_kill) if without_kill else "passed")
    return table
