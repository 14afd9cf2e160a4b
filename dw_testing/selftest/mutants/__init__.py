"""Deliberately broken stores (the kill matrix): every one must fail the conformance suite.

Each mutant is one row of the table below: a name, usable as
``--dw-store=dw_testing.mutants:<name>`` (its provider is in :data:`PROVIDERS`), the class
carrying its one defect, and the clauses it breaks; :data:`STORE_MUTANTS` describes them.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType

from dw_testing.selftest.mutants.base import CorrectStore, Provider, memory_provider
from dw_testing.selftest.mutants.coroutines import AsyncCheckThenWriteCreate
from dw_testing.selftest.mutants.create import (
    CheckThenWriteCreate,
    ConflictReportedAsExists,
    CreateOverwritesPutRecord,
    FalseDuringConcurrentDelete,
    FalseToWinner,
    InPlaceCreate,
    OverwritingCreate,
    SameValueWinsAgain,
)
from dw_testing.selftest.mutants.delete import DeleteBlocksRecreate, DeleteMissingRaises
from dw_testing.selftest.mutants.generated import REGISTERED as _GENERATED
from dw_testing.selftest.mutants.keys import (
    AcceptsTraversalKeys,
    CannotNestKeys,
    CaseFoldedKeys,
    DropsTrailingPercent,
    ParentBlockedByChildren,
    PlainValueErrorForBadKeys,
    TruncatedLongSegments,
)
from dw_testing.selftest.mutants.listing import (
    DirectChildrenList,
    DuplicatingList,
    EmptyPrefixListsNothing,
    FirstPageList,
    GlobMatchedList,
    LikeMatchedList,
    ListBesideWritesCutShort,
    ListIncludesThePrefixKey,
    NamePrefixList,
    UnsortedList,
)
from dw_testing.selftest.mutants.processes import RacyBetweenProcesses, racy_between_processes
from dw_testing.selftest.mutants.readwrite import (
    DropsLeadingFF,
    EmptyValueAsNone,
    EvictsOldRecords,
    LosesWriteOnReopen,
    StaleCacheAfterCreate,
    TornPut,
    TrimsLineEnds,
    TruncatesLargeValues,
    UnsharedHandles,
)
from dw_testing.selftest.mutants.registry import MutantInfo, MutantLevel

# (name, the class carrying the defect, its section, the docs/contract.md clauses it breaks).
_STORE_DEFECTS: tuple[tuple[str, type, str, tuple[str, ...]], ...] = (
    ("check_then_write_create", CheckThenWriteCreate, "Create",
     ("C-CREATE-2", "C-HANDLE-2", "C-CREATE-1")),
    ("racy_between_processes", RacyBetweenProcesses, "Create", ("C-CREATE-2", "C-CHILD-1")),
    ("overwriting_create", OverwritingCreate, "Create", ("C-CREATE-1",)),
    ("in_place_create", InPlaceCreate, "Create", ("C-CREATE-4",)),
    ("create_overwrites_put_record", CreateOverwritesPutRecord, "Create", ("C-CREATE-1",)),
    ("same_value_wins_again", SameValueWinsAgain, "Create", ("C-CREATE-1",)),
    ("false_to_winner", FalseToWinner, "Create", ("C-CREATE-3",)),
    ("conflict_reported_as_exists", ConflictReportedAsExists, "Create", ("C-CREATE-6",)),
    ("false_during_concurrent_delete", FalseDuringConcurrentDelete, "Create", ("C-CREATE-5",)),
    ("async_check_then_write_create", AsyncCheckThenWriteCreate, "Create",
     ("C-CREATE-2", "C-HANDLE-2", "C-CREATE-1")),
    ("unshared_handles", UnsharedHandles, "Read and write", ("C-HANDLE-1",)),
    ("stale_cache_after_create", StaleCacheAfterCreate, "Read and write",
     ("C-HANDLE-1", "C-CREATE-4")),
    ("torn_put", TornPut, "Read and write", ("C-PUT-1",)),
    ("empty_value_as_none", EmptyValueAsNone, "Read and write", ("C-GET-1",)),
    ("truncates_large_values", TruncatesLargeValues, "Read and write", ("C-VAL-1",)),
    ("loses_write_on_reopen", LosesWriteOnReopen, "Read and write",
     ("C-HANDLE-3", "C-LAST-1")),
    ("evicts_old_records", EvictsOldRecords, "Read and write", ("C-LAST-1",)),
    ("trims_line_ends", TrimsLineEnds, "Read and write", ("C-VAL-1",)),
    ("drops_leading_ff", DropsLeadingFF, "Read and write", ("C-VAL-1",)),
    ("delete_blocks_recreate", DeleteBlocksRecreate, "Delete", ("C-CREATE-5",)),
    ("delete_missing_raises", DeleteMissingRaises, "Delete", ("C-DEL-1",)),
    ("name_prefix_list", NamePrefixList, "List", ("C-LIST-4",)),
    ("direct_children_list", DirectChildrenList, "List", ("C-LIST-3",)),
    ("unsorted_list", UnsortedList, "List", ("C-LIST-5",)),
    ("glob_matched_list", GlobMatchedList, "List", ("C-LIST-3",)),
    ("empty_prefix_lists_nothing", EmptyPrefixListsNothing, "List", ("C-LIST-3",)),
    ("first_page_list", FirstPageList, "List", ("C-LIST-3",)),
    ("list_beside_writes_cut_short", ListBesideWritesCutShort, "List", ("C-LIST-3",)),
    ("like_matched_list", LikeMatchedList, "List", ("C-LIST-3", "C-LIST-4")),
    ("list_includes_the_prefix_key", ListIncludesThePrefixKey, "List", ("C-LIST-3",)),
    ("duplicating_list", DuplicatingList, "List", ("C-LIST-3",)),
    ("case_folded_keys", CaseFoldedKeys, "Keys", ("C-KEY-2",)),
    ("accepts_traversal_keys", AcceptsTraversalKeys, "Keys", ("C-KEY-1",)),
    ("truncated_long_segments", TruncatedLongSegments, "Keys", ("C-KEY-1", "C-KEY-2")),
    ("cannot_nest_keys", CannotNestKeys, "Keys", ("C-KEY-3",)),
    ("plain_value_error_for_bad_keys", PlainValueErrorForBadKeys, "Keys", ("C-ERR-1",)),
    ("parent_blocked_by_children", ParentBlockedByChildren, "Keys", ("C-KEY-3",)),
    ("drops_trailing_percent", DropsTrailingPercent, "Keys", ("C-KEY-2",)),
)


# The clause of each mutant's cause, where it is not the first clause it breaks: what the
# first line of a red run on it must name.
_CAUSES: dict[str, str] = {
    # Its writes sit in a cache no handle flushes: they are gone for every handle, the one
    # that wrote them and never closed included, so its first line is a record that did not
    # last (the lasting records); a reopen (C-HANDLE-3) is what the suite's tests show next.
    "loses_write_on_reopen": "C-LAST-1",
    # Long segments cut to one length collide: a key rewritten, whatever the refusals.
    "truncated_long_segments": "C-KEY-2",
}
# One mechanism, two clauses broken about as often (see MutantInfo.also_causes).
_ALSO_CAUSES: dict[str, tuple[str, ...]] = {
    # A check followed by a write lets a second create win over a record just written:
    # told as racing creates (C-CREATE-2) or as a create over a record (C-CREATE-1).
    "check_then_write_create": ("C-CREATE-1",),
    "async_check_then_write_create": ("C-CREATE-1",),
    # LIKE 'prefix%' matches by name, so a bare prefix lists its name-prefixed siblings
    # (C-LIST-4) as well as what its % and _ match (C-LIST-3).
    "like_matched_list": ("C-LIST-4",),
}


def _doc(cls: type) -> str:
    return " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())


# The providers that are not one shared memory backing over the defect's class.
_OWN_PROVIDERS: dict[str, Provider] = {
    "racy_between_processes": racy_between_processes,
    "unshared_handles": memory_provider("unshared_handles", UnsharedHandles, shared=False),
}

#: The provider of each store mutant, by name.
PROVIDERS: Mapping[str, Provider] = MappingProxyType({
    **{name: _OWN_PROVIDERS.get(name) or memory_provider(name, cls)
       for name, cls, _, _ in _STORE_DEFECTS},
    **{name: memory_provider(name, cls) for name, (_, _, _, cls) in _GENERATED.items()},
})


#: The class of each mutant whose defect is all in a :class:`CorrectStore` step over one
#: shared :class:`~dw_testing.selftest.mutants.base.Backing`: it can be layered over another
#: backing (files, for the exec children of :mod:`dw_testing.selftest.mutants.over_exec`).
BACKING_CLASSES: Mapping[str, type[CorrectStore]] = MappingProxyType({
    name: cls for name, cls, _, _ in _STORE_DEFECTS
    if issubclass(cls, CorrectStore) and name not in _OWN_PROVIDERS
})


def __getattr__(name: str) -> Provider:
    """``--dw-store=dw_testing.mutants:<name>`` reaches the provider of the mutant ``name``."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


#: Where users reach the mutants: ``dw_testing.mutants`` re-exports this package.
PUBLIC_MODULE = "dw_testing.mutants"

STORE_MUTANTS: dict[str, MutantInfo] = {
    name: MutantInfo(name, _doc(cls), f"{PUBLIC_MODULE}:{name}", section, clauses=clauses,
                     cause_clause=_CAUSES.get(name, clauses[0]),
                     also_causes=_ALSO_CAUSES.get(name, ()))
    for name, cls, section, clauses in _STORE_DEFECTS
}

#: The generated families (:mod:`dw_testing.selftest.mutants.generated`): each member passes
#: the suite without the differential model, and the kill matrix runs them beside the
#: hand-written mutants. Apart from :data:`STORE_MUTANTS`, which the engine-level matrix
#: also runs: their defects are in key characters, list order and value bytes that no
#: engine key or record holds.
GENERATED_MUTANTS: dict[str, MutantInfo] = {
    name: MutantInfo(name, _doc(cls), f"{PUBLIC_MODULE}:{name}", section, clauses=clauses,
                     family=family, cause_clause=clauses[0])
    for name, (family, section, clauses, cls) in _GENERATED.items()
}

__all__ = [
    "BACKING_CLASSES",
    "PROVIDERS",
    "STORE_MUTANTS",
    "GENERATED_MUTANTS",
    "CorrectStore",
    "MutantInfo",
    "MutantLevel",
    "Provider",
    *PROVIDERS,
]
