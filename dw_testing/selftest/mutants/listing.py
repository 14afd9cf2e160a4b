"""Store mutants whose ``list`` is broken (SPEC §6.6 "List")."""

from __future__ import annotations

from dw_testing.selftest.mutants.base import CorrectStore
from reference_engine.stores.keys import is_under


class NamePrefixList(CorrectStore):
    """``list`` matches the prefix as a string, not by whole segments (``r/list`` finds
    ``r/listing`` and ``r/list`` itself)."""

    def list(self, prefix: str) -> list[str]:
        self.checked_prefix(prefix)
        with self.backing.lock:
            return sorted(k for k in self.backing.records if k.startswith(prefix))


class DirectChildrenList(CorrectStore):
    """``list`` returns only keys one segment below the prefix, not nested ones."""

    def list(self, prefix: str) -> list[str]:
        normalised = self.checked_prefix(prefix)
        depth = 0 if normalised == "" else normalised.count("/") + 1
        return [k for k in super().list(prefix) if k.count("/") == depth]


class UnsortedList(CorrectStore):
    """``list`` returns the right keys in the order they were first written."""

    def list(self, prefix: str) -> list[str]:
        normalised = self.checked_prefix(prefix)
        with self.backing.lock:
            return [k for k in self.backing.records if is_under(k, normalised)]
