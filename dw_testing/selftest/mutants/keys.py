"""Store mutants whose key handling is broken (docs/unkillable.md)."""

from __future__ import annotations

import unicodedata

from dw_testing.selftest.mutants.base import CorrectStore
from reference_engine.errors import InvalidKey, StoreError
from reference_engine.stores.keys import is_under, validate_key, validate_prefix

# Below the 200-byte segment limit, as a filename scheme that keeps 128 bytes would be.
KEPT_SEGMENT_BYTES = 128


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


def _truncated(key: str) -> str:
    kept = []
    for segment in key.split("/"):
        encoded = segment.encode("utf-8")[:KEPT_SEGMENT_BYTES]
        kept.append(encoded.decode("utf-8", errors="ignore"))
    return "/".join(kept)


class TruncatedLongSegments(CorrectStore):
    """Each key segment is stored cut to its first 128 UTF-8 bytes, as a filename scheme with
    a short name limit would: two long segments that differ only after byte 128 are one
    record, and ``list`` shows the cut name."""

    def checked_key(self, key: str, op: str) -> str:
        return _truncated(validate_key(key, op=op))

    def checked_prefix(self, prefix: str) -> str:
        return _truncated(validate_prefix(prefix))


class CannotNestKeys(CorrectStore):
    """A key and a key beneath it cannot both exist, as on a filesystem that stores ``a`` as
    a file and so cannot make ``a/b``: writing either raises ``StoreError``; every other
    call is correct."""

    def _refuse_nesting(self, name: str, op: str) -> None:
        parts = name.split("/")
        ancestors = {"/".join(parts[:i]) for i in range(1, len(parts))}
        with self.backing.lock:
            clash = next((k for k in self.backing.records
                          if k in ancestors or k.startswith(name + "/")), None)
        if clash is not None:
            raise StoreError(f"cannot {op} key of {len(name)} chars: a record on its path "
                             "is a file, not a directory")

    def put(self, key: str, data: bytes) -> None:
        self._refuse_nesting(self.checked_key(key, "put"), "put")
        super().put(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if name in self.backing.records:
                return False
            self._refuse_nesting(name, "put_if_absent")
            return super().put_if_absent(key, data)


class ParentBlockedByChildren(CorrectStore):
    """A create of ``a`` answers False, writing nothing, while a key beneath it (``a/b``)
    exists: the key beneath is taken for a record of ``a``, as an object store's directory
    entry can be."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if any(is_under(other, name) for other in self.backing.records):
                return False
        return super().put_if_absent(key, data)


class PlainValueErrorForBadKeys(CorrectStore):
    """A refused key raises a plain ``ValueError`` naming the rule, not ``InvalidKey``: the
    caller cannot tell a bad key from any other failure by class."""

    def checked_key(self, key: str, op: str) -> str:
        try:
            return validate_key(key, op=op)
        except InvalidKey as exc:
            raise ValueError(str(exc)) from None

    def checked_prefix(self, prefix: str) -> str:
        try:
            return validate_prefix(prefix)
        except InvalidKey as exc:
            raise ValueError(str(exc)) from None


class DropsTrailingPercent(CorrectStore):
    """A ``%`` that ends a key is dropped, as a URL layer does with an escape cut short in
    a request's path: ``a/b%`` and ``a/b`` are one record, listed as ``a/b``. Only a key
    whose last character is ``%`` shows it (C-KEY-2); a list's prefix, sent as a query
    parameter, is kept."""

    def checked_key(self, key: str, op: str) -> str:
        return _drop_trailing_percent(validate_key(key, op=op))


def _drop_trailing_percent(key: str) -> str:
    return key[:-1] if key.endswith("%") and len(key) > 1 else key
