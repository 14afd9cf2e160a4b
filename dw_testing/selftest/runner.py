"""The one place that builds a pytest subprocess run of the suite.

``dw conformance``, the store kill matrix and the engine kill matrix all run the suite in
a child pytest, rooted in a scratch directory, writing a ``--dw-report``. They differ only in
what a :class:`SuiteRun` says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# The project's own addopts (perhaps its own --dw-store list) and collection patterns must not
# change which stores run or which suite tests are found; its other ini settings still apply.
NEUTRAL_INI = ("-o", "addopts=", "-o", "python_files=test_*.py", "-o", "python_classes=Test",
               "-o", "python_functions=test")
VARIANT_ENV = "DW_ENGINE_VARIANT"
VARIANT_PLUGIN = "dw_testing.selftest.variants"


@dataclass(frozen=True)
class SuiteRun:
    """One child pytest run of the suite (only the suite, never the caller's own tests)."""

    rootdir: Path
    stores: Sequence[str]
    report: Path
    profile: str = "quick"
    marker: str | None = None
    seed: int | None = None
    workers: str | None = None
    junit: Path | None = None
    variant: str | None = None
    traceback: str | None = None
    quiet_header: bool = False
    scratch: Path | None = None
    extra: Sequence[str] = ()

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
                   "--rootdir", str(self.rootdir), *NEUTRAL_INI, "--dw-suite-only",
                   "--dw-allow-unknown", "--dw-report", str(self.report),
                   f"--dw-profile={self.profile}"]
        if self.marker:
            command += ["-m", self.marker]
        if self.traceback:
            command.append(f"--tb={self.traceback}")
        if self.quiet_header:
            command.append("--no-header")
        if self.junit is not None:
            command += ["--junit-xml", str(self.junit)]
        if self.variant is not None:
            command += ["-p", VARIANT_PLUGIN]
        command += [f"--dw-store={store}" for store in self.stores]
        if self.seed is not None:
            command += ["--dw-seed", str(self.seed)]
        if self.workers:
            command += ["-n", self.workers]
        return [*command, *self.extra]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The caller's environment, less what would leak an outer pytest run into this one.

        Run from inside a pytest (or an xdist worker), the outer run's ``PYTEST_*`` variables
        would change what the child collects. Hypothesis caches go to ``scratch``, so a run
        leaves the user's directory as it was.
        """
        env = {k: v for k, v in (os.environ if base is None else base).items()
               if not k.startswith(("PYTEST_", "PYTHONBREAKPOINT", VARIANT_ENV))}
        if self.scratch is not None:
            env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(self.scratch / "hypothesis"))
        if self.variant is not None:
            env[VARIANT_ENV] = self.variant
        return env
