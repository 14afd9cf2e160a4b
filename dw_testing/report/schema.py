"""The report's shape: its JSON Schema, its outcomes and how they rank.

The JSON writer and the HTML page both stand on this module, so neither imports the other
for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Worst first: a capability takes the worst outcome among its tests.
OUTCOME_ORDER = ("FAIL", "UNKNOWN", "PASS", "XFAIL", "SKIP")
SCHEMA_VERSION = 1
MAX_MESSAGE_CHARS = 8000  # a failure's message in the report; the log keeps the rest
HISTORY_WINDOW = 200  # at most this many calls of a violation travel in the report

REPORT_SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "store", "stores", "profile", "seed", "tests", "capabilities"],
    "properties": {
        "schema": {"const": SCHEMA_VERSION},
        "store": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "stores": {"type": "array", "items": {"type": "string"}},
        "profile": {"type": "string"},
        "seed": {"type": ["integer", "null"]},
        "tests": {"type": "array", "items": {
            "type": "object",
            "required": ["nodeid", "store", "capability", "outcome", "reason"],
            "properties": {
                "nodeid": {"type": "string"}, "store": {"type": "string"},
                "capability": {"type": "string"},
                "outcome": {"enum": list(OUTCOME_ORDER)},
                "reason": {"type": "string"},
                "clauses": {"type": "array", "items": {"type": "string"}},
                "message": {"type": "string", "maxLength": MAX_MESSAGE_CHARS},
                "history": {"$ref": "#/$defs/history"},
            },
        }},
        "capabilities": {"$ref": "#/$defs/matrix"},
        "by_store": {"type": "object", "additionalProperties": {"$ref": "#/$defs/matrix"}},
        "leftovers": {"type": "object", "additionalProperties": {"type": "integer"}},
        # Store name -> why it could not be opened (its factory's or provider's own words).
        "setup_errors": {"type": "object", "additionalProperties": {"type": "string"}},
        # The stores given as exec: commands, by their handshake's name.
        "exec_stores": {"type": "array", "items": {"type": "string"}},
        "versions": {"type": "object", "additionalProperties": {"type": "string"}},
        "replay": {"type": ["string", "null"]},
        # Under --dw-network, per store: faults played, calls raised by operation, creates
        # answered False over their own bytes (dw_testing/plugin/fault_tally.py).
        "faults_met": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {
                "played": {"type": "object", "additionalProperties": {"type": "integer"}},
                "raised": {"type": "object", "additionalProperties": {"type": "integer"}},
                "false_to_own_write": {"type": "integer"},
            }}},
        "kill_matrix": {"$ref": "#/$defs/kill_matrix"},
        # Per store, the judge's calls per input cell "dimension / class / position"
        # (dw_testing/judge/coverage.py); cells it does not ask of the store, and empty ones.
        "coverage": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["cells", "not_asked", "empty"],
            "properties": {
                "cells": {"type": "object",
                          "additionalProperties": {"type": "integer", "minimum": 0}},
                "not_asked": {"type": "array", "items": {"type": "string"}},
                "empty": {"type": "array", "items": {"type": "string"}},
            }}},
    },
    "$defs": {
        "matrix": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["outcome", "failing"],
            "properties": {"outcome": {"enum": list(OUTCOME_ORDER)},
                           "failing": {"type": "array", "items": {"type": "string"}}},
        }},
        # HistoryViolation.to_json(), cut to HISTORY_WINDOW calls.
        "history": {
            "type": "object",
            "required": ["key", "key_calls", "ops", "marked", "left_out", "message"],
            "properties": {
                "key": {"type": ["string", "null"]},
                "key_calls": {"type": "integer", "minimum": 0},
                "ops": {"type": "array", "maxItems": HISTORY_WINDOW, "items": {
                    "type": "object",
                    "required": ["process", "op", "key", "call", "ret"],
                    "properties": {
                        "process": {"type": "string"},
                        "op": {"enum": ["put", "put_if_absent", "get", "delete"]},
                        "key": {"type": "string"}, "call": {"type": "integer"},
                        "ret": {"type": ["integer", "null"]},
                        "value": {"type": ["string", "null"]},
                        "error": {"type": ["string", "null"]},
                        "fault": {"type": ["string", "null"]},
                    },
                }},
                "marked": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                "left_out": {"type": "integer", "minimum": 0},
                "message": {"type": "string"},
            },
        },
        "kill_matrix": {
            "type": "object", "required": ["tests", "mutants"],
            "properties": {
                "tests": {"type": "array", "items": {"type": "string"}},
                "mutants": {"type": "array", "items": {
                    "type": "object", "required": ["name", "level", "killed_by"],
                    "properties": {
                        "name": {"type": "string"}, "level": {"enum": ["store", "engine"]},
                        "defect": {"type": "string"},
                        "killed_by": {"type": "array", "items": {"type": "string"}},
                    },
                }},
                "unkillable": {"type": "object",
                               "additionalProperties": {"type": "string"}},
            },
        },
    },
}


def worst(outcomes: Iterable[str]) -> str:
    ranked = sorted(outcomes, key=OUTCOME_ORDER.index)
    return ranked[0] if ranked else "SKIP"
