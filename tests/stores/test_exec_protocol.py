"""dw-store/1 messages: the encoders write what the shipped JSON Schemas accept, and the
decoders refuse what they refuse."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable, TransientStoreError
from reference_engine.stores.exec import schema_dir
from reference_engine.stores.exec.protocol import (
    ERROR_CLASSES,
    OPS,
    Handshake,
    ProtocolViolation,
    Reply,
    Request,
    error_kind,
)


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((schema_dir() / f"{name}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def valid(name: str, message: object) -> bool:
    return jsonschema.Draft202012Validator(schema(name)).is_valid(message)


def test_the_schemas_ship_as_package_data() -> None:
    assert sorted(p.name for p in schema_dir().glob("*.json")) == [
        "handshake.json", "reply.json", "request.json"]


REQUESTS = [
    Request(id=0, op="put", key="runs/r1", data=b"\x00\xffbytes"),
    Request(id=1, op="put_if_absent", key="a", data=b""),
    Request(id=2, op="get", key="a/b"),
    Request(id=3, op="delete", key="a/b"),
    Request(id=4, op="list", prefix=""),
    Request(id=5, op="close"),
]


@pytest.mark.parametrize("request_", REQUESTS, ids=[r.op for r in REQUESTS])
def test_every_request_round_trips_and_fits_the_schema(request_: Request) -> None:
    line = request_.encode()
    assert "\n" not in line
    assert valid("request", json.loads(line))
    assert Request.decode(line) == request_


def test_the_requests_cover_every_op() -> None:
    assert sorted({r.op for r in REQUESTS}) == sorted(OPS)


BAD_REQUESTS = [
    {"op": "get", "key": "a"},                               # no id
    {"id": -1, "op": "get", "key": "a"},                     # negative id
    {"id": True, "op": "get", "key": "a"},                   # a bool is no id
    {"id": 1, "op": "rename", "key": "a"},                   # unknown op
    {"id": 1, "op": "get"},                                  # no key
    {"id": 1, "op": "put", "key": "a"},                      # no data
    {"id": 1, "op": "put", "key": "a", "data": "not base64!"},
    {"id": 1, "op": "list", "key": "a"},                     # list takes a prefix
    {"id": 1, "op": "get", "key": "a", "data": "eA=="},      # stray field
    {"id": 1, "op": "close", "key": "a"},
]


@pytest.mark.parametrize("message", BAD_REQUESTS, ids=[json.dumps(m) for m in BAD_REQUESTS])
def test_a_bad_request_is_refused_by_schema_and_decoder(message: dict[str, Any]) -> None:
    assert not valid("request", message)
    with pytest.raises(ProtocolViolation):
        Request.decode(json.dumps(message))


def test_the_handshake_round_trips_and_fits_the_schema() -> None:
    hello = Handshake(store="fs-ts", put_if_absent=True,
                      capabilities={"cross_process": True, "durable_reopen": True})
    assert valid("handshake", json.loads(hello.encode()))
    assert Handshake.decode(hello.encode()) == hello


BAD_HANDSHAKES = [
    {"store": "x", "put_if_absent": True},                             # no protocol
    {"protocol": "dw-store/1", "put_if_absent": True},                 # no store
    {"protocol": "dw-store/1", "store": "", "put_if_absent": True},
    {"protocol": "dw-store/1", "store": "x", "put_if_absent": "yes"},
    {"protocol": "dw-store/1", "store": "x", "put_if_absent": True,
     "capabilities": {"cross_process": "true"}},
    {"protocol": "dw-store/1", "store": "x", "put_if_absent": True, "extra": 1},
]


@pytest.mark.parametrize("message", BAD_HANDSHAKES, ids=[json.dumps(m) for m in BAD_HANDSHAKES])
def test_a_bad_handshake_is_refused_by_schema_and_decoder(message: dict[str, Any]) -> None:
    assert not valid("handshake", message)
    with pytest.raises(ProtocolViolation):
        Handshake.decode(json.dumps(message))


def test_another_version_decodes_far_enough_to_be_named() -> None:
    hello = Handshake.decode(json.dumps({"protocol": "dw-store/2", "store": "x", "new": 1}))
    assert hello.protocol == "dw-store/2"
    assert not valid("handshake", {"protocol": "dw-store/2", "store": "x",
                                   "put_if_absent": True})


GOOD_REPLIES = [
    ("put", {"id": 1, "result": None}, None),
    ("delete", {"id": 1, "result": None}, None),
    ("close", {"id": 1, "result": None}, None),
    ("put_if_absent", {"id": 1, "result": False}, False),
    ("get", {"id": 1, "result": None}, None),
    ("get", {"id": 1, "result": "AP8="}, b"\x00\xff"),
    ("list", {"id": 1, "result": ["a/b", "a/c"]}, ["a/b", "a/c"]),
    ("get", {"id": 1, "error": {"kind": "transient", "message": "busy"}}, None),
]


@pytest.mark.parametrize(("op", "message", "expected"), GOOD_REPLIES)
def test_good_replies_decode_and_fit_the_schema(op: str, message: dict[str, Any],
                                                expected: object) -> None:
    assert valid("reply", message)
    reply_id, raw = Reply.decode_raw(json.dumps(message))
    reply = Reply.for_op(op, reply_id, raw)
    assert reply.result == expected
    encoded = json.loads(reply.encode())
    assert encoded == message


BAD_REPLIES = [
    ("put", {"result": None}),                                       # no id
    ("put", {"id": 1}),                                              # neither
    ("put", {"id": 1, "result": None, "error": {"kind": "failed", "message": ""}}),
    ("get", {"id": 1, "error": {"kind": "oops", "message": "m"}}),
    ("get", {"id": 1, "error": {"kind": "failed"}}),
    ("get", {"id": 1, "result": "***"}),
    ("list", {"id": 1, "result": [1, 2]}),
    ("get", {"id": 1, "result": None, "extra": True}),
]


@pytest.mark.parametrize(("op", "message"), BAD_REPLIES,
                         ids=[json.dumps(m) for _, m in BAD_REPLIES])
def test_bad_replies_are_refused_by_schema_and_decoder(op: str, message: dict[str, Any]) -> None:
    assert not valid("reply", message)
    with pytest.raises(ProtocolViolation):
        reply_id, raw = Reply.decode_raw(json.dumps(message))
        Reply.for_op(op, reply_id, raw)


@pytest.mark.parametrize(("op", "result"), [
    ("put", True), ("put_if_absent", None), ("get", ["a"]), ("list", "a"), ("delete", False),
])
def test_a_result_of_another_op_is_the_wrong_shape(op: str, result: object) -> None:
    with pytest.raises(ProtocolViolation, match=f"a {op} result must be"):
        Reply.for_op(op, 1, {"id": 1, "result": result})


def test_error_kinds_and_exceptions_map_both_ways() -> None:
    assert {"invalid_key": InvalidKey, "transient": TransientStoreError,
                             "unavailable": StoreUnavailable, "failed": StoreError} == ERROR_CLASSES
    for kind, error_class in ERROR_CLASSES.items():
        assert error_kind(error_class("m")) == kind
    assert error_kind(RuntimeError("boom")) == "failed"


def test_a_described_request_names_the_call_and_never_the_bytes() -> None:
    secret = b"do not print me"
    described = Request(id=1, op="put", key="a/b", data=secret).describe()
    assert described == "put of key 'a/b'"
    assert Request(id=2, op="list", prefix="runs").describe() == "list of prefix 'runs'"


@pytest.mark.parametrize("line", [b"not json\n", b"[1, 2]\n", b"\"text\"\n"])
def test_a_line_that_is_no_object_is_refused(line: bytes) -> None:
    with pytest.raises(ProtocolViolation, match=r"not JSON|not an object"):
        Reply.decode_raw(line)
