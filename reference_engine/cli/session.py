"""Build the Engine for one CLI process: the store from ``--store``, the clock from DW_CLOCK."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from reference_engine.cli.options import opened_store
from reference_engine.cli.output import note, progress
from reference_engine.clock import clock_from_env
from reference_engine.stores.registry import require_existing

if TYPE_CHECKING:
    from reference_engine.engine import Engine

LOOKS_DIR_ENV = "DW_CLAIM_LOOKS_DIR"


def claim_looks_path(store_uri: str) -> Path:
    """The host-local directory where this user's CLI calls share their looks at leases.

    Monotonic time means nothing on another host and restarts at boot, so the looks live
    in the temporary directory (host-local, cleared at boot), one directory per user and
    one below it per store and clock: a ``dw resume`` that met a dead owner's lease and
    said ``busy`` lets a later one, after ``ttl + grace`` has passed (also under
    ``DW_CLOCK``), take the run over. See :mod:`reference_engine.runs.claim_looks`.
    """
    # Imported here: dw signal and dw answer take no claim and never need the looks.
    import hashlib
    import platform
    import tempfile

    base = os.environ.get(LOOKS_DIR_ENV) or str(
        Path(tempfile.gettempdir()) / f"dw-claim-looks-{os.getuid()}")
    where = store_uri if "://" in store_uri else os.path.abspath(store_uri)
    identity = "\n".join((platform.node(), where, os.environ.get("DW_CLOCK", "")))
    return Path(base) / hashlib.sha256(identity.encode()).hexdigest()[:32]


def private_looks_dir(looks: Path) -> Path:
    """``looks`` and its parent made or checked private (0700, ours); else a private
    fallback, with a note on stderr. Looks are an optimisation: never fatal."""
    from reference_engine.runs.claim_looks import ensure_private_dir

    parent = ensure_private_dir(looks.parent, note)
    return ensure_private_dir(parent / looks.name, note)


@contextmanager
def engine_session(store_uri: str, *, create: bool = False,
                   claims: bool = True) -> Iterator[Engine]:
    """An Engine on a fresh handle of ``store_uri``; the handle is closed afterwards.

    Only a command that starts runs passes ``create``: any other refuses a local store
    that does not exist, rather than creating an empty one from a typo. A command that
    takes no run claim (``dw signal``, ``dw answer``) passes ``claims=False`` and skips the
    claim looks' directory.
    """
    clock = clock_from_env()  # a bad DW_CLOCK fails before the store is touched
    if not create:
        require_existing(store_uri, f"dw run WORKFLOW.yaml --store {shlex.quote(store_uri)}")
    # Imported here so `dw store ...` keeps working even if the engine cannot import.
    from reference_engine.engine import Engine

    looks = private_looks_dir(claim_looks_path(store_uri)) if claims else None
    with opened_store(store_uri) as store:
        yield Engine(store, clock, progress=progress, claim_looks=looks)
