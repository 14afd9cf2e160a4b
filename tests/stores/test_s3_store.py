"""What is special about the S3 store, against real moto servers (no boto3 mocking)."""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto")

from dw_testing.emulators import PROVIDERS
from dw_testing.emulators.moto import GRACE_ENV, make_app, moto_raw, moto_serialized
from dw_testing.kit.fault_proxy import FaultProxy, Faults
from dw_testing.kit.spec import StoreSpec
from dw_testing.kit.together import run_together
from reference_engine.errors import (
    StoreError,
    StoreUnavailable,
    TransientStoreError,
)
from reference_engine.stores.registry import open_store
from reference_engine.stores.s3 import S3Store

SECRET_ID = "AKIADWTESTINGDISTINCT"
SECRET_KEY = "sk-dw-testing-never-print-me"
CREDENTIALS = {"aws_access_key_id": SECRET_ID, "aws_secret_access_key": SECRET_KEY}


@pytest.fixture(scope="module")
def serialized() -> Iterator[StoreSpec]:
    with moto_serialized() as spec:
        yield spec


@pytest.fixture
def store(serialized: StoreSpec) -> S3Store:
    handle = serialized.factory()
    assert isinstance(handle, S3Store)
    handle.prefix = f"t-{uuid.uuid4().hex[:8]}"
    handle._root = f"{handle.prefix}/_control/"
    return handle


# -- an in-process moto behind a wrapper that answers chosen create requests itself -----------


@dataclass
class Injector:
    """WSGI wrapper: the next create requests get the planned (status, S3 code) answers."""

    app: Callable[..., Iterable[bytes]]
    plan: list[tuple[int, str, str]] = field(default_factory=list)
    answered: int = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        is_create = environ["REQUEST_METHOD"] == "PUT" and environ.get("HTTP_IF_NONE_MATCH") == "*"
        if not (is_create and self.plan):
            return self.app(environ, start_response)
        from werkzeug.wsgi import get_input_stream

        get_input_stream(environ).read()
        status, code, extra = self.plan.pop(0)
        self.answered += 1
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>injected by the test</Message>{extra}</Error>"
        ).encode()
        start_response(f"{status} Injected", [("Content-Type", "application/xml"),
                                              ("Content-Length", str(len(body)))])
        return [body]


@pytest.fixture(scope="module")
def injected() -> Iterator[tuple[Injector, str]]:
    from werkzeug.serving import make_server

    app, _ = make_app("serialized")
    injector = Injector(app)
    server = make_server("127.0.0.1", 0, injector, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_port}"
    S3Store("dw-inject", endpoint_url=endpoint, region="us-east-1",
            client_kwargs=CREDENTIALS)._client.create_bucket(Bucket="dw-inject")
    try:
        yield injector, endpoint
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def _injected_store(injected: tuple[Injector, str], **kwargs: Any) -> S3Store:
    injector, endpoint = injected
    injector.plan.clear()
    injector.answered = 0
    return S3Store("dw-inject", f"t-{uuid.uuid4().hex[:8]}", endpoint_url=endpoint,
                   region="us-east-1", client_kwargs=CREDENTIALS, **kwargs)


# -- the create ------------------------------------------------------------------------------


def test_an_existing_record_answers_false_and_stays_unchanged(store: S3Store) -> None:
    assert store.put_if_absent("k", b"first")
    assert not store.put_if_absent("k", b"second")
    store.put("p", b"plain put")
    assert not store.put_if_absent("p", b"create over a put")
    assert store.get("k") == b"first"
    assert store.get("p") == b"plain put"


def test_a_409_conflict_is_retried_not_reported_false(injected: tuple[Injector, str]) -> None:
    store = _injected_store(injected, conflict_backoff=0.0)
    injector = injected[0]
    injector.plan[:] = [(409, "ConditionalRequestConflict", "")]
    assert store.put_if_absent("k", b"v") is True
    assert injector.answered == 1
    assert store.get("k") == b"v"


def test_a_409_on_an_existing_key_ends_in_false_after_the_retry(
    injected: tuple[Injector, str],
) -> None:
    store = _injected_store(injected, conflict_backoff=0.0)
    store.put("k", b"there")
    injected[0].plan[:] = [(409, "ConditionalRequestConflict", "")]
    assert store.put_if_absent("k", b"v") is False
    assert store.get("k") == b"there"


@pytest.mark.dw_clause("C-ERR-1", "C-CREATE-6")
def test_endless_409s_raise_transient_never_false(injected: tuple[Injector, str]) -> None:
    store = _injected_store(injected, conflict_backoff=0.0, conflict_retries=3)
    injector = injected[0]
    injector.plan[:] = [(409, "ConditionalRequestConflict", "")] * 3
    with pytest.raises(TransientStoreError, match="409") as info:
        store.put_if_absent("k", b"v")
    assert (info.value.op, info.value.key) == ("put_if_absent", "k")
    assert injector.answered == 3
    assert store.get("k") is None


def test_a_server_error_after_retries_is_transient(injected: tuple[Injector, str]) -> None:
    store = _injected_store(injected, max_attempts=1)
    injected[0].plan[:] = [(503, "ServiceUnavailable", "")]
    with pytest.raises(TransientStoreError, match="ServiceUnavailable, HTTP 503"):
        store.put_if_absent("k", b"v")


@pytest.mark.dw_clause("C-ERR-1")
def test_credentials_never_reach_a_message(injected: tuple[Injector, str]) -> None:
    store = _injected_store(injected, max_attempts=1)
    # AWS echoes the access key id in the error body of an auth failure.
    injected[0].plan[:] = [(403, "InvalidAccessKeyId", f"<AWSAccessKeyId>{SECRET_ID}"
                                                       "</AWSAccessKeyId>")]
    with pytest.raises(StoreUnavailable, match="InvalidAccessKeyId") as info:
        store.put_if_absent("k", b"payload-bytes")
    missing_bucket = S3Store("dw-no-such-bucket", endpoint_url=injected[1], region="us-east-1",
                             client_kwargs=CREDENTIALS)
    with pytest.raises(StoreUnavailable,
                       match="bucket 'dw-no-such-bucket' was not found: create it") as missing:
        missing_bucket.put("k", b"payload-bytes")
    for text in (str(info.value), str(missing.value), repr(store), repr(missing_bucket)):
        assert SECRET_ID not in text and SECRET_KEY not in text
        assert "payload-bytes" not in text
    assert info.value.__suppress_context__ and info.value.__cause__ is None


# -- reads and lists -------------------------------------------------------------------------


def test_list_follows_pages(store: S3Store) -> None:
    store.list_page_size = 2
    keys = [f"r/k{i}" for i in range(5)] + ["r/nested/x", "rr/k"]
    for key in keys:
        store.put(key, b"v")
    assert store.list("r") == sorted(k for k in keys if k.startswith("r/"))


def test_list_skips_objects_no_key_maps_to(store: S3Store) -> None:
    store.put("d/real", b"v")
    for odd in ("d/", "d/folder/", "d//double", "d/./dot"):
        store._client.put_object(Bucket=store.bucket, Key=store._root + odd, Body=b"")
    assert store.list("d") == ["d/real"]


def test_missing_keys_read_none_and_delete_quietly(store: S3Store) -> None:
    assert store.get("absent") is None
    store.delete("absent")
    store.put("e", b"")
    assert store.get("e") == b""


def test_the_uri_opens_the_same_bucket(serialized: StoreSpec) -> None:
    assert serialized.uri is not None
    first = serialized.factory()
    first.put("via-factory", b"1")
    other = open_store(serialized.uri)
    assert isinstance(other, S3Store)
    assert other.get("via-factory") == b"1"
    first.delete("via-factory")


@pytest.mark.parametrize(
    ("uri", "hint"),
    [
        ("s3:///prefix", "needs a bucket"),
        ("s3://bkt/p?endpoint=http://x", "unknown option"),
        ("s3://AKIA:secret@bkt/p", "never put credentials"),
    ],
)
def test_bad_s3_uris_are_refused(uri: str, hint: str) -> None:
    with pytest.raises(StoreUnavailable, match=hint) as info:
        open_store(uri)
    assert "secret" not in str(info.value).replace("never put credentials", "")


# -- the providers ---------------------------------------------------------------------------


def _endpoint_of(spec: StoreSpec) -> str:
    assert spec.uri is not None
    return unquote(parse_qs(urlsplit(spec.uri).query)["endpoint_url"][0])


def _two_concurrent_creates(store: S3Store, key: str) -> list[bool]:
    return run_together([lambda v=v: store.put_if_absent(key, v) for v in (b"a", b"b")])


def test_raw_moto_gives_two_concurrent_creates_a_win_each_and_stops_on_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A loaded machine may start the second request later than the default grace; a lone
    # create then goes ahead alone. A long grace costs only the one sequential create below.
    monkeypatch.setenv(GRACE_ENV, "2")
    with moto_raw() as spec:
        assert spec.capabilities["cross_process"]
        store = spec.factory()
        for round_ in range(3):
            assert _two_concurrent_creates(store, f"race/{round_}") == [True, True]
        # Sequential creates are unaffected by the gate.
        assert store.put_if_absent("solo", b"1")
        assert not store.put_if_absent("solo", b"2")
        endpoint = _endpoint_of(spec)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(endpoint, timeout=2)


def test_providers_are_listed_by_store_name() -> None:
    assert PROVIDERS["moto-serialized"] is moto_serialized
    assert PROVIDERS["moto"] is moto_raw
    assert set(PROVIDERS) == {"moto-serialized", "moto", "fake-gcs", "gcs-open-xb-example"}


@pytest.mark.dw_clause("C-ERR-1")
def test_errors_are_store_errors(store: S3Store) -> None:
    with pytest.raises(StoreError):
        store.get("../bad")


def test_fake_child_credentials_last_while_any_provider_needs_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dw_testing.emulators import moto
    from dw_testing.emulators.moto import _child_credentials

    monkeypatch.setattr(moto, "_credential_users", 0)  # as if no provider were open
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    first, second = _child_credentials(), _child_credentials()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert os.environ.get("AWS_ACCESS_KEY_ID") == "dw-testing"
    second.__exit__(None, None, None)
    assert "AWS_ACCESS_KEY_ID" not in os.environ


def test_configured_credentials_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from dw_testing.emulators import moto
    from dw_testing.emulators.moto import _child_credentials

    monkeypatch.setattr(moto, "_credential_users", 0)  # as if no provider were open
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "users-own")
    with _child_credentials():
        assert os.environ["AWS_ACCESS_KEY_ID"] == "users-own"
    assert os.environ["AWS_ACCESS_KEY_ID"] == "users-own"


# -- through the fault proxy --------------------------------------------------------------------


@pytest.fixture
def proxied(serialized: StoreSpec) -> Iterator[tuple[S3Store, FaultProxy]]:
    """A handle reaching the serialized moto server through a fault proxy."""
    assert serialized.network is not None
    with FaultProxy(serialized.network.upstream, seed=3) as proxy:
        handle = serialized.network.factory(serialized.network.via(proxy.address))
        assert isinstance(handle, S3Store)
        handle.prefix = f"t-{uuid.uuid4().hex[:8]}"
        handle._root = f"{handle.prefix}/_control/"
        yield handle, proxy
        handle.close()


def test_a_get_whose_reply_was_cut_short_is_read_again(
    proxied: tuple[S3Store, FaultProxy],
) -> None:
    store, proxy = proxied
    store.put("k", b"v" * 4096)
    proxy.fail_next(1, "cut-reply")
    assert store.get("k") == b"v" * 4096
    assert proxy.counters["cut-reply"] == 1


def test_a_create_whose_reply_was_lost_landed_and_a_reset_one_did_not(
    proxied: tuple[S3Store, FaultProxy],
) -> None:
    store, proxy = proxied
    proxy.fail_next(1, "lost-reply")
    answered = store.put_if_absent("lost", b"mine")  # botocore retries; the retry meets it
    assert store.get("lost") == b"mine"
    assert answered in (True, False)  # C-LOST-1: a retried create may be told False
    proxy.fail_next(1, "reset-before")
    assert store.put_if_absent("reset", b"mine") is True  # the retry is the only attempt seen
    assert proxy.counters["lost-reply"] == 1 and proxy.counters["reset-before"] == 1


def test_a_reset_connection_is_a_transient_error_naming_the_call(
    proxied: tuple[S3Store, FaultProxy],
) -> None:
    store, proxy = proxied
    with proxy.playing(Faults(reset_before=1.0)), pytest.raises(TransientStoreError) as raised:
        store.delete("k")
    assert "delete of key 'k' failed" in str(raised.value)
