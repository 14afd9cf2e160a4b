"""Deliberately broken stores (the kill matrix): every one must fail the conformance suite.

Each name below is a provider usable as ``--dw-store=dw_testing.mutants:<name>``;
:data:`STORE_MUTANTS` lists them with the one defect each carries.
"""

from __future__ import annotations

import inspect

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
from dw_testing.selftest.mutants.keys import (
    AcceptsTraversalKeys,
    CannotNestKeys,
    CaseFoldedKeys,
    ParentBlockedByChildren,
    PlainValueErrorForBadKeys,
    TruncatedLongSegments,
)
from dw_testing.selftest.mutants.listing import (
    DirectChildrenList,
    EmptyPrefixListsNothing,
    FirstPageList,
    GlobMatchedList,
    NamePrefixList,
    UnsortedList,
)
from dw_testing.selftest.mutants.processes import RacyBetweenProcesses, racy_between_processes
from dw_testing.selftest.mutants.readwrite import (
    EmptyValueAsNone,
    LosesWriteOnReopen,
    StaleCacheAfterCreate,
    TornPut,
    TruncatesLargeValues,
    UnsharedHandles,
)
from dw_testing.selftest.mutants.registry import MutantInfo, MutantLevel

check_then_write_create = memory_provider("check_then_write_create", CheckThenWriteCreate)
overwriting_create = memory_provider("overwriting_create", OverwritingCreate)
in_place_create = memory_provider("in_place_create", InPlaceCreate)
create_overwrites_put_record = memory_provider(
    "create_overwrites_put_record", CreateOverwritesPutRecord
)
same_value_wins_again = memory_provider("same_value_wins_again", SameValueWinsAgain)
false_to_winner = memory_provider("false_to_winner", FalseToWinner)
conflict_reported_as_exists = memory_provider(
    "conflict_reported_as_exists", ConflictReportedAsExists
)
false_during_concurrent_delete = memory_provider(
    "false_during_concurrent_delete", FalseDuringConcurrentDelete
)
unshared_handles = memory_provider("unshared_handles", UnsharedHandles, shared=False)
stale_cache_after_create = memory_provider("stale_cache_after_create", StaleCacheAfterCreate)
torn_put = memory_provider("torn_put", TornPut)
empty_value_as_none = memory_provider("empty_value_as_none", EmptyValueAsNone)
truncates_large_values = memory_provider("truncates_large_values", TruncatesLargeValues)
loses_write_on_reopen = memory_provider("loses_write_on_reopen", LosesWriteOnReopen)
delete_blocks_recreate = memory_provider("delete_blocks_recreate", DeleteBlocksRecreate)
delete_missing_raises = memory_provider("delete_missing_raises", DeleteMissingRaises)
name_prefix_list = memory_provider("name_prefix_list", NamePrefixList)
direct_children_list = memory_provider("direct_children_list", DirectChildrenList)
unsorted_list = memory_provider("unsorted_list", UnsortedList)
case_folded_keys = memory_provider("case_folded_keys", CaseFoldedKeys)
accepts_traversal_keys = memory_provider("accepts_traversal_keys", AcceptsTraversalKeys)
async_check_then_write_create = memory_provider(
    "async_check_then_write_create", AsyncCheckThenWriteCreate
)
glob_matched_list = memory_provider("glob_matched_list", GlobMatchedList)
empty_prefix_lists_nothing = memory_provider("empty_prefix_lists_nothing", EmptyPrefixListsNothing)
first_page_list = memory_provider("first_page_list", FirstPageList)
truncated_long_segments = memory_provider("truncated_long_segments", TruncatedLongSegments)
cannot_nest_keys = memory_provider("cannot_nest_keys", CannotNestKeys)
plain_value_error_for_bad_keys = memory_provider("plain_value_error_for_bad_keys",
                                                 PlainValueErrorForBadKeys)
parent_blocked_by_children = memory_provider("parent_blocked_by_children", ParentBlockedByChildren)

# (name, the class carrying the defect, its section, the docs/contract.md clauses it breaks).
_STORE_DEFECTS: tuple[tuple[str, type, str, tuple[str, ...]], ...] = (
    ("check_then_write_create", CheckThenWriteCreate, "Create", ("C-CREATE-2", "C-HANDLE-2")),
    ("racy_between_processes", RacyBetweenProcesses, "Create", ("C-CREATE-2", "C-CHILD-1")),
    ("overwriting_create", OverwritingCreate, "Create", ("C-CREATE-1",)),
    ("in_place_create", InPlaceCreate, "Create", ("C-CREATE-4",)),
    ("create_overwrites_put_record", CreateOverwritesPutRecord, "Create", ("C-CREATE-1",)),
    ("same_value_wins_again", SameValueWinsAgain, "Create", ("C-CREATE-1",)),
    ("false_to_winner", FalseToWinner, "Create", ("C-CREATE-3",)),
    ("conflict_reported_as_exists", ConflictReportedAsExists, "Create", ("C-CREATE-6",)),
    ("false_during_concurrent_delete", FalseDuringConcurrentDelete, "Create", ("C-CREATE-5",)),
    ("async_check_then_write_create", AsyncCheckThenWriteCreate, "Create",
     ("C-CREATE-2", "C-HANDLE-2")),
    ("unshared_handles", UnsharedHandles, "Read and write", ("C-HANDLE-1",)),
    ("stale_cache_after_create", StaleCacheAfterCreate, "Read and write",
     ("C-HANDLE-1", "C-CREATE-4")),
    ("torn_put", TornPut, "Read and write", ("C-PUT-1",)),
    ("empty_value_as_none", EmptyValueAsNone, "Read and write", ("C-GET-1",)),
    ("truncates_large_values", TruncatesLargeValues, "Read and write", ("C-VAL-1",)),
    ("loses_write_on_reopen", LosesWriteOnReopen, "Read and write", ("C-HANDLE-3",)),
    ("delete_blocks_recreate", DeleteBlocksRecreate, "Delete", ("C-CREATE-5",)),
    ("delete_missing_raises", DeleteMissingRaises, "Delete", ("C-DEL-1",)),
    ("name_prefix_list", NamePrefixList, "List", ("C-LIST-1",)),
    ("direct_children_list", DirectChildrenList, "List", ("C-LIST-1",)),
    ("unsorted_list", UnsortedList, "List", ("C-LIST-2",)),
    ("glob_matched_list", GlobMatchedList, "List", ("C-LIST-1",)),
    ("empty_prefix_lists_nothing", EmptyPrefixListsNothing, "List", ("C-LIST-1",)),
    ("first_page_list", FirstPageList, "List", ("C-LIST-1",)),
    ("case_folded_keys", CaseFoldedKeys, "Keys", ("C-KEY-2",)),
    ("accepts_traversal_keys", AcceptsTraversalKeys, "Keys", ("C-KEY-1",)),
    ("truncated_long_segments", TruncatedLongSegments, "Keys", ("C-KEY-1", "C-KEY-2")),
    ("cannot_nest_keys", CannotNestKeys, "Keys", ("C-KEY-3",)),
    ("plain_value_error_for_bad_keys", PlainValueErrorForBadKeys, "Keys", ("C-ERR-1",)),
    ("parent_blocked_by_children", ParentBlockedByChildren, "Keys", ("C-KEY-3",)),
)


def _doc(cls: type) -> str:
    return " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())


#: Where users reach the mutants: ``dw_testing.mutants`` re-exports this package.
PUBLIC_MODULE = "dw_testing.mutants"

STORE_MUTANTS: dict[str, MutantInfo] = {
    name: MutantInfo(name, _doc(cls), f"{PUBLIC_MODULE}:{name}", section, clauses=clauses)
    for name, cls, section, clauses in _STORE_DEFECTS
}

__all__ = [
    "STORE_MUTANTS",
    "CorrectStore",
    "MutantInfo",
    "MutantLevel",
    "Provider",
    "accepts_traversal_keys",
    "async_check_then_write_create",
    "cannot_nest_keys",
    "case_folded_keys",
    "check_then_write_create",
    "conflict_reported_as_exists",
    "create_overwrites_put_record",
    "delete_blocks_recreate",
    "delete_missing_raises",
    "direct_children_list",
    "empty_prefix_lists_nothing",
    "empty_value_as_none",
    "false_during_concurrent_delete",
    "false_to_winner",
    "first_page_list",
    "glob_matched_list",
    "in_place_create",
    "loses_write_on_reopen",
    "name_prefix_list",
    "overwriting_create",
    "parent_blocked_by_children",
    "plain_value_error_for_bad_keys",
    "racy_between_processes",
    "same_value_wins_again",
    "stale_cache_after_create",
    "torn_put",
    "truncated_long_segments",
    "truncates_large_values",
    "unshared_handles",
    "unsorted_list",
]
