"""A python step for the secret-gate tests: returns the answer it was given and a key it made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MADE = "ghp_" + "Zx9" * 12  # a GitHub-token-shaped value a step makes up itself


def copy_and_make(context: Mapping[str, Any]) -> dict[str, Any]:
    return {"answer": context["steps"]["approval"]["outputs"]["payload"]["key"],
            "made": MADE, "nested": [{"password": "hunter2"}]}
