"""The conformance suites that `pytest --dw-store=...` runs against a store.

PYTEST_DONT_REWRITE: this file has no asserts. The plugin binds the name `conformance` to
the shipped suite itself, before any test run imports it; the marker keeps a later run in
the same process from warning that the package was imported before it could be rewritten.
The modules under it are still rewritten.
"""
