"""The trial running now, so every handle a store's factory opens meanwhile is judged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dw_testing.judge.trial import Trial


class TrialSlot:
    """Holds the running test's :class:`Trial`; a test runs at a time per process."""

    def __init__(self) -> None:
        self.current: Trial | None = None

    def judged_factory(self, factory: Callable[[], Any]) -> Callable[[], Any]:
        """``factory``, whose handles the running trial (if any) records."""
        def open_handle() -> Any:
            handle = factory()
            trial = self.current
            return handle if trial is None else trial.wrap(handle)

        return open_handle
