"""Serving: the passes of ``dw serve``, the scheduler that finds what is due, and backoff."""
