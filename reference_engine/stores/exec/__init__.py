"""Stores in another process, in any language, over the ``dw-store/1`` JSON-lines protocol.

``open_store("exec:<command line>")`` starts the command for each handle (see
``docs/reference/store-protocol.md``); :mod:`.child` serves any Python store that way and
``shim/dw_store_shim.js`` serves a TypeScript or JavaScript one (``dw store shim-path``).
"""

from __future__ import annotations

from pathlib import Path

EXEC_PREFIX = "exec:"
SHIM_FILE = "dw_store_shim.js"
RUNNER_FILE = "dw_store_run.js"


# Package data sits beside this file (a plain directory install, editable or not); not
# importlib.resources, whose import costs every exec child tens of milliseconds at start.
_HERE = Path(__file__).resolve().parent


def shim_path() -> Path:
    """Where the installed TypeScript/JavaScript shim lives (its .d.ts beside it)."""
    return _HERE / "shim" / SHIM_FILE


def runner_path() -> Path:
    """The runner beside the shim: serves the default export of the module it is given."""
    return _HERE / "shim" / RUNNER_FILE


def copy_shim(directory: str | Path) -> Path:
    """Copy the shim and its type declarations into ``directory``; the copied shim's path."""
    import shutil

    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    for source in (shim_path(), shim_path().with_suffix(".d.ts")):
        shutil.copyfile(source, target / source.name)
    return target / SHIM_FILE


def schema_dir() -> Path:
    """The directory of the protocol's JSON Schemas (package data)."""
    return _HERE / "schemas"


def end_spares() -> None:
    """End every spare child this process started ahead of need (see :mod:`.spares`).

    Call it before removing what the children use, such as a store's temporary directory.
    """
    from reference_engine.stores.exec.client import end_spares as end

    end()
