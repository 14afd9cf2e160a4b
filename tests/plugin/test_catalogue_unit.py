"""The catalogue without pytest in the loop: resolution order, names and entered providers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dw_testing.plugin.catalogue import (
    CatalogueError,
    EnteredStores,
    aliases,
    known_names,
    resolve,
    unique_ids,
)


def test_memory_uris_share_records_between_handles() -> None:
    stores = EnteredStores()
    try:
        spec = stores.spec(resolve("memory://", session="s1", rootpath=None))
        spec.factory().put("k", b"v")
        assert spec.factory().get("k") == b"v"
        assert spec.uri == "memory://dwc-s1"
    finally:
        stores.close()


def test_a_provider_is_entered_once_and_exited_on_close() -> None:
    stores = EnteredStores()
    entry = resolve("file", session="s2", rootpath=None)
    first = stores.spec(entry)
    assert stores.spec(entry) is first
    assert first.uri is not None and first.uri.endswith("?fsync=0")
    root = Path(first.uri.removeprefix("file://").split("?")[0])
    assert root.is_dir()
    stores.close()
    assert not root.exists()


def test_pyproject_names_shadow_built_in_ones(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.dw-testing.stores.memory]\nuri = "sqlite:///' + str(tmp_path / "x.db") + '"\n'
    )
    entry = resolve("memory", session="s3", rootpath=tmp_path)
    assert entry.source.startswith("pyproject.toml")
    assert known_names(tmp_path).count("memory") == 1


@pytest.mark.parametrize("table, problem", [
    ('obj = "a:b"\nuri = "memory://"', "exactly one of"),
    ('uri = "memory://"\ncolour = "red"', "unknown key(s) colour"),
    ('uri = "memory://"\ncapabilities = {teleport = true}', "unknown capability teleport"),
])
def test_malformed_pyproject_entries_are_refused_with_the_fix(
    tmp_path: Path, table: str, problem: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.dw-testing.stores.x]\n{table}\n")
    with pytest.raises(CatalogueError, match=re.escape(problem)):
        resolve("x", session="s", rootpath=tmp_path)


def test_an_import_path_that_does_not_import_is_refused() -> None:
    with pytest.raises(CatalogueError, match="cannot import store"):
        resolve("no_such_module_dw:factory", session="s", rootpath=None)


def test_a_bare_path_is_refused_with_the_uri_form() -> None:
    with pytest.raises(CatalogueError, match="file:///abs/path"):
        resolve("./data/store", session="s", rootpath=None)


def test_duplicate_names_get_distinct_test_ids() -> None:
    entries = [resolve(v, session="s", rootpath=None) for v in ("memory", "memory://", "sqlite")]
    assert [e.name for e in unique_ids(entries)] == ["memory", "memory-2", "sqlite"]


def test_a_server_provider_named_by_import_path_keeps_its_built_in_alias() -> None:
    entry = resolve("dw_testing.emulators.moto:moto_raw", session="s", rootpath=None)
    assert aliases(entry) == {"moto_raw", "moto"}
    assert aliases(resolve("memory", session="s", rootpath=None)) == {"memory"}


def test_a_capability_table_for_a_built_in_store_overrides_its_capabilities(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.dw-testing.stores.sqlite]\ncapabilities = {durable_reopen = false}\n")
    entry = resolve("sqlite", session="s", rootpath=tmp_path)
    assert entry.overrides == {"durable_reopen": False}
    assert entry.source == resolve("sqlite", session="s", rootpath=None).source


def test_a_capability_table_that_names_no_store_lists_the_close_matches(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.dw-testing.stores.sqlte]\ncapabilities = {durable_reopen = false}\n")
    with pytest.raises(CatalogueError) as refused:
        resolve("sqlte", session="s", rootpath=tmp_path)
    assert "close matches: sqlite" in str(refused.value)
    assert "add `obj" in str(refused.value)


def test_an_unknown_store_name_lists_the_close_matches() -> None:
    with pytest.raises(CatalogueError, match=r"unknown store name 'memroy' \(close matches: "
                                             r"memory"):
        resolve("memroy", session="s", rootpath=None)
