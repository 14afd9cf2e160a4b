"""Control-plane records: frozen values with explicit encode/decode (docs/engine.md)."""

from reference_engine.records.decoding import ABSENT, Absent, Found, Unreadable

__all__ = ["ABSENT", "Absent", "Found", "Unreadable"]
