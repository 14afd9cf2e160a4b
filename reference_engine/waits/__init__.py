"""Waits: registration by the executor, outcomes settled once, delivery from any host."""
