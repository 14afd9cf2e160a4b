"""A store that lists the way swamp's own in-memory ``ControlPlaneStore`` does, and so must
pass the suite: the parity control of the kill matrix (issue 27).

Its ``list`` returns every key that starts with the prefix string, in the order the keys
were first written. That keeps the core clause (C-LIST-3) for ``""`` and for a prefix
ending in ``/``, the only forms swamp and our engine ever ask for; it declares neither
``segment_prefixes`` nor ``sorted_list``, so the suite never asks more of it.

    --dw-store=dw_testing.selftest.swamp_like:swamp_like_store
"""

from __future__ import annotations

from collections.abc import Mapping

from dw_testing.selftest.mutants.base import MEMORY_CAPABILITIES, CorrectStore, memory_provider

# Everything the correct memory store declares, less the two promises swamp does not make.
SWAMP_LIKE_CAPABILITIES: Mapping[str, bool] = {
    **MEMORY_CAPABILITIES, "segment_prefixes": False, "sorted_list": False,
}


class StartsWithListStore(CorrectStore):
    """A correct store whose ``list`` is ``key.startswith(prefix)``, in write order."""

    def list(self, prefix: str) -> list[str]:
        self.checked_prefix(prefix)  # bad prefixes are still refused (C-KEY-1)
        with self.backing.lock:
            return [key for key in self.backing.records if key.startswith(prefix)]


swamp_like_store = memory_provider("swamp_like_store", StartsWithListStore,
                                   capabilities=SWAMP_LIKE_CAPABILITIES)
