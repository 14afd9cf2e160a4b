"""Store mutants whose key handling is broken (SPEC §6.6 "Keys")."""

from __future__ import annotations

import unicodedata

from dw_testing.selftest.mutants.base import CorrectStore
from reference_engine.stores.keys import validate_key, validate_prefix


def _caseless(text: str) -> str:
    # Unicode's canonical caseless matching (D145): NFD(casefold(NFD(text))), the way a
    # case-insensitive filesystem or database collation compares names.
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).casefold())


class CaseFoldedKeys(CorrectStore):
    """Keys are compared caselessly, by Unicode canonical caseless matching: ``Key`` and
    ``key`` collide, and so do the NFC and NFD spellings of one name."""

    def checked_key(self, key: str, op: str) -> str:
        return _caseless(validate_key(key, op=op))

    def checked_prefix(self, prefix: str) -> str:
        return _caseless(validate_prefix(prefix))


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
