"""What the object stores (S3, GCS) share: records under one prefix of one bucket.

Records live at ``<prefix>/_control/<key>``. Both stores list by paging through object
names, and both turn a backend failure into one of four verdicts with one wording: the
store, the call, the key, the backend's code or HTTP status, then what to do.
"""

from __future__ import annotations

import abc
import builtins
import enum
from collections.abc import Iterator
from typing import ClassVar

from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.keys import key_problem, validate_object_key, validate_prefix

CONTROL_SEGMENT = "_control"
LIST_PAGE_SIZE = 1000


class Failure(enum.Enum):
    """What a failed backend call means for the caller."""

    NO_BUCKET = enum.auto()
    DENIED = enum.auto()
    TRANSIENT = enum.auto()
    OTHER = enum.auto()


_ERROR_OF: dict[Failure, type[StoreError]] = {
    Failure.NO_BUCKET: StoreUnavailable,
    Failure.DENIED: StoreUnavailable,
    Failure.TRANSIENT: TransientStoreError,
    Failure.OTHER: StoreError,
}


def failure_of_status(status: int) -> Failure:
    """The verdict an HTTP status alone gives: refused access (401, 403) needs other
    credentials; a server error, timeout, conflict or throttle (5xx, 408, 409, 429) may pass."""
    if status in (401, 403):
        return Failure.DENIED
    if status >= 500 or status in (408, 409, 429):
        return Failure.TRANSIENT
    return Failure.OTHER


class BucketStore(abc.ABC):
    """A bucket prefix as a ControlPlaneStore; a subclass does the I/O of one service."""

    service: ClassVar[str]  # as messages name it: "S3"
    scheme: ClassVar[str]  # of its URIs: "s3"
    access_control: ClassVar[str]  # what grants access besides credentials, named on a 403

    def __init__(self, bucket: str, prefix: str) -> None:
        if not bucket:
            raise StoreUnavailable(
                f"{self.service} store needs a bucket: {self.scheme}://bucket/prefix", op="open")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._root = f"{self.prefix}/{CONTROL_SEGMENT}/" if self.prefix else f"{CONTROL_SEGMENT}/"
        self.list_page_size = LIST_PAGE_SIZE

    @property
    def where(self) -> str:
        """How messages name this store: ``S3 store s3://bucket/prefix``."""
        return f"{self.service} store {self.scheme}://{self.bucket}/{self.prefix}"

    def _object_name(self, key: str, op: str) -> str:
        """The object name of ``key``; an invalid or over-long key is refused before any I/O."""
        return self._root + validate_object_key(key, self._root, op=op, service=self.service)

    # -- error mapping -------------------------------------------------------------------------

    def _failed(self, failure: Failure, op: str, key: str, detail: str,
                advice: str | None = None) -> StoreError:
        """The error for ``failure``: store, call, key and ``detail`` (a code or status, never
        server text, a payload or a credential), then ``advice`` or the verdict's own."""
        if advice is None:
            advice = {
                Failure.NO_BUCKET: f"bucket {self.bucket!r} was not found: create it or fix the "
                                   "URI",
                Failure.DENIED: f"check the credentials and {self.access_control}",
                Failure.TRANSIENT: "retry the call",
                Failure.OTHER: "",
            }[failure]
        message = f"{self.where}: {op} of key {key!r} failed ({detail})"
        return _ERROR_OF[failure](message + (f"; {advice}" if advice else ""), op=op, key=key)

    def _past_deadline(self, op: str, key: str) -> StoreError:
        """The one-line error of a call that ran out of its deadline."""
        deadline = getattr(self, "deadline", None)
        within = f"within the {deadline:g} s deadline" if deadline else "in time"
        return TransientStoreError(
            f"{self.where}: {op} of key {key!r} got no answer {within}; check the endpoint "
            "is up and answering, or give it longer with deadline=SECONDS in the store URI",
            op=op, key=key)

    @abc.abstractmethod
    def _mapped(self, exc: BaseException, op: str, key: str) -> StoreError:
        """The store error for a failed backend call."""

    # -- listing -------------------------------------------------------------------------------

    @abc.abstractmethod
    def _names_under(self, search: str) -> Iterator[str]:
        """Every object name that starts with ``search``, a page of ``list_page_size`` at a time."""

    def list(self, prefix: str) -> builtins.list[str]:
        normalised = validate_prefix(prefix)
        search = self._root + (normalised + "/" if normalised else "")
        keys: set[str] = set()
        try:
            for name in self._names_under(search):
                key = name[len(self._root):]
                # Skip objects no valid key maps to, e.g. console "folder/" markers.
                if name.startswith(search) and key_problem(key) is None:
                    keys.add(key)
        except Exception as exc:
            raise self._mapped(exc, "list", normalised) from None
        return sorted(keys)
