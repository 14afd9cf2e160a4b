"""The one resolver of store references: ``open_store(reference)`` and what it is built on.

A reference is, in this order of precedence:

1. a URI ``scheme://...`` whose scheme is built in (memory, file, sqlite, s3, gs) or
   registered by an installed package in the ``dw_testing.schemes`` entry-point group
   (``myserver = "mystore:open_uri"``: a function that takes the whole URI string and
   returns a new handle); a built-in scheme cannot be replaced; or
   ``exec:<command line>``, a child process per handle speaking ``dw-store/1``;
2. an import path ``package.module:obj`` naming a factory (or, under pytest, a provider);
3. a name registered in the ``dw_testing.stores`` entry-point group;
4. anything else: a bare path, the filesystem store.

The pytest plugin's catalogue adds only what is specific to pytest (pyproject tables,
built-in provider names, providers entered once per session) on top of
:func:`parse_reference` and :func:`made_by_provider`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import SplitResult, unquote, urlsplit

from reference_engine.errors import StoreError, StoreUnavailable
from reference_engine.stores.contract import ControlPlaneStore, close_store

ENTRY_POINT_GROUP = "dw_testing.stores"
SCHEME_ENTRY_POINT_GROUP = "dw_testing.schemes"
DEFAULT_STORE = "./.dw"

# scheme -> "module:function"; each function takes the split URI and returns a new handle.
_SCHEMES: dict[str, str] = {
    "memory": "reference_engine.stores.memory:from_uri",
    "file": "reference_engine.stores.fs:from_uri",
    "sqlite": "reference_engine.stores.sqlite:from_uri",
    "s3": "reference_engine.stores.s3:from_uri",
    "gs": "reference_engine.stores.gcs:from_uri",
}
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
NAME = re.compile(r"^[A-Za-z][\w-]*$")

ReferenceKind = Literal["uri", "exec", "import_path", "entry_point", "path"]
EXEC_PREFIX = "exec:"


@dataclass(frozen=True)
class StoreReference:
    """A classified store reference. ``target`` is the loaded object for import paths and
    entry points, and ``None`` for URIs and paths (they are opened, not loaded)."""

    kind: ReferenceKind
    text: str
    target: Any = None
    source: str = ""

    @property
    def scheme(self) -> str:
        return self.text.split("://", 1)[0].lower() if self.kind == "uri" else ""

    @property
    def command(self) -> str:
        """The command line of an ``exec:`` reference."""
        return self.text[len(EXEC_PREFIX):] if self.kind == "exec" else ""


def registered_schemes() -> dict[str, str]:
    """Schemes that installed packages add, and what each points at (built-ins excluded)."""
    from importlib.metadata import entry_points

    found = {ep.name.lower(): ep.value for ep in entry_points(group=SCHEME_ENTRY_POINT_GROUP)}
    return {name: value for name, value in sorted(found.items()) if name not in _SCHEMES}


def is_builtin_uri(reference: str) -> bool:
    """Whether ``reference`` is a URI of a built-in scheme (memory, file, sqlite, s3, gs)."""
    return bool(URI.match(reference)) and reference.split("://", 1)[0].lower() in _SCHEMES


def known_schemes() -> list[str]:
    return sorted({*_SCHEMES, *registered_schemes()})


def _scheme_opener(scheme: str) -> Callable[[str], Any]:
    """The function a package registered for ``scheme``; it takes the URI string."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=SCHEME_ENTRY_POINT_GROUP):
        if ep.name.lower() == scheme:
            owner = f"{ep.dist.name} " if ep.dist is not None else ""
            try:
                opener = ep.load()
            except Exception as exc:
                raise StoreUnavailable(
                    f"the {scheme}:// scheme registered by {owner}({ep.value}) failed to load "
                    f"({type(exc).__name__}); run python -c 'import {ep.module}' to see why",
                    op="open",
                ) from None
            if not callable(opener):
                raise StoreUnavailable(
                    f"the {scheme}:// scheme registered by {owner}({ep.value}) is not callable; "
                    "register a function that takes the URI and returns a new handle",
                    op="open",
                )
            return opener  # type: ignore[no-any-return]
    raise StoreUnavailable(f"unknown store scheme {scheme!r}", op="open")


def load_object(path: str) -> Any:
    """Import ``package.module:attr.attr``; a failure names the module or attribute missing."""
    module_name, _, attr_path = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        if missing == module_name or module_name.startswith(missing + "."):
            why = (f"module {missing!r} is not importable; check it is installed or on the "
                   "path (pytest: `pythonpath = [\"src\"]` under [tool.pytest.ini_options])")
        else:
            why = (f"{module_name!r} imports {missing!r}, which is not installed; "
                   f"pip install the package that provides {missing!r}")
        raise StoreUnavailable(f"cannot import store {path!r}: {why}", op="open") from None
    except ImportError as exc:
        raise StoreUnavailable(
            f"cannot import store {path!r}: importing {module_name!r} failed "
            f"({type(exc).__name__}: {exc}); run python -c 'import {module_name}' to see why",
            op="open",
        ) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise StoreUnavailable(
                f"cannot import store {path!r}: {module_name!r} has no attribute "
                f"{attr_path!r}; check the name after ':'",
                op="open",
            ) from None
    return obj


def store_entry_point(name: str) -> tuple[Any, str] | None:
    """The object registered under ``name`` in the ``dw_testing.stores`` group, and its value."""
    from importlib.metadata import entry_points  # ~20 ms to import: only when names are looked up

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep.load(), ep.value
    return None


def registered_stores() -> dict[str, str]:
    """Entry-point store names and what each points at, sorted by name."""
    from importlib.metadata import entry_points

    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return dict(sorted(found.items()))


def parse_reference(text: str) -> StoreReference:
    """Classify ``text`` (loading import paths and entry points); refuses an unknown scheme."""
    if text.startswith(EXEC_PREFIX):
        return StoreReference("exec", text, source=text)
    if URI.match(text):
        scheme = text.split("://", 1)[0].lower()
        if scheme not in _SCHEMES and scheme not in registered_schemes():
            raise StoreUnavailable(
                f"unknown store scheme {scheme!r}; known schemes: "
                f"{', '.join(s + '://' for s in known_schemes())}, a bare path, "
                "or package.module:factory (a package adds a scheme through the "
                f"{SCHEME_ENTRY_POINT_GROUP!r} entry-point group)",
                op="open",
            )
        return StoreReference("uri", text)
    bare_scheme = text.split(":", 1)[0].lower()
    if bare_scheme in _SCHEMES or (":" in text and not IMPORT_PATH.match(text)
                                   and bare_scheme in registered_schemes()):
        raise StoreUnavailable(
            f"store URI {bare_scheme}: needs '//' after the scheme, e.g. {bare_scheme}:///abs/path",
            op="open",
        )
    if IMPORT_PATH.match(text):
        return StoreReference("import_path", text, load_object(text), source=text)
    if NAME.match(text):
        registered = store_entry_point(text)
        if registered is not None:
            obj, value = registered
            return StoreReference("entry_point", text, obj, source=f"entry point {value}")
    return StoreReference("path", text)


def made_by_provider(made: object) -> bool:
    """Whether a zero-argument call's result is a provider's context manager, not a handle.

    The one rule for telling a provider from a factory: a handle has ``get`` or ``put``; a
    provider returns a context manager that has neither.
    """
    is_handle = hasattr(made, "get") or hasattr(made, "put")
    return hasattr(made, "__enter__") and not is_handle


def open_from_factory(obj: Any, label: str) -> ControlPlaneStore:
    """A new handle from a factory; a provider is refused with the command that runs it."""
    if not callable(obj):
        raise StoreUnavailable(f"store {label!r} is not callable; point at a factory", op="open")
    made = obj()
    if made_by_provider(made):
        close_store(made)
        raise StoreUnavailable(
            f"store {label!r} is a provider (a context manager); providers run under pytest: "
            f"pytest --dw-store={label}",
            op="open",
        )
    # Imported here: it brings asyncio, which an exec child serving a URI never needs.
    from reference_engine.stores.async_adapter import adapt_if_async

    return adapt_if_async(made, label=label)  # type: ignore[no-any-return]


def local_path(uri: str | None) -> Path | None:
    """Where a built-in local store keeps its data: the directory of a bare path or
    ``file://`` URI, the database file of ``sqlite://``. ``None`` for any other store."""
    target = uri or DEFAULT_STORE
    if target.startswith(EXEC_PREFIX):
        return None  # a child process keeps the data, wherever its command says
    if URI.match(target) is None:
        if IMPORT_PATH.match(target):
            return None
        if NAME.match(target) and target in registered_stores():
            return None
        return Path(target)
    parsed = urlsplit(target)
    scheme, path = parsed.scheme.lower(), unquote(parsed.path)
    if scheme == "file" and path.startswith("/"):
        return Path(path)
    if scheme == "sqlite" and path.strip("/"):
        if parsed.netloc in ("", "localhost"):
            return Path("/" + path.lstrip("/"))
        if parsed.netloc in (".", ".."):
            return Path(parsed.netloc + path)
    return None


def require_existing(uri: str | None, create_hint: str) -> None:
    """Refuse a local store that does not exist yet: a command that only reads or delivers
    must not create an empty store from a mistyped ``--store``."""
    where = local_path(uri)
    if where is not None and not where.exists():
        raise StoreUnavailable(
            f"there is no store at {where}; check --store (or $DW_STORE) for a typo. "
            f"A store is created by the first run: {create_hint}", op="open")


def open_store(uri: str | None = None) -> ControlPlaneStore:
    """Open a new handle. ``None`` or ``""`` opens the default store, ``./.dw``.

    ``exec:<command line>`` starts the command for this handle and talks ``dw-store/1``
    to it (``docs/reference/store-protocol.md``).
    """
    reference = parse_reference(uri or DEFAULT_STORE)
    if reference.kind == "exec":
        # Imported only when used: it brings threads and subprocess handling.
        from reference_engine.stores.exec.client import open_exec

        return open_exec(reference.command)
    if reference.kind == "uri":
        if reference.scheme not in _SCHEMES:
            return _open_registered_scheme(reference)
        opener: Callable[[SplitResult], ControlPlaneStore] = load_object(
            _SCHEMES[reference.scheme])
        return opener(urlsplit(reference.text))
    if reference.kind in ("import_path", "entry_point"):
        return open_from_factory(reference.target, reference.text)
    # A bare path is the filesystem store.
    from reference_engine.stores.fs import from_path

    store: ControlPlaneStore = from_path(reference.text)
    return store


def _open_registered_scheme(reference: StoreReference) -> ControlPlaneStore:
    opener = _scheme_opener(reference.scheme)
    try:
        made = opener(reference.text)
    except StoreError:
        raise
    except Exception as exc:  # the backend's own: name its type only, the text may hold secrets
        raise StoreUnavailable(
            f"the {reference.scheme}:// opener failed ({type(exc).__name__}); check the "
            "server it names is up, or open the URI by hand to see the error",
            op="open",
        ) from None
    from reference_engine.stores.async_adapter import adapt_if_async

    made = adapt_if_async(made, label=f"{reference.scheme}://")
    if made_by_provider(made) or not (hasattr(made, "get") and hasattr(made, "put")):
        close_store(made)
        raise StoreUnavailable(
            f"the {reference.scheme}:// opener returned {type(made).__name__}, not a store "
            "handle; it must return a new handle (an object with put, get, delete, list)",
            op="open",
        )
    handle: ControlPlaneStore = made
    return handle
