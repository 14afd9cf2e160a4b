"""Python steps used by the engine tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def echo_inputs(context: Mapping[str, Any]) -> dict[str, Any]:
    return {"inputs": dict(context["inputs"])}


def mutate(context: Any) -> None:
    context["inputs"] = {}  # a read-only context refuses this


def leak(_context: Any) -> None:
    raise RuntimeError("could not log in with AKIAABCDEFGHIJKLMNOP")
