"""The clause of the cause of a wrong answer, and its fix in one line.

The symptom is where a wrong answer shows (a list missing a key, a read of ``None``); the
cause is what the store did to produce it. A key answered with another key's record, or
listed with other code points or fewer segments, is a key rewritten (C-KEY-2, or C-KEY-3
when one key nests under the other); a value that differs from every value written in any
byte is C-VAL-1; a record gone that nobody deleted is a delete that reached another key
(C-DEL-1), a handle that did not see another's write (C-HANDLE-1) or a record that expired
(C-LAST-1).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import unquote

FIXES: dict[str, str] = {
    "C-KEY-2": "store each key exactly as given: encode it (percent- or hex-encode each "
               "segment) instead of folding case, normalising, decoding or trimming it",
    "C-KEY-3": "map keys to backend names injectively, so a key and the keys beneath it "
               "are separate records",
    "C-VAL-1": "store and return the value's bytes unchanged: no text decoding, no trimming, "
               "no size cap",
    "C-GET-1": "return the whole record, or None when there is none",
    "C-PUT-1": "make put replace the whole record atomically, visible to every reader at once",
    "C-DEL-1": "delete only the exact key given: no prefix or pattern match, no cascade",
    "C-HANDLE-1": "drop per-handle caches (or invalidate them on every write) so every call "
                  "reads the backend",
    "C-CREATE-1": "make put_if_absent one conditional write (If-None-Match: *, INSERT ... ON "
                  "CONFLICT DO NOTHING), never a check followed by a write",
    "C-CREATE-2": "make put_if_absent one conditional write the backend decides atomically, "
                  "so exactly one racer creates the record",
    "C-CREATE-3": "return True exactly when this call created the record",
    "C-CREATE-4": "write the record elsewhere and link or swap it in whole, so no reader "
                  "sees it half written",
    "C-CREATE-6": "retry a backend's conflict inside the store (or raise "
                  "TransientStoreError); answer False only when a record exists",
    "C-HANDLE-3": "keep every write across close and reopen: flush or sync before a handle "
                  "closes, and never drop other handles' writes",
    "C-CREATE-5": "let delete remove the record entirely, so the key can be created again",
    "C-LIST-3": "return every key under the prefix once and in full, and only keys that exist",
    "C-LIST-3/pages": "follow every page of the backend's listing (its continuation token) "
                      "until none is left",
    "C-LIST-4": "match a bare prefix by whole segments, or declare segment_prefixes = false",
    "C-LIST-5": "sort the keys by code point before returning them (sorted() in Python), or "
                "declare sorted_list = false",
    "C-LAST-1": "keep records until they are deleted: no expiry (TTL) and no eviction",
}


@dataclass(frozen=True)
class Blame:
    """A judged wrong answer: the store, the handle, the call, what the model allowed, and
    the clause of the cause with its fix. Keys are shown relative to the test's prefix."""

    store: str
    handle: str
    call: str
    allowed: str
    clause: str
    fix: str
    symptom: str = ""

    def headline(self) -> str:
        shows = self.symptom and self.symptom != self.clause
        symptom = f" (seen as {self.symptom})" if shows else ""
        return (f"store {self.store} broke {clause_id(self.clause)}{symptom}: on handle "
                f"{self.handle}, {self.call}; the contract's model allowed {self.allowed}. "
                f"Fix: {self.fix}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Blame:
        return cls(**{k: str(row.get(k, "")) for k in
                      ("store", "handle", "call", "allowed", "clause", "fix", "symptom")})


def fix_for(clause: str) -> str:
    return FIXES.get(clause, FIXES.get(clause.split("/")[0], "keep the clause"))


def clause_id(clause: str) -> str:
    """``C-LIST-3/pages`` is C-LIST-3 with a more precise fix."""
    return clause.split("/")[0]


def _folds(key: str) -> set[str]:
    nfc = unicodedata.normalize("NFC", key)
    return {nfc.casefold(), unicodedata.normalize("NFKC", key).casefold(), unquote(key),
            key.strip(), "/".join(s.strip() for s in key.split("/")),
            nfc.casefold().replace("%", "").replace("+", " ")}


def twins(a: str, b: str) -> bool:
    """``a`` and ``b`` differ, yet a store that folds, normalises, decodes, trims or cuts
    keys would take them for one key."""
    if a == b:
        return False
    if _folds(a) & _folds(b):
        return True
    shorter, longer = sorted((a, b), key=len)
    return len(shorter) >= 32 and longer.startswith(shorter) and "/" not in longer[len(shorter):]


def nested(a: str, b: str) -> bool:
    """One key lies beneath the other (C-KEY-3)."""
    return a.startswith(b + "/") or b.startswith(a + "/")


def fewer_segments(got: str, written: str) -> bool:
    """``got`` is ``written`` cut at a segment boundary, or with segments left out."""
    parts, whole = got.split("/"), written.split("/")
    return len(parts) < len(whole) and all(p in whole for p in parts)


def key_cause(got: str, candidates: Iterable[str], *,
              listed: bool = False) -> tuple[str, str] | None:
    """The clause and the written key ``got`` stands for, when ``got`` is a rewritten key.
    A ``listed`` key may also come back with fewer segments than the key written."""
    candidates = list(candidates)
    for key in candidates:
        if twins(got, key) or (listed and fewer_segments(got, key)):
            return "C-KEY-2", key
    for key in candidates:
        if nested(got, key):
            return "C-KEY-3", key
    return None


def torn_between(got: bytes, new: bytes, old: bytes) -> bool:
    """``got`` is the start of ``new`` and the rest of ``old`` (a record overwritten in place,
    read halfway), and neither of them."""
    if got in (new, old) or len(got) not in (len(new), len(old)):
        return False
    cut = next((i for i, (x, y) in enumerate(zip(got, new, strict=False)) if x != y),
               min(len(got), len(new)))
    return cut > 0 and got[cut:] == old[cut:len(got)]


def first_difference(got: bytes, wanted: bytes) -> str:
    """Where two values part: their lengths and the first differing byte."""
    at = next((i for i, (x, y) in enumerate(zip(got, wanted, strict=False)) if x != y),
              min(len(got), len(wanted)))
    mine = f"0x{got[at]:02x}" if at < len(got) else "the end"
    theirs = f"0x{wanted[at]:02x}" if at < len(wanted) else "the end"
    return (f"{len(got)} bytes against {len(wanted)}; first difference at byte {at}: "
            f"{mine} where the write had {theirs}")
