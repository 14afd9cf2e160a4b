"""``open_store(uri)``: turn a store URI, a name or an import path into a handle."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any
from urllib.parse import SplitResult, urlsplit

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.contract import ControlPlaneStore

ENTRY_POINT_GROUP = "dw_testing.stores"
DEFAULT_STORE = "./.dw"

# scheme -> "module:function"; each function takes the split URI and returns a new handle.
_SCHEMES: dict[str, str] = {
    "memory": "reference_engine.stores.memory:from_uri",
    "file": "reference_engine.stores.fs:from_uri",
    "sqlite": "reference_engine.stores.sqlite:from_uri",
    "s3": "reference_engine.stores.s3:from_uri",
    "gs": "reference_engine.stores.gcs:from_uri",
}
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def known_schemes() -> list[str]:
    return sorted(_SCHEMES)


def load_object(path: str) -> Any:
    """Import ``package.module:attr.attr``."""
    module_name, _, attr_path = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr_path.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise StoreUnavailable(
            f"cannot import store {path!r}: {type(exc).__name__}; check the module is installed "
            "and the name after ':' exists",
            op="open",
        ) from None
    return obj


def store_entry_point(name: str) -> Any | None:
    """The object registered under ``name`` in the ``dw_testing.stores`` group, if any."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep.load()
    return None


def _from_factory(obj: Any, label: str) -> ControlPlaneStore:
    if not callable(obj):
        raise StoreUnavailable(f"store {label!r} is not callable; point at a factory", op="open")
    made = obj()
    if hasattr(made, "__enter__") and not hasattr(made, "get"):
        raise StoreUnavailable(
            f"store {label!r} is a provider (a context manager); providers run under pytest: "
            f"pytest --dw-store={label}",
            op="open",
        )
    return made  # type: ignore[no-any-return]


def open_store(uri: str | None = None) -> ControlPlaneStore:
    """Open a new handle. ``None`` or ``""`` opens the default store, ``./.dw``."""
    target = uri or DEFAULT_STORE
    match = _URI.match(target)
    if match is not None:
        parsed = urlsplit(target)
        scheme = parsed.scheme.lower()
        opener_path = _SCHEMES.get(scheme)
        if opener_path is None:
            raise StoreUnavailable(
                f"unknown store scheme {scheme!r}; known schemes: "
                f"{', '.join(s + '://' for s in known_schemes())}, a bare path, "
                "or package.module:factory",
                op="open",
            )
        opener: Callable[[SplitResult], ControlPlaneStore] = load_object(opener_path)
        return opener(parsed)
    scheme_without_slashes = target.split(":", 1)[0].lower()
    if scheme_without_slashes in _SCHEMES and not target.startswith(f"{scheme_without_slashes}://"):
        raise StoreUnavailable(
            f"store URI {scheme_without_slashes}: needs '//' after the scheme, "
            f"e.g. {scheme_without_slashes}:///abs/path",
            op="open",
        )
    if _IMPORT_PATH.match(target) and not target.startswith(("./", "/")):
        return _from_factory(load_object(target), target)
    if re.fullmatch(r"[A-Za-z][\w-]*", target):
        registered = store_entry_point(target)
        if registered is not None:
            return _from_factory(registered, target)
    # A bare path is the filesystem store.
    from reference_engine.stores.fs import from_path

    store: ControlPlaneStore = from_path(target)
    return store
