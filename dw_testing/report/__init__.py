"""The conformance report: its JSON Schema, the writer, the HTML page and the run's facts.

Imports no pytest hook module: the plugin (:mod:`dw_testing.plugin.report`), the self-test
and ``dw conformance`` all write through it.
"""
