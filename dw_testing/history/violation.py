"""``HistoryViolation``: the ``AssertionError`` of a non-linearizable history, with its data.

The report plugin keeps :meth:`HistoryViolation.to_json` and draws the timeline again later
(:func:`dw_testing.history.timeline.render_svg`); a test sees the same message as before:
the calls as a table with their timeline beside it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from dw_testing.history.events import Operation
from dw_testing.history.timeline import DEFAULT_WINDOW, cut_window, render_svg


class HistoryViolation(AssertionError):
    """A key's history has no legal order.

    ``ops`` are the calls shown (the reported sub-history, cut to the window around the
    violation), ``marked`` the indices into ``ops`` of the calls that cannot be placed
    together; the other calls in ``ops`` explain them. ``key_calls`` counts the key's calls
    in the whole history, ``left_out`` the reported calls cut from ``ops`` by the window.
    """

    def __init__(self, message: str, *, key: str | None, ops: Sequence[Operation],
                 marked: Collection[int], key_calls: int, left_out: int = 0) -> None:
        super().__init__(message)
        wrong = [i for i in marked if not 0 <= i < len(ops)]
        if wrong:
            raise ValueError(f"marked calls {sorted(wrong)} are not indices into the "
                             f"{len(ops)} calls shown")
        self.key = key
        self.ops: tuple[Operation, ...] = tuple(ops)
        self.marked: tuple[int, ...] = tuple(sorted(set(marked)))
        self.key_calls = key_calls
        self.left_out = left_out

    @classmethod
    def from_subset(cls, message: str, *, key: str | None, ops: Sequence[Operation],
                    marked: Collection[int], key_calls: int,
                    window: int = DEFAULT_WINDOW) -> HistoryViolation:
        """Keep the calls :func:`render_text` would draw for ``ops``; re-index ``marked``."""
        cut = cut_window(ops, marked, window)
        position = {index: shown for shown, index in enumerate(cut.shown)}
        return cls(message, key=key, ops=[ops[i] for i in cut.shown],
                   marked=[position[i] for i in marked if i in position],
                   key_calls=key_calls, left_out=cut.left_out)

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def render_svg(self) -> str:
        """The timeline of the calls shown, as an inline SVG."""
        return render_svg(self.ops, marked=self.marked, omitted=self.left_out)

    def to_json(self) -> dict[str, Any]:
        """A plain dict: ``key``, ``key_calls``, ``ops`` (``Operation.to_json`` rows),
        ``marked`` (indices into ``ops``), ``left_out`` and ``message``."""
        return {
            "key": self.key,
            "key_calls": self.key_calls,
            "ops": [op.to_json() for op in self.ops],
            "marked": list(self.marked),
            "left_out": self.left_out,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> HistoryViolation:
        """The inverse of :meth:`to_json`."""
        try:
            return cls(str(row["message"]), key=row["key"],
                       ops=[Operation.from_json(op) for op in row["ops"]],
                       marked=[int(i) for i in row["marked"]],
                       key_calls=int(row["key_calls"]), left_out=int(row["left_out"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a HistoryViolation.to_json() dict (missing or wrong {exc}); "
                             "store the dict to_json returned, unchanged") from None

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle through ``args``; keep the structured fields (and any notes a
        # test added) across processes.
        return (HistoryViolation.from_json, (self.to_json(),), dict(self.__dict__))
