"""What a step produced is redacted span by span: the rest of the text stays readable."""

from __future__ import annotations

import pytest

from reference_engine.secrets import SecretScanError, redact_text, scrub

PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq0\nabcdef\n"
       "-----END RSA PRIVATE KEY-----")


def test_a_pem_key_is_redacted_from_begin_to_end_and_the_rest_is_kept() -> None:
    text = f"before\n{PEM}\nafter"
    assert redact_text(text) == "before\n[redacted:pem_private_key]\nafter"


def test_a_pem_key_without_its_end_line_is_redacted_to_the_end() -> None:
    assert redact_text("x " + PEM.split("-----END")[0]) == "x [redacted:pem_private_key]"


def test_every_matching_span_is_replaced_and_nothing_else() -> None:
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    assert redact_text(f"id={key} and {key}.") == (
        "id=[redacted:aws_access_key_id] and [redacted:aws_access_key_id].")
    assert redact_text("AKIA" + "ABCDEFGHIJKLMNO") == "AKIA" + "ABCDEFGHIJKLMNO"  # 15: none


def test_scrub_redacts_credential_fields_and_keys_and_keeps_the_shape() -> None:
    token = "ghp_" + "a1B2" * 9
    value = {"password": "hunter2", "list": [f"x {token} y", 3, None], token: True,
             "count": 2}
    assert scrub(value) == {"password": "[redacted:credential_field]",
                            "list": ["x [redacted:github_token] y", 3, None],
                            "[redacted:github_token]": True, "count": 2}


def test_scrub_fails_closed_on_a_value_it_cannot_judge() -> None:
    with pytest.raises(SecretScanError):
        scrub({"x": object()})
