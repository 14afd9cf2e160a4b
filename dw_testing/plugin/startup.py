"""The start-up check: a store declared ``cross_process`` must open in a fresh interpreter.

The child opens the store from the spec's ``uri`` and reads one missing key, so a missing
module, client or credential shows up here too.

The suite's cross-process tests start children that call ``open_store(uri)``. When that
cannot work (the store's module is not importable there, a client is missing, the spec has
no ``uri``), every one of them would fail on its own, some as bare dict comparisons. The
check tries once, before the first test, and stops the run with one error that says what
to do.
"""

from __future__ import annotations

import subprocess
import sys

from dw_testing.kit.child_env import child_environment
from dw_testing.kit.spec import StoreSpec
from reference_engine.stores.registry import IMPORT_PATH

CHECK_TIMEOUT_SECONDS = 120.0
_OPEN_AND_CLOSE = (
    "import sys\n"
    "from reference_engine.stores.contract import close_store\n"
    "from reference_engine.stores.registry import open_store\n"
    "store = open_store(sys.argv[1])\n"
    "try:\n"
    "    store.get('dwc-startup-check/probe')\n"
    "finally:\n"
    "    close_store(store)\n"
)


def _shown(uri: str) -> str:
    """An import path as written; a URI by its scheme only (it may hold a password)."""
    return repr(uri) if IMPORT_PATH.match(uri) else f"its {uri.split('://', 1)[0]}:// URI"


def cross_process_problem(name: str, spec: StoreSpec) -> str | None:
    """Why a child process cannot open ``spec``, or ``None`` when it can."""
    if not spec.uri:
        return (f"store {name} declares cross_process but its StoreSpec has no uri, so a child "
                "process cannot open it; give the spec a uri or an import path "
                "(package.module:factory), or declare cross_process = false")
    try:
        finished = subprocess.run(
            [sys.executable, "-c", _OPEN_AND_CLOSE, spec.uri], capture_output=True, text=True,
            env=child_environment(), timeout=CHECK_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return (f"store {name} declares cross_process, but opening {_shown(spec.uri)} in a "
                f"fresh Python process did not finish in {CHECK_TIMEOUT_SECONDS:.0f} s; "
                "check that the backend is reachable from another process")
    if finished.returncode == 0:
        return None
    lines = [line for line in finished.stderr.strip().splitlines() if line.strip()]
    why = lines[-1] if lines else f"exit status {finished.returncode}"
    return (f"store {name} declares cross_process, but a fresh Python process cannot open "
            f"{_shown(spec.uri)}: {why}. A child gets this run's environment and import path "
            "(pytest's pythonpath included): make the store open there (pip install -e . or "
            "the missing client; an import-path or built-in URI as the spec's uri), or "
            "declare cross_process = false")
