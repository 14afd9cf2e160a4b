"""The store catalogue: turn ``--dw-store`` values into StoreSpecs, entered once per session.

What is specific to pytest lives here; the engine's resolver classifies everything else.
:mod:`.resolution` says which entry a value means (a ``[tool.dw-testing.stores.NAME]`` table
read by :mod:`.pyproject`, a name of :mod:`.builtin`, a URI, ``exec:`` command, import path or
entry point); :mod:`.providers` enter each kind; :mod:`.entries` holds the resolved
:class:`StoreEntry` and its names; :mod:`.entered` keeps the session's entered stores.
"""

from dw_testing.plugin.catalogue.builtin import (
    BUILTIN_DESCRIPTIONS,
    EXEC_CHILD_MODULE,
    SERVER_PROVIDERS,
    aliases,
    builtin_names,
    python_child_reference,
)
from dw_testing.plugin.catalogue.entered import EnteredStores
from dw_testing.plugin.catalogue.entries import (
    CatalogueError,
    Provider,
    StoreEntry,
    capability_hint,
    close_matches,
    named_by_spec,
    names_itself,
    unique_ids,
)
from dw_testing.plugin.catalogue.providers import exec_name
from dw_testing.plugin.catalogue.pyproject import (
    STORE_TABLE_KEYS,
    read_pyproject_stores,
    read_pyproject_tool,
)
from dw_testing.plugin.catalogue.resolution import describe_known, known_names, resolve

__all__ = [
    "BUILTIN_DESCRIPTIONS", "EXEC_CHILD_MODULE", "SERVER_PROVIDERS", "STORE_TABLE_KEYS",
    "CatalogueError", "EnteredStores", "Provider", "StoreEntry", "aliases", "builtin_names",
    "capability_hint", "close_matches", "describe_known", "exec_name", "known_names",
    "named_by_spec", "names_itself", "python_child_reference", "read_pyproject_stores",
    "read_pyproject_tool", "resolve", "unique_ids",
]
