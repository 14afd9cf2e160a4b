"""Third-party log records never reach the user as tracebacks.

Libraries under the stores (gcsfs, botocore, urllib3) log retries and failures, some
with ``logger.exception``; with no handler configured, Python's last-resort handler
prints them, traceback and all, to stderr. ``dw`` reports every failure itself in one
line, so it gives the root logger a handler that drops them, unless ``DW_DEBUG=1``.
"""

from __future__ import annotations

import logging
import os


def quiet_library_logs() -> None:
    if os.environ.get("DW_DEBUG") == "1":
        return
    root = logging.getLogger()
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())
