"""Deliberately broken engines (docs/unkillable.md): the engine suite must catch each.

Five broken designs, plus one more: an engine that takes a 409 "conflict in flight" for
an existing record (C-CREATE-6, seen from the engine's side).

Each variant is the reference engine with one design mistake put back in, made by
subclassing :class:`~reference_engine.engine.Engine` or by replacing one of its seams for
as long as :meth:`EngineVariant.installed` is entered. Nothing under ``reference_engine/``
is edited. The engine-level suite picks a variant up from the environment variable
``DW_ENGINE_VARIANT`` (a name below, or ``package.module:variant``), so::

    DW_ENGINE_VARIANT=boolean_decision pytest -m dw_engine --dw-store=memory

must fail. :data:`ENGINE_VARIANTS` lists them for the kill matrix.

The seams, and why each is the one to replace:

- ``create_then_read`` as imported by ``waits.outcomes`` (settle), ``executor`` (fenced
  saves) and ``claims`` (taking a claim): where a race is decided;
- ``executor.FencedSaver``: every revision a claim holder writes;
- ``consume.apply_outcomes``: the consume, computed before its one save.

(The engine imports these two inside the methods that use them, when they run, so a
replacement installed on the module that defines it is the one the engine calls.)
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dw_testing.selftest.mutants.registry import MutantInfo
from reference_engine import engine as engine_module
from reference_engine.errors import TransientStoreError
from reference_engine.records import keys
from reference_engine.records.decoding import Found
from reference_engine.records.io import create_then_read
from reference_engine.records.run import SUCCEEDED, RunRecord
from reference_engine.records.run_store import newest_revision
from reference_engine.records.views import Delivery
from reference_engine.runs import consume as consume_module
from reference_engine.runs import executor as executor_module
from reference_engine.runs.consume import apply_outcomes
from reference_engine.runs.executor import FencedSaver, journal_event
from reference_engine.stores.registry import load_object

ENV_VAR = "DW_ENGINE_VARIANT"
SECTION = "Engine variants"
ANSWER_APPLIED = "answer_applied"

EngineClass = type[engine_module.Engine]


@dataclass(frozen=True)
class EngineVariant:
    """One broken engine: its class and the seams it replaces while installed."""

    name: str
    defect: str
    engine_class: EngineClass = engine_module.Engine
    # (module object, attribute name, replacement)
    patches: tuple[tuple[Any, str, Any], ...] = field(default=())
    # The docs/contract.md clauses whose promise to the engine this variant breaks.
    clauses: tuple[str, ...] = ("C-ENGINE-2",)

    @contextlib.contextmanager
    def installed(self) -> Iterator[EngineVariant]:
        """Replace the seams process-wide, and put them back on exit."""
        saved = [(module, attr, getattr(module, attr)) for module, attr, _ in self.patches]
        try:
            for module, attr, replacement in self.patches:
                setattr(module, attr, replacement)
            yield self
        finally:
            for module, attr, original in reversed(saved):
                setattr(module, attr, original)

    def engine(self, store: Any, clock: Any, **kwargs: Any) -> engine_module.Engine:
        """An engine of this variant (install the variant first for its seams to apply)."""
        return self.engine_class(store, clock, **kwargs)


# --- 1. a decision from the boolean --------------------------------------------------------

def create_trusting_the_boolean(store: Any, key: str, data: bytes) -> bytes | None:
    """``put_if_absent`` decided by its answer: ``True`` is "mine" without a look, and
    ``False`` is "lost", even when the record read back is the caller's own.

    A loser that finds its own bytes cannot name a winner, so it reports nothing stored
    (``None``): the signal answers ``closed`` and the saver ``busy``. A transient error is
    retried, and the retry's answer trusted too.
    """
    try:
        created = bool(store.put_if_absent(key, data))
    except TransientStoreError:
        created = bool(store.put_if_absent(key, data))
    if created:
        return data
    stored: bytes | None = store.get(key)
    return None if stored == data else stored


# --- 2. a signal path that writes the run record -------------------------------------------

class SignalWritesRunRecord(engine_module.Engine):
    """After delivering, the signal also applies its answer to the run record itself,
    with no claim: the design the outcome record replaced."""

    def signal(self, wait_id: str, payload: str, *, submitted_by: str | None = None,
               secret_detection: bool = True) -> Delivery:
        delivery = super().signal(wait_id, payload, submitted_by=submitted_by,
                                  secret_detection=secret_detection)
        self._apply_into_run(delivery.run_id)
        return delivery

    def answer(self, run_id: str, wait_id: str, payload: str, *,
               submitted_by: str | None = None, secret_detection: bool = True) -> Delivery:
        delivery = super().answer(run_id, wait_id, payload, submitted_by=submitted_by,
                                  secret_detection=secret_detection)
        self._apply_into_run(delivery.run_id)
        return delivery

    def _apply_into_run(self, run_id: str) -> None:
        newest = newest_revision(self.store, run_id)
        if not isinstance(newest.decoded, Found):
            return
        record = newest.decoded.record
        applied, count = apply_outcomes(self.store, record, self.clock.now(), strict=False)
        if not count:
            return
        written = replace(applied, rev=record.rev + 1, status=record.status, jobs=record.jobs)
        creating: Any = self.store
        creating.put_if_absent(keys.revision_key(run_id, written.rev), written.encode())


# --- 3. a consume split over two saves -----------------------------------------------------

def _answer_events(record: RunRecord, after: int) -> tuple[Mapping[str, Any], ...]:
    return tuple(e for e in record.journal[after:] if e.get("type") == ANSWER_APPLIED)


class TwoSaveConsume(FencedSaver):
    """Saves the consume as two revisions: first the ``answer_applied`` events on the old
    record, then the steps. A crash between the two leaves the answer journaled but not
    applied, so the next resume applies it again."""

    def __call__(self, record: RunRecord) -> RunRecord:
        newest = newest_revision(self.store, record.run_id)
        previous = newest.decoded.record if isinstance(newest.decoded, Found) else None
        if previous is not None and previous.rev == record.rev:
            events = _answer_events(record, len(previous.journal))
            if events:
                first = super().__call__(replace(previous, journal=previous.journal + events))
                record = replace(record, rev=first.rev)
        return super().__call__(record)


# --- 4. a replay that journals twice -------------------------------------------------------

def apply_and_rejournal(store: Any, record: RunRecord, now: float, *,
                        strict: bool = True) -> tuple[RunRecord, int]:
    """The consume, plus a fresh ``answer_applied`` for every answer the record already
    holds: a replay after a crash journals them a second time."""
    updated, count = apply_outcomes(store, record, now, strict=strict)
    for name, step in sorted(record.steps.items()):
        output = step.output if isinstance(step.output, dict) else {}
        if step.status != SUCCEEDED or output.get("type") != "wait_for_signal":
            continue
        signal = output.get("signal") or {}
        event = {"type": ANSWER_APPLIED, "job": step.job, "step": name,
                 "waitId": signal.get("waitId", ""), "receiptId": signal.get("id", ""),
                 "payload": output.get("payload")}
        updated = updated.with_event(journal_event(event))
    return updated, count


# --- 5. a resume that ignores the fence ----------------------------------------------------

class UnfencedSaver(FencedSaver):
    """Writes the next revision whatever happened meanwhile: no check that the claim is
    still held, and a lost create is overwritten with ``put`` instead of stopping."""

    def __call__(self, record: RunRecord) -> RunRecord:
        claim, self.claim = self.claim, None  # skip ensure_held, keep the generation
        try:
            new = replace(record, rev=record.rev + 1,
                          generation=claim.generation if claim is not None else 0,
                          updated_at=self.clock.now())
            data = new.encode()
            key = keys.revision_key(new.run_id, new.rev)
            if create_then_read(self.store, key, data) != data:
                self.store.put(key, data)
            return new
        finally:
            self.claim = claim


# --- 6. a conflict in flight taken for "exists" --------------------------

def create_taking_conflict_for_exists(store: Any, key: str, data: bytes) -> bytes | None:
    """A create that fails transiently (S3's 409: a competing create in flight, nothing
    landed) is taken as a lost race: the caller reads what is there and never retries."""
    creating: Any = store
    with contextlib.suppress(TransientStoreError):
        creating.put_if_absent(key, data)
    stored: bytes | None = store.get(key)
    return stored


# --- 7. a backend's own exception taken for a transient one ---------------------------------

def create_retrying_every_error(store: Any, key: str, data: bytes) -> bytes | None:
    """Retries a create after any exception, the backend's own included, as if each were a
    ``TransientStoreError``: a failure of unknown cause is hidden and the call repeated."""
    creating: Any = store
    for _ in range(3):
        try:
            creating.put_if_absent(key, data)
            break
        except Exception:  # the defect: only TransientStoreError says a retry is safe
            continue
    stored: bytes | None = store.get(key)
    return stored


# --- the registry --------------------------------------------------------------------------

# The modules that import create_then_read: settling an outcome, fenced saves, taking a
# claim (where a race is decided), and registering a wait.
_RACE_DECIDERS = ("reference_engine.waits.outcomes", executor_module.__name__,
                  "reference_engine.runs.claims")
_EVERY_CREATE = (*_RACE_DECIDERS, "reference_engine.waits.registration")


def _create_then_read_replaced(
    by: Callable[..., Any], modules: tuple[str, ...],
) -> tuple[tuple[Any, str, Any], ...]:
    """Patches making each of ``modules`` call ``by`` where it calls ``create_then_read``."""
    return tuple((importlib.import_module(path), "create_then_read", by) for path in modules)


def _build() -> dict[str, EngineVariant]:
    variants = [
        EngineVariant(
            "boolean_decision",
            "Decides every create race (outcome, revision, claim) from put_if_absent's "
            "boolean instead of reading the record back.",
            clauses=("C-LOST-1", "C-ENGINE-1"),
            patches=_create_then_read_replaced(create_trusting_the_boolean, _RACE_DECIDERS),
        ),
        EngineVariant(
            "signal_writes_run_record",
            "A signal also writes the answer into the run record, without the claim.",
            engine_class=SignalWritesRunRecord,
        ),
        EngineVariant(
            "consume_in_two_saves",
            "The consume is two revisions: the answer_applied events, then the steps.",
            patches=((executor_module, "FencedSaver", TwoSaveConsume),),
        ),
        EngineVariant(
            "replay_journals_twice",
            "A replay journals answer_applied again for answers the run already holds.",
            patches=((consume_module, "apply_outcomes", apply_and_rejournal),),
        ),
        EngineVariant(
            "conflict_taken_for_exists",
            "Takes a create that failed transiently (a 409 conflict, nothing landed) for a "
            "lost race, and never retries it (C-CREATE-6).",
            clauses=("C-CREATE-6", "C-ENGINE-1"),
            patches=_create_then_read_replaced(create_taking_conflict_for_exists,
                                               _EVERY_CREATE),
        ),
        EngineVariant(
            "retries_every_error",
            "Retries a create after any exception, a backend's own included, as if it were "
            "transient (C-ERR-2).",
            patches=_create_then_read_replaced(create_retrying_every_error, _EVERY_CREATE),
            clauses=("C-ERR-2",),
        ),
        EngineVariant(
            "resume_ignores_fence",
            "Saves never check the claim and overwrite a revision another holder wrote.",
            patches=((executor_module, "FencedSaver", UnfencedSaver),),
        ),
    ]
    return {v.name: v for v in variants}


VARIANTS: Mapping[str, EngineVariant] = _build()

# Module attributes, so ``dw_testing.selftest.engine_variants:<name>`` names a variant.
boolean_decision = VARIANTS["boolean_decision"]
signal_writes_run_record = VARIANTS["signal_writes_run_record"]
consume_in_two_saves = VARIANTS["consume_in_two_saves"]
replay_journals_twice = VARIANTS["replay_journals_twice"]
resume_ignores_fence = VARIANTS["resume_ignores_fence"]
conflict_taken_for_exists = VARIANTS["conflict_taken_for_exists"]
retries_every_error = VARIANTS["retries_every_error"]

ENGINE_VARIANTS: dict[str, MutantInfo] = {
    name: MutantInfo(name, variant.defect, f"{__name__}:{name}", SECTION, level="engine",
                     clauses=variant.clauses)
    for name, variant in VARIANTS.items()
}


# Store mutants (docs/unkillable.md) that no engine-level test can kill, and why: the engine never
# relies on the promise the mutant breaks. Every other store mutant must fail ``-m
# dw_engine`` (tests/engine_conformance checks both directions).
ENGINE_UNKILLABLE_STORE_MUTANTS: Mapping[str, str] = {
    "list_beside_writes_cut_short": "the engine lists runs and deadlines and reads each "
    "record back before it acts, and a pass that misses a run finds it on the next; only "
    "the judge, which holds every list to C-LIST-3, sees the cut-short answer",
    "trims_line_ends": "every value the engine writes is JSON it encodes itself, which "
    "never ends in a CR or LF; only a value ending in a line end shows it (C-VAL-1)",
    "drops_leading_ff": "every value the engine writes is JSON it encodes itself, which "
    "never starts with the byte 0xFF; only a value starting with it shows it (C-VAL-1)",
    "drops_trailing_percent": "the engine builds every key from UUIDs, zero-padded numbers "
    "and run ids it checked first; none ends in '%', so its keys never meet the defect",
    "false_to_winner": "by design: the engine decides every race by reading the record "
    "back, so it must tolerate a False told to the winner (C-ENGINE-1); by C-CREATE-3 only the "
    "store-level suite fails it",
    "plain_value_error_for_bad_keys": "the engine builds every key itself, from ids it "
    "checked first, so no store call of the engine ever meets a refused key",
    "parent_blocked_by_children": "no engine key has keys beneath it: runs, waits, "
    "outcomes and claims each end in their own id or number, so no create ever meets a "
    "key beneath the one it creates",
    "create_overwrites_put_record": "the engine never creates a key that a plain put "
    "wrote: its only puts are a claim holder's beats and release of a lease it created",
    "same_value_wins_again": "a second create with the very same bytes changes nothing "
    "stored, and the engine ignores the True it gets: receipts and lease holders are "
    "fresh UUIDs, and equal timed-out outcomes are one outcome",
    "false_during_concurrent_delete": "the engine deletes a wait record only once its run "
    "has ended, and then a racing create must answer closed whatever it is told",
    "torn_put": "the mutant tears only values over 64 KiB, and the engine's only plain "
    "puts are claim leases of a few hundred bytes",
    "empty_value_as_none": "the engine never writes an empty record",
    "name_prefix_list": "the engine parses every listed key and keeps only the run it "
    "asked for, so a sibling whose name merely starts the same is dropped",
    "unsorted_list": "the engine sorts revision numbers and claim generations itself",
    "accepts_traversal_keys": "the engine refuses unusable run ids before any I/O and "
    "builds every other key from UUIDs and zero-padded numbers, so it never asks for a "
    "traversal key",
    "async_check_then_write_create": "the engine's racing creates come from separate "
    "handles (threads, processes), and every handle has its own event loop in its own "
    "thread, which the mutant's thread lock keeps apart; only creates racing as tasks on "
    "one loop pass its check together",
    "glob_matched_list": "the engine lists only its own roots and run prefixes, built from "
    "fixed words, UUIDs and zero-padded numbers: no glob syntax to misread",
    "empty_prefix_lists_nothing": "the engine always lists under one of its roots, never the "
    "empty prefix, and the suite reaches the store through a non-empty PrefixedStore prefix",
    "first_page_list": "no engine-level test writes anywhere near 1000 records under one "
    "prefix; the store-level suite lists over two pages' worth",
    "truncated_long_segments": "the engine's key segments are fixed words, UUIDs and "
    "zero-padded numbers, far below 128 bytes",
    "cannot_nest_keys": "no engine key lies beneath another: every record is a leaf under "
    "runs/<id>/rev/, waits/, outcomes/ or claims/<id>/",
    "like_matched_list": "the engine lists only its own roots and run prefixes, built from "
    "fixed words, UUIDs and zero-padded numbers: no % or _ to misread",
    "list_includes_the_prefix_key": "every prefix the engine lists names a family or a run, "
    "never a record: no key equals a listed prefix without its '/'",
    "duplicating_list": "the engine rewrites only claim leases, and it reads a listed claim "
    "generation once however often it is named (the numbers go through a sort and a "
    "newest-first pick, the keys through delete, which a second time does nothing)",
}

def variant_named(name: str) -> EngineVariant:
    """A variant by its name or by ``package.module:attr``; a clear error otherwise."""
    if name in VARIANTS:
        return VARIANTS[name]
    if ":" in name:
        found = load_object(name)
        if isinstance(found, EngineVariant):
            return found
        raise ValueError(f"{name} is not an EngineVariant; point {ENV_VAR} at one, such as "
                         f"{__name__}:boolean_decision")
    raise ValueError(f"unknown engine variant {name!r} in {ENV_VAR}; known: "
                     f"{', '.join(VARIANTS)}, or package.module:attr")


def selected_variant(environ: Mapping[str, str] | None = None) -> EngineVariant | None:
    """The variant ``DW_ENGINE_VARIANT`` names, or ``None`` for the reference engine."""
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    return variant_named(value) if value else None


MakeEngine = Callable[..., engine_module.Engine]

__all__ = [
    "ENGINE_UNKILLABLE_STORE_MUTANTS",
    "ENGINE_VARIANTS",
    "ENV_VAR",
    "VARIANTS",
    "EngineVariant",
    "MakeEngine",
    "selected_variant",
    "variant_named",
]
