"""Registering a wait (``waits/<id>``) before its step is marked waiting
(docs/explanation/engine.md)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from reference_engine.records import keys
from reference_engine.records.decoding import MAX_RECORD_BYTES, Decoded, Found, Unreadable
from reference_engine.records.io import create_then_read
from reference_engine.records.registration import Registration, decode_registration
from reference_engine.waits.index import file_deadline

UUID_LENGTH = 36


def wait_id_for(run_nonce: str, job: str, step: str, iteration: int, attempt: int) -> str:
    """Deterministic: a re-executed step adopts its own registration after a crash."""
    return str(uuid.uuid5(uuid.UUID(run_nonce), f"{job}/{step}/{iteration}/{attempt}"))


def normalize_wait_id(text: str) -> str | None:
    """A trimmed, lowercased UUID, or ``None`` (the caller answers ``unknown``)."""
    candidate = text.strip().lower()
    try:
        parsed = uuid.UUID(candidate)
    except ValueError:
        return None
    return candidate if str(parsed) == candidate else None


class RegistrationTooLarge(ValueError):
    """The registration would exceed the record limit; the step fails before suspending."""


@dataclass(frozen=True)
class Registered:
    registration: Registration
    raw: bytes


def register(store: Any, registration: Registration) -> Registered:
    """Create ``waits/<id>``, or adopt the one an earlier attempt of this step created,
    then file its deadline in the scheduler's index (a hint: a crash before it only
    leaves the timeout to the next full scan).

    Raises :class:`RegistrationTooLarge`, or ``ValueError`` when the key holds a record
    that is not this step's registration.
    """
    data = registration.encode()
    if len(data) > MAX_RECORD_BYTES:
        raise RegistrationTooLarge(
            f"the registration of wait {registration.wait_id} is {len(data)} bytes, over the "
            f"{MAX_RECORD_BYTES} byte limit; shrink the step's schema"
        )
    stored = create_then_read(store, keys.wait_key(registration.wait_id), data)
    decoded = decode_registration(stored, registration.wait_id)
    if isinstance(decoded, Found):
        mine = decoded.record
        if (mine.run_id, mine.job, mine.step) == (
            registration.run_id, registration.job, registration.step
        ):
            file_deadline(store, mine.run_id, mine.wait_id, mine.deadline)
            return Registered(mine, decoded.raw)
    raise ValueError(
        f"wait {registration.wait_id} is registered to something else; "
        f"cancel the run and start it again: dw cancel {registration.run_id}"
    )


def read_registration(store: Any, wait_id: str) -> Decoded[Registration]:
    return decode_registration(store.get(keys.wait_key(wait_id)), wait_id)


def remove_registration(store: Any, wait_id: str) -> None:
    store.delete(keys.wait_key(wait_id))


def list_registration_ids(store: Any) -> list[str]:
    ids = []
    for key in sorted(store.list(keys.waits_root())):
        wait_id = keys.wait_id_from_key(key)
        if wait_id is not None:
            ids.append(wait_id)
    return ids


__all__ = [
    "Registered", "RegistrationTooLarge", "Unreadable", "list_registration_ids",
    "normalize_wait_id", "read_registration", "register", "remove_registration",
    "wait_id_for",
]
