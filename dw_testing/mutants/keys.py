"""Store mutants whose key handling is broken (SPEC §6.6 "Keys")."""

from __future__ import annotations

from dw_testing.mutants.base import CorrectStore
from reference_engine.stores.keys import validate_key, validate_prefix


class CaseFoldedKeys(CorrectStore):
    """Keys are case-folded before they reach the records: ``Key`` and ``key`` collide."""

    def checked_key(self, key: str, op: str) -> str:
        return validate_key(key, op=op).casefold()

    def checked_prefix(self, prefix: str) -> str:
        return validate_prefix(prefix).casefold()


def _hide_traversal(key: str) -> str:
    return "/".join("dot" if segment in (".", "..") else segment for segment in key.split("/"))


class AcceptsTraversalKeys(CorrectStore):
    """``.`` and ``..`` segments pass the key check; every other rule still holds."""

    def checked_key(self, key: str, op: str) -> str:
        if isinstance(key, str):
            validate_key(_hide_traversal(key), op=op)
            return key
        return validate_key(key, op=op)

    def checked_prefix(self, prefix: str) -> str:
        if isinstance(prefix, str):
            validate_prefix(_hide_traversal(prefix))
            return prefix.rstrip("/") if prefix != "" else ""
        return validate_prefix(prefix)
