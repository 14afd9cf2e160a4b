"""The TypeScript how-to's store, exactly as docs/how-to/typescript-store.md writes it: it
keeps its records in the directory it is given and refuses to start without one (an
unnamed directory once put records at the filesystem root)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reference_engine.errors import StoreError
from reference_engine.stores.contract import close_store
from reference_engine.stores.exec.client import open_exec

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "typescript-store.md"
pytestmark = pytest.mark.skipif(shutil.which("deno") is None,
                                reason="needs Deno: pip install '.[test]'")


@pytest.fixture
def page_store(tmp_path: Path) -> Path:
    # The page's one complete store: the ts block that serves it.
    [store] = [block for block in re.findall(r"```ts\n(.*?)```", PAGE.read_text(
        encoding="utf-8"), re.S) if "await serve(" in block]
    (tmp_path / "my_store.ts").write_text(store, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "reference_engine", "store", "shim-path",
                    "--copy-to", "vendor"], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path


def test_the_page_store_refuses_to_start_without_a_directory(page_store: Path) -> None:
    with pytest.raises(StoreError, match="name the store's directory"):
        close_store(open_exec(f"deno run -A {page_store / 'my_store.ts'}"))


def test_the_page_store_keeps_its_records_in_the_directory_it_is_given(
    page_store: Path,
) -> None:
    root = page_store / ".store"
    handle = open_exec(f"deno run -A {page_store / 'my_store.ts'} {root}")
    try:
        assert handle.put_if_absent("a/b", b"\x00\xff") is True
        assert handle.get("a/b") == b"\x00\xff"
    finally:
        close_store(handle)
    assert (root / "a.d" / "b.rec").read_bytes() == b"\x00\xff"
