"""Workflow texts that several test folders run through the CLI (one copy, in the kit)."""

from dw_testing.kit.workflows import GATE_FLOW

__all__ = ["GATE_FLOW"]
