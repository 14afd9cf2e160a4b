"""Third-party log records never reach the user as tracebacks.

Libraries under the stores (gcsfs, botocore, urllib3) log retries and failures, some
with ``logger.exception``; with no handler configured, Python's last-resort handler
prints them, traceback and all, to stderr. ``dw`` reports every failure itself in one
line, so it gives the root logger a handler that drops them, unless ``DW_DEBUG=1``.

``dw`` itself never logs, and importing ``logging`` costs a few milliseconds of every
start, so the handler is added when something first imports ``logging`` (a store's
library, a plugin command), not before: a command on a local store never pays for it.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec


def _drop_records(logging: Any) -> None:
    root = logging.getLogger()
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())


class _AddHandlerAfter:
    """The loader that found ``logging``, which also adds the handler once it has run."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... as the real one
        return getattr(self._loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _drop_records(module)


class _OnLoggingImport:
    """A finder that finds nothing itself: on the first import of ``logging`` it steps
    aside, lets the other finders find it, and hands back their spec with the loader
    wrapped, so the module is imported once, as usual, and gets the handler."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name != "logging":
            return None
        sys.meta_path.remove(self)
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = find(name, path, target) if find is not None else None
            if spec is None:
                continue
            if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = cast("Loader", _AddHandlerAfter(spec.loader))
            return spec
        return None


def quiet_library_logs() -> None:
    if os.environ.get("DW_DEBUG") == "1":
        return
    logging = sys.modules.get("logging")
    if logging is not None:
        _drop_records(logging)
    elif not any(isinstance(finder, _OnLoggingImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OnLoggingImport())
