"""Proof that the suites can fail: store mutants, engine variants and the kill matrix."""
