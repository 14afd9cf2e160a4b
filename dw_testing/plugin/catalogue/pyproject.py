"""Reading the ``[tool.dw-testing]`` table of the rootdir's ``pyproject.toml``."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from dw_testing.plugin.catalogue.entries import CatalogueError

# The keys of a [tool.dw-testing.stores.NAME] table (docs/reference/plugin.md).
STORE_TABLE_KEYS = ("obj", "uri", "exec", "capabilities", "description")


def read_pyproject_stores(rootpath: Path | None) -> dict[str, dict[str, Any]]:
    """The ``[tool.dw-testing.stores]`` table of ``rootpath/pyproject.toml`` (``{}`` if none)."""
    if rootpath is None:
        return {}
    path = rootpath / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogueError(f"{path} is not valid TOML ({exc}); fix it or remove it") from None
    stores = data.get("tool", {}).get("dw-testing", {}).get("stores", {})
    if not isinstance(stores, dict):
        raise CatalogueError(f"{path}: [tool.dw-testing.stores] must be a table of tables")
    return stores


def read_pyproject_tool(rootpath: Path | None) -> dict[str, Any]:
    """The whole ``[tool.dw-testing]`` table (``{}`` if none)."""
    if rootpath is None or not (rootpath / "pyproject.toml").is_file():
        return {}
    try:
        data = tomllib.loads((rootpath / "pyproject.toml").read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError:
        return {}
    tool = data.get("tool", {}).get("dw-testing", {})
    return tool if isinstance(tool, dict) else {}
