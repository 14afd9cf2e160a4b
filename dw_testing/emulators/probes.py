"""Probes: a few requests that show whether a running emulator has a known bug.

A known deviation of an emulator store names the probe of its bug. The provider runs its
probes once, against the server it has just started, and the ``StoreSpec`` it yields carries
the names of the bugs they showed (``StoreSpec.emulator_bugs``). The deviation applies when
its bug was shown, whatever the emulator's version, so a patch release that still has the
bug keeps the run green, and one that fixes it turns the strict xfail into a failure.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

# A race probe is repeated: the moto gate forces the double win, but a loaded machine can
# still deliver the two creates too far apart for it on one try.
RACE_TRIES = 5
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class EmulatorBug:
    """One known emulator bug and the probe that shows it on a running server.

    ``probe(endpoint)`` answers True when the server at ``endpoint`` has the bug; it raises
    only when the server cannot be reached at all.
    """

    name: str
    what: str
    probe: Callable[[str], bool]


# -- S3 (moto) -------------------------------------------------------------------------


def _s3_client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    from dw_testing.emulators.moto import FAKE_CREDENTIALS, REGION

    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                        config=Config(retries={"max_attempts": 1}), **FAKE_CREDENTIALS)


def _probe_bucket(client: Any) -> str:
    bucket = "dw-probe"
    try:
        client.create_bucket(Bucket=bucket)
    except client.exceptions.ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("BucketAlreadyOwnedByYou",
                                                              "BucketAlreadyExists"):
            raise
    return bucket


def _status(exc: Exception) -> int:
    response: Mapping[str, Any] = getattr(exc, "response", {}) or {}
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def _two_creates_both_win(create: Callable[[str, bytes], bool]) -> bool:
    """Race ``create(name, body)`` (True when it won) twice on new names, up to
    ``RACE_TRIES`` times; True as soon as both racers of one name won."""
    for _ in range(RACE_TRIES):
        name = uuid.uuid4().hex
        start = threading.Barrier(2)
        won: list[bool] = []

        def racer(body: bytes, name: str = name, start: threading.Barrier = start,
                  won: list[bool] = won) -> None:
            start.wait()
            won.append(create(name, body))

        threads = [threading.Thread(target=racer, args=(body,)) for body in (b"a", b"b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT_S)
        if won.count(True) > 1:
            return True
    return False


def s3_racing_creates_both_win(endpoint: str) -> bool:
    """Two concurrent ``PutObject`` with ``If-None-Match: *`` on one new key: both win?"""
    client = _s3_client(endpoint)
    bucket = _probe_bucket(client)

    def create(name: str, body: bytes) -> bool:
        try:
            client.put_object(Bucket=bucket, Key=f"race/{name}", Body=body, IfNoneMatch="*")
        except client.exceptions.ClientError as exc:
            if _status(exc) not in (409, 412):
                raise
            return False
        return True

    return _two_creates_both_win(create)


def dynamodb_racing_creates_both_win(endpoint: str) -> bool:
    """Two concurrent ``PutItem`` with ``attribute_not_exists`` on one new item: both win?"""
    import boto3

    from dw_testing.emulators.moto import FAKE_CREDENTIALS, REGION

    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name=REGION,
                          **FAKE_CREDENTIALS)
    table = f"dw-probe-{uuid.uuid4().hex[:8]}"
    client.create_table(TableName=table, KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                        BillingMode="PAY_PER_REQUEST")

    def create(name: str, body: bytes) -> bool:
        try:
            client.put_item(TableName=table, Item={"k": {"S": name}, "v": {"B": body}},
                            ConditionExpression="attribute_not_exists(k)")
        except client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    try:
        return _two_creates_both_win(create)
    finally:
        client.delete_table(TableName=table)


def s3_conditional_copy_overwrites(endpoint: str) -> bool:
    """``CopyObject`` with ``If-None-Match: *`` onto an existing key: not refused?"""
    client = _s3_client(endpoint)
    bucket = _probe_bucket(client)
    target, source = f"copy/{uuid.uuid4().hex}", f"copy/{uuid.uuid4().hex}"
    client.put_object(Bucket=bucket, Key=target, Body=b"first")
    client.put_object(Bucket=bucket, Key=source, Body=b"second")
    try:
        client.copy_object(Bucket=bucket, Key=target, IfNoneMatch="*",
                           CopySource={"Bucket": bucket, "Key": source})
    except client.exceptions.ClientError as exc:
        return _status(exc) != 412
    return True


def s3_create_beside_a_key_beneath_refused(endpoint: str) -> bool:
    """``PutObject`` of ``a`` with ``If-None-Match: *`` while ``a/b`` exists: refused (412)
    although no object ``a`` exists? (SeaweedFS takes its directory entry for an object.)"""
    client = _s3_client(endpoint)
    bucket = _probe_bucket(client)
    parent = f"nest/{uuid.uuid4().hex}"
    client.put_object(Bucket=bucket, Key=f"{parent}/b", Body=b"beneath")
    try:
        client.put_object(Bucket=bucket, Key=parent, Body=b"parent", IfNoneMatch="*")
    except client.exceptions.ClientError as exc:
        if _status(exc) != 412:
            raise
        return True
    return False


# -- GCS (fake-gcs-server) -----------------------------------------------------------


def _gcs_request(request: urllib.request.Request) -> tuple[int, Mapping[str, str]]:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return answer.status, dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def _gcs_bucket(endpoint: str) -> str:
    bucket = "dw-probe"
    _gcs_request(urllib.request.Request(
        f"{endpoint}/storage/v1/b", data=json.dumps({"name": bucket}).encode(),
        headers={"Content-Type": "application/json"}, method="POST"))
    return bucket


def _gcs_media_create(endpoint: str, bucket: str, name: str, body: bytes) -> int:
    url = (f"{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=media"
           f"&name={quote(name, safe='')}&ifGenerationMatch=0")
    status, _ = _gcs_request(urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/octet-stream"}, method="POST"))
    return status


def _gcs_resumable_create(endpoint: str, bucket: str, name: str, body: bytes) -> int:
    url = (f"{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=resumable"
           f"&name={quote(name, safe='')}&ifGenerationMatch=0")
    status, headers = _gcs_request(urllib.request.Request(
        url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST"))
    location = headers.get("Location") or headers.get("location")
    if status >= 300 or not location:
        return status
    status, _ = _gcs_request(urllib.request.Request(
        location, data=body, method="PUT",
        headers={"Content-Range": f"bytes 0-{len(body) - 1}/{len(body)}"}))
    return status


def _second_create_wins(create: Callable[[str, str, str, bytes], int], endpoint: str) -> bool:
    bucket = _gcs_bucket(endpoint)
    name = f"create/{uuid.uuid4().hex}"
    first = create(endpoint, bucket, name, b"first")
    if first >= 300:
        raise RuntimeError(f"the emulator at {endpoint} refused a first create ({first})")
    return create(endpoint, bucket, name, b"second") < 300


def gcs_media_create_overwrites(endpoint: str) -> bool:
    """A simple media upload with ``ifGenerationMatch=0`` over an existing object wins?"""
    return _second_create_wins(_gcs_media_create, endpoint)


def gcs_resumable_create_overwrites(endpoint: str) -> bool:
    """A resumable upload with ``ifGenerationMatch=0`` over an existing object wins?"""
    return _second_create_wins(_gcs_resumable_create, endpoint)


def gcs_open_xb_overwrites(endpoint: str) -> bool:
    """gcsfs ``open(path, "xb")`` over an existing object: no ``FileExistsError``?"""
    from reference_engine.stores.gcs import _filesystem_class

    bucket = _gcs_bucket(endpoint)
    # The plain JSON-API class: the default one stalls 60 s probing the bucket over gRPC.
    fs = _filesystem_class()(endpoint_url=endpoint, token="anon", skip_instance_cache=True)
    path = f"{bucket}/xb/{uuid.uuid4().hex}"
    with fs.open(path, "xb") as first:
        first.write(b"first")
    try:
        with fs.open(path, "xb") as second:
            second.write(b"second")
    except FileExistsError:
        return False
    return True


BUGS: Mapping[str, EmulatorBug] = MappingProxyType({bug.name: bug for bug in (
    EmulatorBug("moto-put-race",
                "PutObject checks If-None-Match without a lock: two racing creates both win",
                s3_racing_creates_both_win),
    EmulatorBug("moto-dynamodb-race",
                "PutItem checks its ConditionExpression without a lock: two racing creates "
                "both win", dynamodb_racing_creates_both_win),
    EmulatorBug("seaweedfs-directory-entry",
                "a create of a answers False while a/b exists: the If-None-Match check takes "
                "the filer's directory entry for an object",
                s3_create_beside_a_key_beneath_refused),
    EmulatorBug("moto-copy-if-none-match",
                "CopyObject ignores If-None-Match: * and overwrites an existing key",
                s3_conditional_copy_overwrites),
    EmulatorBug("fake-gcs-media-create",
                "a media upload ignores ifGenerationMatch=0 and overwrites",
                gcs_media_create_overwrites),
    EmulatorBug("fake-gcs-resumable-create",
                "a resumable upload ignores ifGenerationMatch=0 and overwrites",
                gcs_resumable_create_overwrites),
    EmulatorBug("fake-gcs-open-xb",
                "gcsfs open('xb') over an existing object overwrites it",
                gcs_open_xb_overwrites),
)})


class UnknownProbe(ValueError):
    """A provider names a probe this package does not have."""


def shown(endpoint: str, names: Iterable[str]) -> frozenset[str]:
    """The bugs among ``names`` that their probes show on the server at ``endpoint``."""
    found = set()
    for name in names:
        if name not in BUGS:
            raise UnknownProbe(f"no emulator probe is named {name!r}; known: "
                               f"{', '.join(sorted(BUGS))}")
        if BUGS[name].probe(endpoint):
            found.add(name)
    return frozenset(found)
