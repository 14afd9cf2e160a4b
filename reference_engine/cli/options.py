"""Options every ``dw`` command takes: ``--store URI`` and ``--json``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from reference_engine.cli.output import COMMAND_KEY, JSON_KEY
from reference_engine.stores.contract import ControlPlaneStore, close_store
from reference_engine.stores.registry import DEFAULT_STORE, open_store

F = TypeVar("F", bound=Callable[..., Any])


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    # The root group reads these when it reports a failure of this command.
    ctx.meta[JSON_KEY] = bool(value)
    ctx.meta[COMMAND_KEY] = ctx.command_path
    return bool(value)


def store_option(func: F) -> F:
    return click.option(
        "--store", "store_uri", metavar="URI", envvar="DW_STORE", default=DEFAULT_STORE,
        show_default=True, show_envvar=True,
        help="Store URI: a path, file://, sqlite://, s3://, gs://, memory://, module:factory "
        "or exec:<command> (a dw-store/1 child per handle).",
    )(func)


def json_option(func: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, callback=_remember_json, is_eager=True,
        help="Machine output: one JSON document on stdout.",
    )(func)


def common_options(func: F) -> F:
    """``--store`` and ``--json``, in that order in ``--help``."""
    return store_option(json_option(func))


def store_flag_for(ctx: click.Context, store_uri: str) -> str:
    """`` --store URI`` to append to a suggested command, when the user typed ``--store``."""
    source = ctx.get_parameter_source("store_uri")
    if source is click.core.ParameterSource.COMMANDLINE and store_uri != DEFAULT_STORE:
        import shlex

        return f" --store {shlex.quote(store_uri)}"
    return ""


@contextmanager
def opened_store(uri: str) -> Iterator[ControlPlaneStore]:
    """A new handle on ``uri``, closed afterwards."""
    store = open_store(uri)
    try:
        yield store
    finally:
        close_store(store)
