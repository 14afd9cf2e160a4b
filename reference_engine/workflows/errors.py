"""``WorkflowError``: a workflow file (or a run's snapshot of one) was refused."""

from __future__ import annotations


class WorkflowError(ValueError):
    """A workflow was refused. The message is one sentence: where, what, and what to do."""


def shown(name: object, limit: int = 60) -> str:
    """``name`` fit for a one-line message: control characters escaped, long names cut."""
    text = str(name)
    cut = text[:limit]
    escaped = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                      for ch in cut)
    return escaped + ("..." if len(text) > limit else "")
