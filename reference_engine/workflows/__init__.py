"""Workflows: the model, the loader, the CEL expressions and ``${{ }}`` templates.

Import from the submodules (``reference_engine.workflows.loader`` and friends). The
names below are also reachable here, imported lazily so that checking a payload against a
wait's schema (``dw signal``, through ``schema_subset``) does not build the model's classes.
"""

from __future__ import annotations

import importlib
from typing import Any

from reference_engine.workflows.errors import WorkflowError

_LAZY = {
    "Job": "reference_engine.workflows.model",
    "Step": "reference_engine.workflows.model",
    "WaitSpec": "reference_engine.workflows.model",
    "Workflow": "reference_engine.workflows.model",
    "load_workflow": "reference_engine.workflows.loader",
    "parse_workflow": "reference_engine.workflows.loader",
    "with_inputs": "reference_engine.workflows.loader",
    "ExpressionError": "reference_engine.workflows.cel",
    "CelRuntimeError": "reference_engine.workflows.cel",
    "compile_cel": "reference_engine.workflows.cel",
    "interpolate": "reference_engine.workflows.interpolate",
}

__all__ = ["WorkflowError", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
