"""The scheduler's cursor, ``scheduler/deadlines-seen``: where a new process's pass starts.

A pass looks at every deadline that passed since the last look (``waits/index.py``). A
scheduler remembers that time between its own passes; the cursor lets the first pass of a
*new* process (``dw serve --once`` from cron) start where the last pass of any scheduler
stopped, instead of reading every run. Like the other index records it is a hint: a
cursor that is missing or unreadable costs one full scan, never a resume.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_engine.records import decoding
from reference_engine.records.decoding import field_num


@dataclass(frozen=True)
class DeadlinesSeen:
    """Every deadline before ``until`` (epoch seconds) was looked at by a finished look."""

    until: float

    def encode(self) -> bytes:
        return decoding.dump({"v": decoding.VERSION, "until": self.until})


def decode_deadlines_seen(data: bytes | None) -> decoding.Decoded[DeadlinesSeen]:
    return decoding.decode_v2(data, "scheduler cursor", _cursor_from)


def _cursor_from(obj: dict[str, Any]) -> DeadlinesSeen:
    return DeadlinesSeen(until=field_num(obj, "until"))
