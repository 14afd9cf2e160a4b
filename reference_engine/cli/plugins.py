"""Plugin commands: the ``dw.commands`` entry points, found without importlib.metadata.

``importlib.metadata`` costs more to import than the rest of ``dw --help`` put together,
and ``entry_points()`` parses every installed distribution's metadata. A plugin command
needs only the ``[dw.commands]`` section of each ``entry_points.txt``, so this module
reads just those files, in ``sys.path`` order, the first distribution of a name winning,
as importlib.metadata does. Nothing is imported until a command runs.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

GROUP = "dw.commands"
_METADATA_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class PluginCommand:
    """One ``name = module:attribute`` line of a distribution's ``[dw.commands]``."""

    name: str
    target: str  # "module:attribute"
    package: str  # the distribution that provides it

    def load(self) -> object:
        import importlib

        module_name, _, attributes = self.target.partition(":")
        loaded: object = importlib.import_module(module_name.strip())
        for part in attributes.strip().split(".") if attributes.strip() else ():
            loaded = getattr(loaded, part)
        return loaded


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """``(name, value)`` pairs of one INI section (the entry_points.txt format)."""
    pairs, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
            continue
        if inside and "=" in line:
            name, _, value = line.partition("=")
            pairs.append((name.strip(), value.strip()))
    return pairs


def _package_name(folder: str) -> str:
    stem = folder.rsplit(".", 1)[0]
    return stem.split("-", 1)[0].replace("_", "-")


def plugin_commands(group: str = GROUP, paths: list[str] | None = None) -> dict[str, PluginCommand]:
    """Every command registered under ``group`` by an installed distribution."""
    found: dict[str, PluginCommand] = {}
    seen_packages: set[str] = set()
    for entry in sys.path if paths is None else paths:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:  # a zip, a missing folder: nothing this reader can list
            continue
        for folder in names:
            if not folder.endswith(_METADATA_SUFFIXES):
                continue
            package = _package_name(folder)
            if package.lower() in seen_packages:
                continue  # an earlier sys.path entry already provides this distribution
            seen_packages.add(package.lower())
            try:
                with open(os.path.join(entry or ".", folder, "entry_points.txt"),
                          encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            for name, target in _section(text, group):
                found.setdefault(name, PluginCommand(name, target, package))
    return found
