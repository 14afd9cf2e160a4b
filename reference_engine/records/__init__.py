"""Control-plane records: frozen values with explicit encode/decode (docs/explanation/engine.md)."""

from reference_engine.records.decoding import ABSENT, Absent, Found, Unreadable

__all__ = ["ABSENT", "Absent", "Found", "Unreadable"]
