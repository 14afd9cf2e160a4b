"""The rule the object stores share: which failures are whose, and how each is worded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reference_engine.errors import StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.bucket_store import BucketStore, Failure, failure_of_status


@pytest.mark.parametrize(("status", "failure"), [
    (0, Failure.OTHER),  # no HTTP answer at all
    (400, Failure.OTHER),
    (401, Failure.DENIED),
    (403, Failure.DENIED),
    (404, Failure.OTHER),
    (407, Failure.OTHER),
    (408, Failure.TRANSIENT),
    (409, Failure.TRANSIENT),
    (410, Failure.OTHER),
    (428, Failure.OTHER),
    (429, Failure.TRANSIENT),
    (430, Failure.OTHER),
    (499, Failure.OTHER),
    (500, Failure.TRANSIENT),
    (503, Failure.TRANSIENT),
])
def test_an_http_status_alone_decides_at_its_limits(status: int, failure: Failure) -> None:
    assert failure_of_status(status) is failure


class _Recorded(BucketStore):
    """A bucket store over a fixed list of object names; every failure is a plain OTHER."""

    service = "Demo"
    scheme = "demo"
    access_control = "the demo ACL"

    def __init__(self, bucket: str, prefix: str, names: list[str]) -> None:
        super().__init__(bucket, prefix)
        self.names = names
        self.searched: list[str] = []

    def _mapped(self, exc: BaseException, op: str, key: str) -> StoreError:
        return self._failed(Failure.OTHER, op, key, type(exc).__name__)

    def _names_under(self, search: str) -> Iterator[str]:
        self.searched.append(search)
        for name in self.names:
            if name == "boom":
                raise OSError("server text that must not reach a message")
            yield name


@pytest.mark.parametrize(("failure", "error", "advice"), [
    (Failure.NO_BUCKET, StoreUnavailable, "bucket 'bkt' was not found: create it or fix the URI"),
    (Failure.DENIED, StoreUnavailable, "check the credentials and the demo ACL"),
    (Failure.TRANSIENT, TransientStoreError, "retry the call"),
])
def test_each_failure_names_store_call_key_and_what_to_do(
    failure: Failure, error: type[StoreError], advice: str
) -> None:
    raised = _Recorded("bkt", "/p/", [])._failed(failure, "get", "runs/r1", "Code, HTTP 418")
    assert type(raised) is error
    assert str(raised) == (
        f"Demo store demo://bkt/p: get of key 'runs/r1' failed (Code, HTTP 418); {advice}")
    assert (raised.op, raised.key) == ("get", "runs/r1")


def test_an_unclassified_failure_is_a_plain_store_error_and_advice_can_be_given() -> None:
    store = _Recorded("bkt", "", [])
    plain = store._failed(Failure.OTHER, "put", "k", "Odd")
    assert type(plain) is StoreError
    assert str(plain) == "Demo store demo://bkt/: put of key 'k' failed (Odd)"
    told = store._failed(Failure.DENIED, "put", "k", "no token", "log in first")
    assert str(told).endswith("failed (no token); log in first")


def test_a_store_needs_a_bucket() -> None:
    with pytest.raises(StoreUnavailable, match=r"Demo store needs a bucket: demo://bucket/prefix"):
        _Recorded("", "p", [])


def test_list_keeps_only_names_that_are_keys_under_the_prefix() -> None:
    store = _Recorded("bkt", "p", [
        "p/_control/a/b", "p/_control/a/c/", "p/_control/a//d", "p/_control/ab/x", "p/_control/a/e",
    ])
    assert store.list("a/") == ["a/b", "a/e"]
    assert store.searched == ["p/_control/a/"]
    assert store.list("") == ["a/b", "a/e", "ab/x"]


def test_a_failed_listing_is_mapped_and_names_the_prefix() -> None:
    with pytest.raises(StoreError, match=r"list of key 'a' failed \(OSError\)$") as info:
        _Recorded("bkt", "", ["boom"]).list("a")
    assert "server text" not in str(info.value)
