"""``dw-store/1`` messages: frozen records with explicit encode/decode, one JSON object a line.

The child speaks first (a :class:`Handshake`), then answers :class:`Request` lines with
:class:`Reply` lines carrying the same id, in any order. ``docs/reference/store-protocol.md`` is the
prose; ``schemas/*.json`` (package data) are the machine-readable form. The decoders check
shapes; capability names are checked by the suite when it builds the store's spec.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Final

from reference_engine.errors import InvalidKey, StoreError, StoreUnavailable, TransientStoreError

PROTOCOL: Final = "dw-store/1"
OPS: Final = ("put", "put_if_absent", "get", "delete", "list", "close")
KEY_OPS: Final = frozenset({"put", "put_if_absent", "get", "delete"})
DATA_OPS: Final = frozenset({"put", "put_if_absent"})
ERROR_KINDS: Final = ("invalid_key", "transient", "unavailable", "failed")


class ProtocolViolation(ValueError):
    """A line that is not a well-formed ``dw-store/1`` message; the text says what is wrong."""


@dataclass(frozen=True)
class Handshake:
    """The child's first line: who it is and what it offers."""

    store: str
    put_if_absent: bool
    capabilities: dict[str, bool] = field(default_factory=dict)
    protocol: str = PROTOCOL

    def encode(self) -> str:
        return json.dumps({"protocol": self.protocol, "store": self.store,
                           "put_if_absent": self.put_if_absent,
                           "capabilities": dict(self.capabilities)}, separators=(",", ":"))

    @classmethod
    def decode(cls, line: bytes | str) -> Handshake:
        message = _object(line, "handshake")
        protocol = message.get("protocol")
        if not isinstance(protocol, str):
            raise ProtocolViolation("the handshake has no \"protocol\" string (e.g. "
                                    f"\"{PROTOCOL}\")")
        if protocol != PROTOCOL:
            # Decoded as far as the version only: a newer child may use fields we do not know.
            return cls(store=str(message.get("store", "?")), put_if_absent=False,
                       protocol=protocol)
        _only(message, {"protocol", "store", "put_if_absent", "capabilities"}, "handshake")
        store = message.get("store")
        if not isinstance(store, str) or not store:
            raise ProtocolViolation("the handshake's \"store\" must be a non-empty string")
        creates = message.get("put_if_absent")
        if not isinstance(creates, bool):
            raise ProtocolViolation("the handshake's \"put_if_absent\" must be true or false")
        capabilities = message.get("capabilities", {})
        if not isinstance(capabilities, dict) or not all(
            isinstance(v, bool) for v in capabilities.values()
        ):
            raise ProtocolViolation("the handshake's \"capabilities\" must map names to "
                                    "true or false, e.g. {\"cross_process\": true}")
        return cls(store=store, put_if_absent=creates, capabilities=dict(capabilities))


@dataclass(frozen=True)
class Request:
    """One call: ``key`` for the key ops, ``prefix`` for list, ``data`` for the two writes."""

    id: int
    op: str
    key: str | None = None
    prefix: str | None = None
    data: bytes | None = None

    def describe(self) -> str:
        """``put_if_absent of key 'a/b'``: names the call, never the bytes."""
        if self.op in KEY_OPS:
            return f"{self.op} of key {self.key!r}"
        if self.op == "list":
            return f"list of prefix {self.prefix!r}"
        return self.op

    def encode(self) -> str:
        message: dict[str, Any] = {"id": self.id, "op": self.op}
        if self.op in KEY_OPS:
            message["key"] = self.key
        if self.op == "list":
            message["prefix"] = self.prefix
        if self.op in DATA_OPS:
            message["data"] = base64.b64encode(self.data or b"").decode("ascii")
        return json.dumps(message, separators=(",", ":"))

    @classmethod
    def decode(cls, line: bytes | str) -> Request:
        message = _object(line, "request")
        request_id = _id(message.get("id"), "a request needs an integer \"id\" >= 0")
        op = message.get("op")
        if op not in OPS:
            raise ProtocolViolation(f"unknown op {op!r}; ops: {', '.join(OPS)}")
        allowed = {"id", "op"} | ({"key"} if op in KEY_OPS else set()) | (
            {"prefix"} if op == "list" else set()) | ({"data"} if op in DATA_OPS else set())
        _only(message, allowed, f"a {op} request")
        key = message.get("key") if op in KEY_OPS else None
        if op in KEY_OPS and not isinstance(key, str):
            raise ProtocolViolation(f"a {op} request needs a \"key\" string")
        prefix = message.get("prefix") if op == "list" else None
        if op == "list" and not isinstance(prefix, str):
            raise ProtocolViolation("a list request needs a \"prefix\" string")
        data = _base64(message.get("data"), f"a {op} request") if op in DATA_OPS else None
        return cls(id=request_id, op=op, key=key, prefix=prefix, data=data)


@dataclass(frozen=True)
class Reply:
    """The answer to request ``id``: a ``result`` or an error ``kind`` with a ``message``."""

    id: int
    result: Any = None
    error_kind: str | None = None
    error_message: str = ""

    def encode(self) -> str:
        if self.error_kind is not None:
            body: dict[str, Any] = {"id": self.id, "error": {"kind": self.error_kind,
                                                            "message": self.error_message}}
        elif isinstance(self.result, bytes):
            body = {"id": self.id, "result": base64.b64encode(self.result).decode("ascii")}
        else:
            body = {"id": self.id, "result": self.result}
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def decode_raw(cls, line: bytes | str) -> tuple[int, dict[str, Any]]:
        """The reply's id and its object; the result's shape is checked by :meth:`for_op`."""
        message = _object(line, "reply")
        reply_id = _id(message.get("id"), "a reply needs the integer \"id\" of its request")
        return reply_id, message

    @classmethod
    def for_op(cls, op: str, reply_id: int, message: dict[str, Any]) -> Reply:
        """Check ``message`` is a well-shaped answer to an ``op`` request."""
        has_result, has_error = "result" in message, "error" in message
        if has_result == has_error:
            raise ProtocolViolation("a reply carries exactly one of \"result\" or \"error\"")
        _only(message, {"id", "result", "error"}, "a reply")
        if has_error:
            error = message["error"]
            if not isinstance(error, dict) or error.get("kind") not in ERROR_KINDS or not \
                    isinstance(error.get("message"), str):
                raise ProtocolViolation("an error is {\"kind\": one of "
                                        f"{', '.join(ERROR_KINDS)}, \"message\": string}}")
            return cls(id=reply_id, error_kind=error["kind"], error_message=error["message"])
        return cls(id=reply_id, result=_result(op, message["result"]))

    def raise_error(self, prefix: str, *, op: str, key: str) -> None:
        """Raise the package exception for this reply's error kind (no-op for a result)."""
        if self.error_kind is None:
            return
        error_class = ERROR_CLASSES[self.error_kind]
        raise error_class(f"{prefix}{self.error_message}", op=op, key=key)


ERROR_CLASSES: Final[dict[str, type[StoreError]]] = {
    "invalid_key": InvalidKey,
    "transient": TransientStoreError,
    "unavailable": StoreUnavailable,
    "failed": StoreError,
}


def error_kind(exc: BaseException) -> str:
    """The wire kind for a store exception (the inverse of :data:`ERROR_CLASSES`)."""
    if isinstance(exc, InvalidKey):
        return "invalid_key"
    if isinstance(exc, TransientStoreError):
        return "transient"
    if isinstance(exc, StoreUnavailable):
        return "unavailable"
    return "failed"


def _result(op: str, result: Any) -> Any:
    if op in ("put", "delete", "close"):
        if result is not None:
            raise ProtocolViolation(f"a {op} result must be null")
        return None
    if op == "put_if_absent":
        if not isinstance(result, bool):
            raise ProtocolViolation("a put_if_absent result must be true or false")
        return result
    if op == "get":
        return None if result is None else _base64(result, "a get result")
    if not isinstance(result, list) or not all(isinstance(k, str) for k in result):
        raise ProtocolViolation("a list result must be an array of key strings")
    return result


def _object(line: bytes | str, what: str) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except ValueError:
        raise ProtocolViolation(f"the {what} line is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolViolation(f"the {what} line is JSON but not an object")
    return message


def _only(message: dict[str, Any], allowed: set[str], what: str) -> None:
    extra = sorted(set(message) - allowed)
    if extra:
        raise ProtocolViolation(f"{what} has unknown field(s) {', '.join(extra)}; "
                                f"allowed: {', '.join(sorted(allowed))}")


def _id(value: object, problem: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ProtocolViolation(problem)


def _base64(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise ProtocolViolation(f"{what} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolViolation(f"{what} is not valid base64") from None
