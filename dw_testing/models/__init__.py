"""Hypothesis state machines that compare a store under test with a model."""

from dw_testing.models.store_machine import store_machine

__all__ = ["store_machine"]
