"""A store that could not be opened: its factory's or provider's own words, told once.

What a factory or provider raises is the author's configuration talking ("DDB_ENDPOINT is
not set"), not record data, so its message is shown. A message that matches a secret rule
is withheld (the line says which rule), and ``DW_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import os
import traceback

from reference_engine.secrets import scan_text

# Enough for a child's last stderr lines and the command to run by hand.
MAX_MESSAGE_CHARS = 2000


class StoreSetupError(Exception):
    """The store named ``store`` could not be opened; ``str()`` is the whole explanation."""

    def __init__(self, store: str, cause: BaseException) -> None:
        self.store = store
        super().__init__(describe(store, cause))


def _own_words(cause: BaseException) -> str:
    if isinstance(cause, KeyError) and len(cause.args) == 1:
        # os.environ["X"] raises KeyError('X'): the name is the whole message.
        return (f"{cause.args[0]!r} (a missing key: when the factory reads "
                f"os.environ[{cause.args[0]!r}], export that variable)")
    text = str(cause).strip()
    if not text:
        return "(no message)"
    rule = scan_text(text)
    if rule:
        return f"(its message is withheld: it matched the secret rule '{rule}')"
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + f"... ({len(text) - MAX_MESSAGE_CHARS} more characters)"
    return text


def describe(store: str, cause: BaseException) -> str:
    """``store 'x' could not be opened: its factory or provider raised Type: message``."""
    lines = [f"store {store!r} could not be opened: its factory or provider raised "
             f"{type(cause).__name__}: {_own_words(cause)}"]
    if os.environ.get("DW_DEBUG") == "1":
        # The frames only: the message line above has already been through the secret rules.
        lines.append("Traceback (most recent call last):\n"
                     + "".join(traceback.format_tb(cause.__traceback__)).rstrip())
    else:
        lines.append("(rerun with DW_DEBUG=1 for the traceback)")
    return "\n".join(lines)
