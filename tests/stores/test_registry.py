"""The one resolver: how a store reference is classified, loaded and opened."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.registry import (
    load_object,
    made_by_provider,
    open_store,
    parse_reference,
)


@pytest.fixture
def adapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An importable module whose adapter imports a backend client that is not installed."""
    (tmp_path / "adapter_ok.py").write_text(
        "from reference_engine.stores.memory import MemoryStore\n"
        "def make_store():\n    return MemoryStore('registry-test')\n"
    )
    (tmp_path / "adapter_needs_client.py").write_text("import no_such_backend_client\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("adapter_ok", "adapter_needs_client"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize(("text", "kind"), [
    ("memory://x", "uri"),
    ("FILE:///tmp/x", "uri"),
    ("adapter_ok:make_store", "import_path"),
    ("./some/dir", "path"),
    ("plain-name-with-no-entry-point", "path"),
    ("exec:deno run -A store.ts", "exec"),
    ("exec:python -m pkg.child file:///tmp/x", "exec"),
])
def test_every_reference_has_one_kind(adapters: Path, text: str, kind: str) -> None:
    assert parse_reference(text).kind == kind


def test_an_exec_reference_keeps_its_command_line_verbatim() -> None:
    reference = parse_reference("exec:deno run -A 'my store.ts' file:///x")
    assert reference.command == "deno run -A 'my store.ts' file:///x"
    assert parse_reference("memory://x").command == ""


def test_an_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(StoreUnavailable, match=r"unknown store scheme 'nosuch'.*memory://"):
        parse_reference("nosuch://x")


def test_a_scheme_without_slashes_says_how_to_write_it() -> None:
    with pytest.raises(StoreUnavailable, match=r"needs '//'.*sqlite:///abs/path"):
        parse_reference("sqlite:x.db")


@pytest.mark.parametrize(("reference", "told"), [
    ("no_such_adapter:make_store", ("module 'no_such_adapter' is not importable", "pythonpath")),
    ("adapter_needs_client:make_store",
     ("'adapter_needs_client' imports 'no_such_backend_client'", "pip install")),
    ("adapter_ok:nope", ("has no attribute 'nope'",)),
], ids=["the-adapter-module", "the-backend-client-to-install", "the-attribute"])
def test_what_cannot_be_loaded_is_named(
    adapters: Path, reference: str, told: tuple[str, ...],
) -> None:
    with pytest.raises(StoreUnavailable) as caught:
        load_object(reference)
    message = str(caught.value)
    for words in told:
        assert words in message, message


def test_an_import_path_opens_a_new_handle_each_time(adapters: Path) -> None:
    first, second = open_store("adapter_ok:make_store"), open_store("adapter_ok:make_store")
    assert isinstance(first, MemoryStore) and first is not second


def test_the_provider_rule_looks_at_what_a_call_returns() -> None:
    @contextlib.contextmanager
    def provider() -> Iterator[None]:
        yield None

    class HandleThatIsAlsoAContextManager(MemoryStore):
        def __enter__(self) -> HandleThatIsAlsoAContextManager:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    assert made_by_provider(provider())
    assert not made_by_provider(MemoryStore("registry-rule"))
    assert not made_by_provider(HandleThatIsAlsoAContextManager("registry-rule"))


def test_a_provider_outside_pytest_is_refused_with_the_pytest_command(
    adapters: Path,
) -> None:
    (adapters / "adapter_provider.py").write_text(
        "import contextlib\n@contextlib.contextmanager\ndef provide():\n    yield None\n"
    )
    try:
        with pytest.raises(StoreUnavailable, match=r"pytest --dw-store=adapter_provider:provide"):
            open_store("adapter_provider:provide")
    finally:
        sys.modules.pop("adapter_provider", None)


@pytest.mark.parametrize(("reference", "local"), [
    ("file:///tmp/dw-store", "/tmp/dw-store"),
    ("./some/dir", "some/dir"),
    ("sqlite:///tmp/dw.db", "/tmp/dw.db"),
    ("memory://x", None),
    ("exec:python -m reference_engine.stores.exec.child 'file:///tmp/x'", None),
    ("adapter_ok:make_store", None),
])
def test_only_local_stores_have_a_path_to_check(reference: str, local: str | None) -> None:
    from reference_engine.stores.registry import local_path

    found = local_path(reference)
    assert (None if found is None else str(found)) == local
