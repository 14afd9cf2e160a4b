"""Store mutants whose write-once create is broken (docs/unkillable.md)."""

from __future__ import annotations

from dw_testing.selftest.mutants.base import Backing, CorrectStore, widen_race_window

CHUNK = 64 * 1024


class CheckThenWriteCreate(CorrectStore):
    """Create checks for the key, then writes in a second step: two creates can both win."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            exists = name in self.backing.records
        if exists:
            return False
        widen_race_window()
        with self.backing.lock:
            self.backing.records[name] = bytes(data)
        return True


class OverwritingCreate(CorrectStore):
    """Create reports correctly whether the key was absent, but always writes its value."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            existed = name in self.backing.records
            self.backing.records[name] = bytes(data)
            return not existed


class InPlaceCreate(CorrectStore):
    """Create claims the key atomically but fills the record in place, chunk by chunk.

    A reader can see an empty or partial record while the create runs.
    """

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        payload = bytes(data)
        with self.backing.lock:
            if name in self.backing.records:
                return False
            self.backing.records[name] = b""
        for end in range(CHUNK, len(payload), CHUNK):
            widen_race_window()
            with self.backing.lock:
                self.backing.records[name] = payload[:end]
        widen_race_window()
        with self.backing.lock:
            self.backing.records[name] = payload
        return True


class CreateOverwritesPutRecord(CorrectStore):
    """Create only sees records that a create wrote, so it overwrites a record from ``put``."""

    def __init__(self, backing: Backing) -> None:
        super().__init__(backing)
        self.created = backing.marked["created"]

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            if name in self.created:
                return False
            self.backing.records[name] = bytes(data)
            self.created.add(name)
            return True

    def delete(self, key: str) -> None:
        name = self.checked_key(key, "delete")
        with self.backing.lock:
            self.backing.records.pop(name, None)
            self.created.discard(name)


class SameValueWinsAgain(CorrectStore):
    """A create of an existing key with the very same bytes "wins" again (returns True)."""

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        with self.backing.lock:
            existing = self.backing.records.get(name)
            if existing is not None:
                return existing == bytes(data)
            self.backing.records[name] = bytes(data)
            return True


class FalseToWinner(CorrectStore):
    """When creates of one key overlap, the create that wrote the record also answers False.

    No fault is involved: sequential creates are right, but a race has no winner.
    """

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        in_flight = self.backing.in_flight["put_if_absent"]
        with self.backing.lock:
            in_flight[name] += 1
        widen_race_window()
        with self.backing.lock:
            contended = in_flight[name] > 1
            created = name not in self.backing.records
            if created:
                self.backing.records[name] = bytes(data)
        widen_race_window()
        with self.backing.lock:
            in_flight[name] -= 1
        return created and not contended


class ConflictReportedAsExists(CorrectStore):
    """A create that meets another create still in flight answers False at once.

    Nothing has landed yet, so the loser's own read right after its False finds no
    record: an S3 409 "conflict" reported as "exists".
    """

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        in_flight = self.backing.in_flight["put_if_absent"]
        with self.backing.lock:
            if in_flight[name] > 0:
                return False
            in_flight[name] += 1
        try:
            widen_race_window()
            with self.backing.lock:
                if name in self.backing.records:
                    return False
                self.backing.records[name] = bytes(data)
                return True
        finally:
            with self.backing.lock:
                in_flight[name] -= 1


class FalseDuringConcurrentDelete(CorrectStore):
    """A create that meets a delete of the same key in flight answers False.

    Even when the key was absent all along, so False can never be right there.
    """

    def delete(self, key: str) -> None:
        name = self.checked_key(key, "delete")
        deleting = self.backing.in_flight["delete"]
        with self.backing.lock:
            deleting[name] += 1
        try:
            widen_race_window()
            with self.backing.lock:
                self.backing.records.pop(name, None)
        finally:
            with self.backing.lock:
                deleting[name] -= 1

    def put_if_absent(self, key: str, data: bytes) -> bool:
        name = self.checked_key(key, "put_if_absent")
        deleting = self.backing.in_flight["delete"]
        with self.backing.lock:
            if deleting[name] > 0:
                return False
        return super().put_if_absent(key, data)
