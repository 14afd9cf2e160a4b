"""``dw store ls|cat|put|create|rm``: raw access to a ControlPlaneStore, for inspection."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from reference_engine.cli.failures import EXIT_FAILED, fail
from reference_engine.cli.options import common_options, opened_store
from reference_engine.cli.output import emit_json, emit_result, say
from reference_engine.stores.contract import ControlPlaneStore, supports_create
from reference_engine.stores.keys import validate_key, validate_prefix


@click.group()
def store() -> None:
    """Read and write raw records of a store."""


@contextmanager
def _store_for_key(store_uri: str, key: str, op: str) -> Iterator[ControlPlaneStore]:
    """The store opened for one call on ``key``; a key ``op`` refuses opens nothing."""
    validate_key(key, op=op)
    with opened_store(store_uri) as handle:
        yield handle


@store.command("ls")
@click.argument("prefix", required=False, default="")
@common_options
def ls_(prefix: str, store_uri: str, as_json: bool) -> None:
    """List the keys under PREFIX (whole segments; all keys when omitted)."""
    normalised = validate_prefix(prefix)
    with opened_store(store_uri) as handle:
        # "runs" is asked as "runs/": the one form every store answers by whole segments.
        keys = sorted(handle.list(f"{normalised}/" if normalised else ""))
    if as_json:
        emit_json({"prefix": normalised, "keys": keys})
        return
    for key in keys:
        say(key)


@store.command("cat")
@click.argument("key")
@common_options
def cat(key: str, store_uri: str, as_json: bool) -> None:
    """Write the record at KEY to stdout, byte for byte."""
    with _store_for_key(store_uri, key, "get") as handle:
        data = handle.get(key)
    if data is None:
        fail(f"no record at {key}; list what exists with: dw store ls", json_mode=as_json,
             command="dw store cat", kind="not_found")
        return
    if as_json:
        try:
            emit_json({"key": key, "encoding": "utf-8", "data": data.decode("utf-8")})
        except UnicodeDecodeError:
            emit_json({"key": key, "encoding": "base64",
                       "data": base64.b64encode(data).decode("ascii")})
        return
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _payload_bytes(data: str | None) -> bytes:
    if data is not None:
        return data.encode("utf-8", errors="surrogateescape")
    return sys.stdin.buffer.read()


@store.command("put")
@click.argument("key")
@click.option("--data", metavar="TEXT", default=None,
              help="The record's content (UTF-8); read from stdin when omitted.")
@common_options
def put(key: str, data: str | None, store_uri: str, as_json: bool) -> None:
    """Create or replace the record at KEY."""
    validate_key(key, op="put")
    payload = _payload_bytes(data)
    with opened_store(store_uri) as handle:
        handle.put(key, payload)
    emit_result({"key": key, "bytes": len(payload)}, f"wrote {len(payload)} bytes to {key}",
                as_json=as_json)


@store.command("create")
@click.argument("key")
@click.option("--data", metavar="TEXT", default=None,
              help="The record's content (UTF-8); read from stdin when omitted.")
@common_options
def create(key: str, data: str | None, store_uri: str, as_json: bool) -> None:
    """Create KEY only if absent (put_if_absent).

    Exits 0 if this call created it, 1 if the key already existed.
    """
    validate_key(key, op="put_if_absent")
    payload = _payload_bytes(data)
    with opened_store(store_uri) as handle:
        if not supports_create(handle):
            fail("this store has no put_if_absent, so it cannot create write-once records; "
                 "use dw store put, or a store that supports create", json_mode=as_json,
                 command="dw store create", kind="unsupported")
            return
        created = bool(handle.put_if_absent(key, payload))  # type: ignore[attr-defined]
    emit_result({"key": key, "created": created},
                f"created {key}" if created else f"{key} already exists; nothing written",
                as_json=as_json)
    if not created:
        raise click.exceptions.Exit(EXIT_FAILED)


@store.command("rm")
@click.argument("key")
@common_options
def rm(key: str, store_uri: str, as_json: bool) -> None:
    """Delete the record at KEY (a missing key is no error)."""
    with _store_for_key(store_uri, key, "delete") as handle:
        handle.delete(key)
    emit_result({"key": key, "deleted": True}, f"deleted {key}", as_json=as_json)


@store.command("shim-path")
@click.option("--runner", is_flag=True,
              help="print the runner instead: it serves a module's default export")
@click.option("--copy-to", "copy_to", metavar="DIR", default=None,
              help="copy the shim and its .d.ts into DIR and print the copy's path")
def shim_path_cmd(runner: bool, copy_to: str | None) -> None:
    """Print where the TypeScript/JavaScript dw-store/1 shim is installed.

    \b
    Import it from a fresh copy (the .d.ts comes along):
      dw store shim-path --copy-to .
    or serve a module's default export without importing it:
      deno run -A "$(dw store shim-path --runner)" ./my_store.ts
    """
    from reference_engine.stores.exec import copy_shim, runner_path, shim_path

    if copy_to is not None:
        say(str(copy_shim(copy_to)))
        return
    say(str(runner_path() if runner else shim_path()))
