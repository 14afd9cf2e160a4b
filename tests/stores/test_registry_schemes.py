"""Store schemes that installed packages add (``dw_testing.schemes`` entry points).

A package is "installed" here as a dist-info directory on sys.path, which is all that
entry points need.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reference_engine.errors import StoreUnavailable
from reference_engine.stores.memory import MemoryStore
from reference_engine.stores.registry import known_schemes, open_store

ROOT = Path(__file__).resolve().parents[2]
OPENERS = '''
from reference_engine.stores.memory import MemoryStore

SEEN = []
STORES = {}


def open_uri(uri):
    SEEN.append(uri)
    return STORES.setdefault(uri.split("://", 1)[1], MemoryStore())


def not_a_store(uri):
    return object()


def refused(uri):
    raise ConnectionRefusedError("password=hunter2 in a backend message")


NOT_CALLABLE = 3
'''


def _install(site: Path, schemes: dict[str, str], module: str = OPENERS) -> None:
    site.mkdir(exist_ok=True)
    (site / "schemepkg.py").write_text(module, encoding="utf-8")
    dist = site / "schemepkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: schemepkg\nVersion: 1.0\n",
                                   encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in schemes.items())
    (dist / "entry_points.txt").write_text(f"[dw_testing.schemes]\n{lines}", encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    _install(site, {"kv": "schemepkg:open_uri", "KVBAD": "schemepkg:not_a_store",
                    "kvdown": "schemepkg:refused", "kvodd": "schemepkg:NOT_CALLABLE",
                    "kvgone": "schemepkg_missing:open", "memory": "schemepkg:not_a_store"})
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("schemepkg", None)
    return site


@pytest.mark.dw_clause("C-CHILD-1")
def test_a_registered_scheme_opens_with_the_whole_uri(site: Path) -> None:
    import schemepkg

    first = open_store("kv://host:1/bucket?x=1")
    second = open_store("KV://host:1/bucket?x=1")
    first.put("a", b"1")
    assert second.get("a") == b"1"
    assert schemepkg.SEEN == ["kv://host:1/bucket?x=1", "KV://host:1/bucket?x=1"]
    assert {"kv", "kvbad", "kvdown"} <= set(known_schemes())


def test_a_built_in_scheme_cannot_be_replaced(site: Path) -> None:
    assert isinstance(open_store("memory://x"), MemoryStore)
    assert known_schemes().count("memory") == 1


@pytest.mark.parametrize(("uri", "expected"), [
    ("kvbad://h/b", "returned object, not a store handle"),
    ("kvdown://h/b", "opener failed (ConnectionRefusedError)"),
    ("kvodd://h/b", "is not callable; register a function that takes the URI"),
    ("kvgone://h/b", "failed to load (ModuleNotFoundError)"),
])
def test_a_broken_registered_scheme_is_refused_with_what_to_fix(
    site: Path, uri: str, expected: str,
) -> None:
    with pytest.raises(StoreUnavailable) as refused:
        open_store(uri)
    assert expected in str(refused.value)
    assert "hunter2" not in str(refused.value)
    assert "schemepkg" in str(refused.value) or "kvdown" in uri or "kvbad" in uri


def test_an_unknown_scheme_names_the_registered_ones_and_the_group(site: Path) -> None:
    with pytest.raises(StoreUnavailable) as refused:
        open_store("nosuch://h/b")
    message = str(refused.value)
    assert "kv://" in message and "memory://" in message
    assert "'dw_testing.schemes' entry-point group" in message


def test_a_registered_scheme_without_slashes_is_refused_with_the_form(site: Path) -> None:
    with pytest.raises(StoreUnavailable, match="needs '//' after the scheme"):
        open_store("kv:/h/b")


@pytest.mark.dw_clause("C-CHILD-1")
def test_a_child_process_opens_a_registered_scheme_from_its_environment(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    _install(site, {"kvfile": "schemepkg:open_file"}, textwrap.dedent('''
        from reference_engine.stores.fs import from_path

        def open_file(uri):
            return from_path(uri.split("://", 1)[1])
    '''))
    records = tmp_path / "records"
    script = (f"from reference_engine.stores.registry import open_store; "
              f"open_store('kvfile://{records}').put('k', b'from the child')")
    env = {"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
    from reference_engine.stores.fs import from_path

    assert from_path(str(records)).get("k") == b"from the child"
