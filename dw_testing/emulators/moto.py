"""S3 (and any service moto serves) on a loopback moto server: the ``moto-serialized`` and
``moto`` (raw) providers.

moto (5.2.5 and 5.2.6 alike) checks ``IfNoneMatch`` and then stores the object with no lock
in between, so two concurrent creates can both win; DynamoDB's ``ConditionExpression`` on
``PutItem`` has the same gap. ``moto_serialized`` runs moto's WSGI app behind one lock, which
makes the check-then-write atomic; our S3 store is tested against it. ``moto_raw`` is the
plain server, a known deviation the suite must catch. To make that catch deterministic, its
server holds a create that found the key missing at the existence check until a second
create of the same key reaches the same point (or no other create is on its way, after a
short grace), so two concurrent creates both pass the check: an emulator-side gate.

Each server runs in a child process (:func:`main`): sharing the
GIL with the tests' threads made every request about 5x slower, and the gate's patch of
moto stays out of the test process.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast
from urllib.parse import quote

from dw_testing.emulators.process import stop
from dw_testing.kit.spec import BUILTIN_LIST_CAPABILITIES, NetworkRoute, StoreSpec

REGION = "us-east-1"
# moto accepts any credentials; these keep boto3 from searching the real chain.
FAKE_CREDENTIALS = {"aws_access_key_id": "dw-testing", "aws_secret_access_key": "dw-testing"}
PREFIX = "suite"
RENDEZVOUS_TIMEOUT_S = 2.0
RENDEZVOUS_GRACE_S = 0.05
# How long a lone create waits for a partner to arrive; the gated server reads it at start.
GRACE_ENV = "DW_MOTO_GATE_GRACE_S"
START_TIMEOUT_S = 60.0
READY = "DW-MOTO-READY "

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class CreateRendezvous:
    """Holds a create on a missing key at moto's existence check until a partner arrives.

    A create waits only while another create request is on its way through the server and
    has not reached the check yet, so sequential creates never wait.
    """

    def __init__(
        self, timeout: float = RENDEZVOUS_TIMEOUT_S, grace: float = RENDEZVOUS_GRACE_S
    ) -> None:
        self.timeout = timeout
        self.grace = grace
        self.forced_pairs = 0
        self._cond = threading.Condition()
        self._unreached = 0
        self._waiting: dict[tuple[str, str], int] = {}
        self._generation: dict[tuple[str, str], int] = {}

    def arrived(self) -> None:
        with self._cond:
            self._unreached += 1

    def passed(self) -> None:
        """A create that will not wait (key exists, or it never got to the check)."""
        with self._cond:
            self._unreached -= 1
            self._cond.notify_all()

    def meet(self, key: tuple[str, str]) -> None:
        with self._cond:
            self._unreached -= 1
            self._waiting[key] = self._waiting.get(key, 0) + 1
            generation = self._generation.get(key, 0)
            self._cond.notify_all()
            deadline = time.monotonic() + self.timeout
            grace_end = time.monotonic() + self.grace
            while self._generation.get(key, 0) == generation:
                partnered = self._waiting[key] >= 2
                alone = self._unreached <= 0 and time.monotonic() >= grace_end
                if partnered or alone:
                    self.forced_pairs += int(partnered)
                    self._generation[key] = generation + 1
                    self._cond.notify_all()
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                if self._unreached <= 0:
                    remaining = min(remaining, max(grace_end - time.monotonic(), 0.0))
                self._cond.wait(remaining)
            self._waiting[key] -= 1
            if self._waiting[key] == 0:
                del self._waiting[key]


_request_state = threading.local()
_gate_installed = False
# Held from a gated create's passed check to the end of its put_object. The check-then-put
# race stays open (both creates have passed the check); only the stores run one at a time,
# because moto closes a replaced object's buffer while the earlier put still reads its ETag
# (a 500 that the store retries into a lost create, so the race would not always show).
_store_after_check = threading.Lock()


def _marking(original_write: Callable[..., Any]) -> Callable[..., Any]:
    """``original_write`` (moto's check-then-write) marked as such while it runs; it lets go
    of the store lock that its check took, whatever happens."""
    def marked_write(*args: Any, **kwargs: Any) -> Any:
        _request_state.in_put_object = True
        try:
            return original_write(*args, **kwargs)
        finally:
            _request_state.in_put_object = False
            if getattr(_request_state, "holds_store_lock", False):
                _request_state.holds_store_lock = False
                _store_after_check.release()

    return marked_write


def _meet_after_check(found: object, key: tuple[str, str]) -> None:
    """Inside a gated create's check: a missing record meets the rendezvous, then holds the
    store lock until the write is done; a present one lets the others go on."""
    rendezvous: CreateRendezvous | None = getattr(_request_state, "rendezvous", None)
    if rendezvous is None or not getattr(_request_state, "in_put_object", False):
        return
    _request_state.rendezvous = None
    if found is None:
        rendezvous.meet(key)
        _store_after_check.acquire()
        _request_state.holds_store_lock = True
    else:
        rendezvous.passed()


def _install_put_object_gate() -> None:
    """Patch moto (in the server process) so ``put_object``'s existence check can hold.

    The patch is inert except inside a gated server's create requests: ``put_object`` marks
    the request, and the first ``get_object`` it makes (the ``IfNoneMatch`` check) meets
    the rendezvous after finding the key missing, before the object is stored.
    """
    global _gate_installed
    if _gate_installed:
        return
    from moto.s3.models import S3Backend
    from moto.s3.responses import S3Response

    original_put = S3Response.put_object
    original_get = S3Backend.get_object

    def gated_get_object(
        self: Any, bucket_name: str, key_name: str, *args: Any, **kwargs: Any
    ) -> Any:
        found = original_get(self, bucket_name, key_name, *args, **kwargs)
        _meet_after_check(found, (bucket_name, key_name))
        return found

    S3Response.put_object = _marking(original_put)  # type: ignore[method-assign]
    S3Backend.get_object = gated_get_object  # type: ignore[method-assign]
    _gate_installed = True


_dynamodb_gate_installed = False


def _install_put_item_gate() -> None:
    """The same gate for DynamoDB: ``Table.put_item`` reads the current item (its
    ``ConditionExpression`` check) and then writes it, with no lock between; a gated
    conditional ``PutItem`` that found no item meets the rendezvous before writing."""
    global _dynamodb_gate_installed
    if _dynamodb_gate_installed:
        return
    from moto.dynamodb.models.table import Table

    original_put = Table.put_item
    original_get = Table.get_item

    def gated_get_item(self: Any, hash_key: Any, range_key: Any = None,
                       *args: Any, **kwargs: Any) -> Any:
        found = original_get(self, hash_key, range_key, *args, **kwargs)
        _meet_after_check(found, (self.name, repr((hash_key, range_key))))
        return found

    Table.put_item = _marking(original_put)  # type: ignore[method-assign]
    Table.get_item = gated_get_item  # type: ignore[method-assign]
    _dynamodb_gate_installed = True


def _is_conditional_create(environ: dict[str, Any]) -> bool:
    """An S3 ``PutObject`` with ``If-None-Match: *``, or a DynamoDB ``PutItem`` whose
    condition asks that the item not exist (its body is read and put back)."""
    method = environ.get("REQUEST_METHOD")
    if method == "PUT" and environ.get("HTTP_IF_NONE_MATCH") == "*":
        return True
    if method != "POST" or not str(environ.get("HTTP_X_AMZ_TARGET", "")).endswith(".PutItem"):
        return False
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    environ["wsgi.input"] = io.BytesIO(body)
    return b"attribute_not_exists" in body


def _serialized(app: WsgiApp) -> WsgiApp:
    lock = threading.Lock()

    def serialized_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with lock:  # one request at a time makes moto's check-then-put atomic
            return list(app(environ, start_response))

    return serialized_app


def _gated(app: WsgiApp, rendezvous: CreateRendezvous) -> WsgiApp:
    def gated_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if not _is_conditional_create(environ):
            return list(app(environ, start_response))
        rendezvous.arrived()
        _request_state.rendezvous = rendezvous
        try:
            return list(app(environ, start_response))
        finally:
            if getattr(_request_state, "rendezvous", None) is rendezvous:
                rendezvous.passed()  # it never reached put_object (e.g. a missing bucket)
            _request_state.rendezvous = None

    return gated_app


MODES = ("serialized", "gated", "raw")
GATED_SERVICES = ("s3", "dynamodb")


def make_app(mode: str, service: str = "s3") -> tuple[WsgiApp, CreateRendezvous | None]:
    """moto's WSGI app for ``service`` in ``mode``: ``serialized`` (one lock), ``raw``, or
    ``gated`` (raw, with the create rendezvous; S3 and DynamoDB)."""
    from moto.moto_server.werkzeug_app import create_backend_app

    make_app_check(mode, service)
    # One service's app alone: the all-services dispatcher spends ~175 stat() calls per
    # request working out which service a loopback host means.
    # moto types the service as a Literal of the names it serves; ours is the caller's string.
    app: WsgiApp = cast(Any, create_backend_app)(service)
    if mode == "serialized":
        return _serialized(app), None
    if mode == "gated":
        grace = float(os.environ.get(GRACE_ENV, RENDEZVOUS_GRACE_S))
        rendezvous = CreateRendezvous(grace=grace)
        if service == "s3":
            _install_put_object_gate()
        else:
            _install_put_item_gate()
        return _gated(app, rendezvous), rendezvous
    return app, None  # raw


def make_app_check(mode: str, service: str) -> None:
    """Refuse, in the caller's process, a mode or service the child would refuse."""
    if mode not in MODES:
        raise ValueError(f"unknown moto server mode {mode!r}; use serialized, gated or raw")
    if mode == "gated" and service not in GATED_SERVICES:
        raise ValueError(f"the gated mode forces the create race of "
                         f"{' and '.join(GATED_SERVICES)}; {service} has no gate: use "
                         "serialized or raw")


def serve_forever(mode: str, announce: Callable[[str], None], service: str = "s3") -> None:
    """Run a moto server in this process on a free loopback port; announce its URL."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    app, _ = make_app(mode, service)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    announce(f"http://127.0.0.1:{server.server_port}")
    server.serve_forever()


def _read_announcement(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(START_TIMEOUT_S):
            raise RuntimeError(f"moto server did not start within {START_TIMEOUT_S:.0f} s")
    line = process.stdout.readline().strip()
    if not line.startswith(READY):
        raise RuntimeError(
            "moto server exited before it was ready; is moto[server] installed? "
            "run python -c 'from dw_testing.emulators.moto import main; main()' to see its error"
        )
    return line[len(READY):]


@contextlib.contextmanager
def serve_moto(mode: str = "serialized", service: str = "s3") -> Iterator[str]:
    """A moto server for one AWS ``service`` (``"s3"``, ``"dynamodb"``, any name moto
    serves) in a child process (no GIL shared with the tests); yields its URL.

    ``"serialized"`` answers one request at a time, which makes moto's check-then-write
    conditions atomic (S3's ``IfNoneMatch``, DynamoDB's ``ConditionExpression``); the
    child's request log stays out of the test's output. The child exits when its stdin
    closes, so it never outlives the test process.
    """
    make_app_check(mode, service)
    process = subprocess.Popen(
        [sys.executable, "-c", "from dw_testing.emulators.moto import main; main()",
         "--mode", mode, "--service", service],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        yield _read_announcement(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        stop(process, grace=10)
        if process.stdout is not None:
            process.stdout.close()


_CREDENTIALS_LOCK = threading.Lock()
_credential_users = 0  # providers open that rely on the fake credentials we set


@contextlib.contextmanager
def _child_credentials() -> Iterator[None]:
    """Fake credentials in the environment, for child processes that open the store by URI.

    Set only when none are configured, kept while any provider that set them is open, and
    removed when the last one exits.
    """
    global _credential_users
    names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
    with _CREDENTIALS_LOCK:
        configured = any(os.environ.get(n) for n in names) or bool(os.environ.get("AWS_PROFILE"))
        ours = _credential_users > 0 or not configured
        if ours:
            os.environ["AWS_ACCESS_KEY_ID"] = FAKE_CREDENTIALS["aws_access_key_id"]
            os.environ["AWS_SECRET_ACCESS_KEY"] = FAKE_CREDENTIALS["aws_secret_access_key"]
            _credential_users += 1
    try:
        yield
    finally:
        if ours:
            with _CREDENTIALS_LOCK:
                _credential_users -= 1
                if _credential_users == 0:
                    for name in names:
                        os.environ.pop(name, None)


# The known moto bugs whose probes every moto provider runs on the server it started.
S3_PROBES = ("moto-put-race", "moto-copy-if-none-match")


def s3_spec(endpoint: str, bucket: str, name: str,
            store_class: Callable[..., Any] | None = None,
            probes: tuple[str, ...] = S3_PROBES) -> StoreSpec:
    """Create ``bucket`` on the server at ``endpoint`` and describe the store on it; its
    ``NetworkRoute`` lets ``--dw-network`` put a fault proxy in front of the server.
    ``store_class`` (default ``S3Store``) is called as ``S3Store`` is. The spec carries the
    known bugs that ``probes`` (by default moto's) showed on this server."""
    from dw_testing.emulators.probes import shown
    from reference_engine.stores.s3 import S3Store

    make = store_class or S3Store

    def at(url: str) -> Any:
        return make(bucket, PREFIX, endpoint_url=url, region=REGION,
                    client_kwargs=FAKE_CREDENTIALS)

    admin = S3Store(bucket, PREFIX, endpoint_url=endpoint, region=REGION,
                    client_kwargs=FAKE_CREDENTIALS)
    admin._client.create_bucket(Bucket=bucket)
    admin.close()
    uri = f"s3://{bucket}/{PREFIX}?endpoint_url={quote(endpoint, safe='')}&region={REGION}"
    capabilities = {"cross_process": True, "durable_reopen": True, **BUILTIN_LIST_CAPABILITIES}
    return StoreSpec(factory=lambda: at(endpoint), uri=uri, capabilities=capabilities,
                     name=name, network=NetworkRoute(endpoint, at),
                     emulator_bugs=shown(endpoint, probes))


@contextlib.contextmanager
def moto_serialized() -> Iterator[StoreSpec]:
    """Provider: S3 on moto with every request serialized (a conforming emulator)."""
    with _child_credentials(), serve_moto("serialized") as endpoint:
        yield s3_spec(endpoint, "dw-moto-serialized", "moto-serialized")


@contextlib.contextmanager
def moto_raw() -> Iterator[StoreSpec]:
    """Provider: S3 on plain moto, with the emulator-side gate that forces the double win."""
    with _child_credentials(), serve_moto("gated") as endpoint:
        yield s3_spec(endpoint, "dw-moto-raw", "moto")


def main(argv: list[str] | None = None) -> int:
    """Serve with ``--mode serialized|gated|raw`` until stdin closes (the parent went away)."""
    parser = argparse.ArgumentParser(description="a moto server on a free loopback port")
    parser.add_argument("--mode", choices=MODES, default="serialized")
    parser.add_argument("--service", default="s3")
    args = parser.parse_args(argv)

    def exit_when_parent_goes() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=exit_when_parent_goes, daemon=True).start()

    def announce(url: str) -> None:
        print(READY + url, flush=True)

    serve_forever(args.mode, announce, args.service)
    return 0


if __name__ == "__main__":
    sys.exit(main())
