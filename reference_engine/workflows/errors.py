"""``WorkflowError``: a workflow file (or a run's snapshot of one) was refused."""

from __future__ import annotations


class WorkflowError(ValueError):
    """A workflow was refused. The message is one sentence: where, what, and what to do."""
