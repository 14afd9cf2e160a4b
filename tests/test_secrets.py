"""The secret gate: every rule matches and misses, by name only; the journal filter redacts."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_engine.secrets import (
    RULE_NAMES,
    SecretRefused,
    SecretScanError,
    filter_event,
    is_credential_name,
    scan,
    scan_or_refuse,
)

# Built by concatenation so that no literal credential sits in the source.
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SESSION = "ASIA" + "Y34FZKBOKMUTVV7A"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop"
SLACK = "xoxb-" + "1234567890-abcdefABCDEF"
OPENAI = "sk-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
GOOGLE = "AIza" + "SyA-1234567890abcdefghijklmnopqrstu"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0"
       + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
BEARER = "Authorization: " + "Bearer abcdef123456"

POSITIVE: list[tuple[str, Any]] = [
    ("aws_access_key_id", AWS),
    ("aws_access_key_id", f"key={AWS_SESSION};"),
    ("pem_private_key", PEM),
    ("pem_private_key", "-----BEGIN " + "PRIVATE KEY-----"),
    ("pem_private_key", "-----BEGIN OPENSSH " + "PRIVATE KEY-----"),
    ("pem_private_key", "-----BEGIN ENCRYPTED " + "PRIVATE KEY-----"),
    ("pem_private_key", "-----BEGIN PGP PRIVATE " + "KEY BLOCK-----"),
    ("bearer_token", BEARER),
    ("bearer_token", 'curl -H "authorization: bearer abc.def-ghi~jk"'),
    ("bearer_token", "Bearer " + "abcdefghijk1mnopqrstuvwx"),
    ("bearer_token", {"Authorization": "Bearer abcdefgh12"}),
    ("github_token", GITHUB),
    ("github_token", "token " + GITHUB_PAT),
    ("github_token", "gho_" + "x" * 36),
    ("slack_token", SLACK),
    ("slack_token", "xoxp-" + "123456789012"),
    ("openai_style_key", OPENAI),
    ("openai_style_key", "sk-proj-" + "A" * 30),
    ("google_api_key", GOOGLE),
    ("jwt", JWT),
    ("jwt", f"cookie=session={JWT}; path=/"),
    ("credential_field", {"password": "hunter2"}),
    ("credential_field", {"nested": [{"db_password": "x"}]}),
]

NEGATIVE: list[Any] = [
    "AKIA" + "IOSFODNN7EXAMPL",            # one character short
    "X" + AWS,                              # part of a longer upper-case word
    AWS.lower(),
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "Authorization: Basic dXNlcjpwYXNz",
    "Authorization: Bearer",
    "the bearer of bad news",
    "Bearer instrument-calibration-procedure",
    {"Authorization": "Bearer"},
    "ghp_short",
    "ghx_" + "a" * 36,
    "xoxb-123",
    "xox-abcdefghijkl",
    "sk-learn",
    "task-abcdefghijklmnopqrstuvwxyz0123",  # 'sk-' inside a word
    "AIza" + "short",
    "eyJhbGciOiJIUzI1NiJ9",                 # a JWT header alone
    "a.b.c",
    {"password": ""},
    {"password": "   "},
    {"password": None},
    {"password": 1234},
    {"token": ["not", "a", "string"]},
    {"token_count": "12"},
    {"max_tokens": "256"},
    {"tokenizer": "bpe"},
    {"secretary": "ann"},
    {"passwords": "see vault"},
    {"approved": True, "comment": "ship it"},
    None, 0, 1.5, True, "", [], {},
]


@pytest.mark.parametrize(("rule", "value"), POSITIVE, ids=[r for r, _ in POSITIVE])
def test_each_rule_matches_by_name(rule: str, value: Any) -> None:
    assert rule in RULE_NAMES
    assert scan(value) == rule


@pytest.mark.parametrize("value", NEGATIVE, ids=[repr(v)[:30] for v in NEGATIVE])
def test_near_misses_do_not_match(value: Any) -> None:
    assert scan(value) is None


def test_every_rule_has_a_positive_case() -> None:
    assert {rule for rule, _ in POSITIVE} == set(RULE_NAMES)


@pytest.mark.parametrize("name", [
    "password", "PASSWORD", "passwd", "db_password", "dbPassword", "DB-PASSWORD",
    "api_key", "apikey", "apiKey", "API-Key", "api.key", "api key", "APIKEY", "x_api_key",
    "secret", "client_secret", "clientSecret", "secret_key", "SecretKey",
    "aws_secret_access_key", "token", "access_token", "x-auth-token", "authToken",
    "private_key", "privateKey", "PRIVATE-KEY", "credentials", "gcp.credentials",
    "password_confirm", "password_value", "tokenValue", "new_password",
])
def test_credential_names(name: str) -> None:
    assert is_credential_name(name)
    assert scan({name: "x"}) == "credential_field"


@pytest.mark.parametrize("name", [
    "token_count", "max_tokens", "tokens", "tokenizer", "secretary", "passwords",
    "password_policy", "keyboard", "api", "key", "private", "credit", "author", "approved", "",
])
def test_names_that_only_look_like_credentials(name: str) -> None:
    assert not is_credential_name(name)
    assert scan({name: "x"}) is None


def test_keys_themselves_are_scanned() -> None:
    assert scan({AWS: "value"}) == "aws_access_key_id"
    assert scan([{"ok": {GITHUB: 1}}]) == "github_token"


def test_shared_and_cyclic_containers_end() -> None:
    shared = {"a": "b"}
    assert scan([shared, shared, (shared,)]) is None
    cyclic: list[Any] = ["x"]
    cyclic.append(cyclic)
    assert scan(cyclic) is None
    cyclic.append(JWT)
    assert scan(cyclic) == "jwt"


@pytest.mark.parametrize("value", [b"bytes", {1.5j}, object(), [1, {"k": b"x"}], {("t",): 1}])
def test_values_the_scanner_cannot_judge_raise(value: Any) -> None:
    with pytest.raises(SecretScanError):
        scan(value)
    with pytest.raises(SecretRefused) as info:
        scan_or_refuse(value)
    assert info.value.rule == "scanner_error"


@pytest.mark.parametrize(("rule", "value"), POSITIVE, ids=[r for r, _ in POSITIVE])
def test_a_refusal_names_the_rule_never_the_text(rule: str, value: Any) -> None:
    with pytest.raises(SecretRefused) as info:
        scan_or_refuse(value)
    assert info.value.rule == rule
    assert rule in str(info.value)
    shown = f"{info.value} {info.value!r} {info.value.args}"
    for secret in _secret_texts(value):
        assert secret not in shown


def test_scan_or_refuse_passes_clean_values() -> None:
    scan_or_refuse({"approved": True, "note": "fine"})


def _secret_texts(value: Any) -> list[str]:
    """The distinctive strings inside a test value (at least 6 characters)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and len(item) >= 6:
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# -- the journal filter ------------------------------------------------------------------


def test_filter_redacts_matching_values_and_credential_fields() -> None:
    event = {"type": "answer_applied", "step": "approval",
             "payload": {"approved": True, "note": f"use {GITHUB}", "password": "p",
                         "list": ["ok", JWT], "token_count": "3"}}
    original = copy.deepcopy(event)
    filtered = filter_event(event, bypass=False)
    assert event == original  # the caller's event is not touched
    assert filtered == {"type": "answer_applied", "step": "approval",
                        "payload": {"approved": True, "note": "[redacted:github_token]",
                                    "password": "[redacted:credential_field]",
                                    "list": ["ok", "[redacted:jwt]"], "token_count": "3"}}
    assert GITHUB not in json.dumps(filtered) and JWT not in json.dumps(filtered)
    assert scan(filtered) is None


def test_filter_redacts_secret_keys_without_losing_entries() -> None:
    filtered = filter_event({"p": {AWS: 1, AWS_SESSION: 2}}, bypass=False)
    assert filtered == {"p": {"[redacted:aws_access_key_id]": 1,
                              "[redacted:aws_access_key_id]#2": 2}}


def test_bypass_keeps_the_event_as_it_was_recorded() -> None:
    event: dict[str, Any] = {"type": "answer_applied", "payload": {"password": "p", "t": GITHUB}}
    filtered = filter_event(event, bypass=True)
    assert filtered == event
    filtered["payload"]["password"] = "changed"
    assert event["payload"]["password"] == "p"  # a copy, not the caller's event


def test_filter_fails_closed_on_values_it_cannot_judge() -> None:
    with pytest.raises(SecretScanError):
        filter_event({"type": "x", "payload": object()}, bypass=False)


# -- fuzzing -------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from([AWS, GITHUB, JWT, PEM, "password", "Bearer x"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.sampled_from(["password", "token", "api-key"]),
                      inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_filtered_events_scan_clean_and_scanning_json_never_raises(event: dict[str, Any]) -> None:
    scan(event)
    filtered = filter_event(event, bypass=False)
    assert scan(filtered) is None
    assert filter_event(event, bypass=True) == event
