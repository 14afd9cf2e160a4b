"""The secret gate (docs/explanation/answers.md): find credentials in a value, by rule name only.

:func:`scan` walks a value (mappings, lists, strings; keys as well as values) and
returns the name of the first rule that matches, or ``None``. It never returns or
raises the matched text.

Rules, in the order they are tried on each string:
``pem_private_key``, ``aws_access_key_id``, ``github_token``, ``slack_token``,
``openai_style_key``, ``google_api_key``, ``jwt``, ``bearer_token``. Then, for a
mapping entry, ``credential_field`` (and ``bearer_token`` for an ``Authorization``
field holding ``Bearer <token>``).

**Credential-named fields.** A key is split into words (on ``_ - .``, spaces and
camelCase), lower-cased; trailing neutral words (value, str, text, raw, plain, new,
old, current, confirm, confirmation) are dropped; the rest, joined, must END with
password, passwd, apikey, api_key, secret, secretkey, token, privatekey,
credential or credentials. So ``db_password``, ``API-Key``, ``apiKey``,
``x-auth-token``, ``client_secret`` and ``password_confirm`` match;
``token_count``, ``max_tokens``, ``tokenizer``, ``secretary`` and ``passwords`` do
not. The field matches only when its value is a string that is non-empty after
stripping whitespace and is not a ``[redacted:<rule>]`` marker (so a filtered
event scans clean).

**Failing closed.** A value the scanner cannot judge (any type other than JSON's:
None, bool, int, float, str, mapping, list/tuple) raises :class:`SecretScanError`.
:func:`scan_or_refuse` turns both outcomes into :class:`SecretRefused`, so a caller
that wants "refuse on a match or on any scanner failure" needs one ``except``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pem_private_key", re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")),
    ("aws_access_key_id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])"
                                     r"[A-Z0-9]{16}(?![A-Z0-9])")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}"
                                r"|github_pat_[A-Za-z0-9_]{22,255})")),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9])xox[a-z]-[0-9A-Za-z-]{10,}")),
    ("openai_style_key", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?"
                                    r"[A-Za-z0-9_-]{20,}")),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"
                       r"\.[A-Za-z0-9_-]*")),
    ("bearer_token", re.compile(r"(?i:authorization)[\"']?\s{0,8}[:=]\s{0,8}[\"']?\s{0,8}"
                                r"(?i:bearer)\s{1,8}[A-Za-z0-9._~+/-]{8,}"
                                # alone, "bearer" needs a long token holding a digit, so
                                # that prose like "bearer instrument-calibration" passes
                                r"|(?<![A-Za-z0-9])(?i:bearer)\s{1,8}"
                                r"(?=[A-Za-z._~+/-]{0,200}[0-9])[A-Za-z0-9._~+/-]{20,}")),
)
RULE_NAMES = (*(name for name, _ in RULES), "credential_field")

CREDENTIAL_ENDINGS = ("password", "passwd", "apikey", "secret", "secretkey", "secretaccesskey",
                      "token", "privatekey", "credential", "credentials")
NEUTRAL_SUFFIXES = frozenset({"value", "val", "str", "string", "text", "raw", "plain",
                              "plaintext", "new", "old", "current", "confirm", "confirmation"})
_BEARER_VALUE = re.compile(r"\s{0,8}(?i:bearer)\s{1,8}[A-Za-z0-9._~+/-]{8,}")
_REDACTED = re.compile(r"\[redacted:[a-z_]{1,40}\]")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


class SecretScanError(Exception):
    """The scanner could not judge a value. Callers must refuse (fail closed)."""


class SecretRefused(Exception):
    """The gate refused a value. ``rule`` is the rule name, or ``scanner_error``."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        if rule == "scanner_error":
            message = "secret detection could not scan this value, so it was refused"
        else:
            message = f"the value matched the secret rule '{rule}', so it was refused"
        super().__init__(message)


def key_words(name: str) -> list[str]:
    """``"dbPassword-Value"`` -> ``["db", "password", "value"]``."""
    return [w.lower() for part in _WORD_SPLIT.split(name) for w in _CAMEL.findall(part)]


def is_credential_name(name: str) -> bool:
    """Whether a field called ``name`` holds a credential (see the module docstring)."""
    words = key_words(name)
    while len(words) > 1 and words[-1] in NEUTRAL_SUFFIXES:
        words.pop()
    return "".join(words).endswith(CREDENTIAL_ENDINGS)


def scan_text(text: str) -> str | None:
    """The first rule whose pattern occurs in ``text``, or None."""
    for name, pattern in RULES:
        if pattern.search(text):
            return name
    return None


def _field_rule(key: str, value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip() or _REDACTED.fullmatch(value):
        return None  # a redaction marker is what the filter leaves: scanning it again is quiet
    if is_credential_name(key):
        return "credential_field"
    if key.strip().lower() in ("authorization", "proxy-authorization") \
            and _BEARER_VALUE.match(value):
        return "bearer_token"
    return None


def _check_scalar(value: Any) -> None:
    if value is not None and not isinstance(value, (bool, int, float)):
        raise SecretScanError(f"cannot scan a value of type {type(value).__name__}")


def scan(value: Any) -> str | None:
    """The first matching rule name in ``value`` (keys included), or None.

    Raises :class:`SecretScanError` for a value it cannot judge.
    """
    stack: list[Any] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            rule = scan_text(item)
            if rule:
                return rule
        elif isinstance(item, Mapping):
            if id(item) in seen:
                continue
            seen.add(id(item))
            entries = list(item.items())
            for key, sub in entries:
                if not isinstance(key, str):
                    _check_scalar(key)
                    continue
                rule = _field_rule(key, sub)
                if rule:
                    return rule
            for key, sub in reversed(entries):
                stack.append(sub)
                stack.append(key)
        elif isinstance(item, (list, tuple)):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(reversed(item))
        else:
            _check_scalar(item)
    return None


def scan_or_refuse(value: Any) -> None:
    """Return when ``value`` holds no secret; else raise :class:`SecretRefused`.

    A scanner failure of any kind also raises ``SecretRefused("scanner_error")``:
    the gate fails closed.
    """
    try:
        rule = scan(value)
    except Exception:  # any scanner failure refuses: fail closed
        raise SecretRefused("scanner_error") from None
    if rule is not None:
        raise SecretRefused(rule)


def redacted(rule: str) -> str:
    return f"[redacted:{rule}]"


def filter_event(event: Mapping[str, Any], *, bypass: bool) -> dict[str, Any]:
    """A copy of a journal event with every value matching a rule replaced by ``[redacted:<rule>]``.

    A string that matches is replaced whole; a credential-named field's non-empty
    string is replaced; a key that matches is replaced by its redaction (numbered if
    two collide). With ``bypass`` (the receipt recorded ``--no-secret-detection``) the
    event is copied unchanged. Raises :class:`SecretScanError` like :func:`scan`.
    """
    copy: Callable[[Any], Any] = _deep_copy if bypass else _redact
    result = copy(event)
    if not isinstance(result, dict):
        raise SecretScanError("a journal event must be a mapping")
    return result


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _deep_copy(sub) for key, sub in value.items()}
    if isinstance(value, (list, tuple)):
        return [_deep_copy(sub) for sub in value]
    return value


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        rule = scan_text(value)
        return redacted(rule) if rule else value
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, sub in value.items():
            new_key = key
            if isinstance(key, str):
                key_rule = scan_text(key)
                if key_rule:
                    new_key = redacted(key_rule)
                    n = 2
                    while new_key in out or new_key in value:
                        new_key = f"{redacted(key_rule)}#{n}"
                        n += 1
                field = _field_rule(key, sub)
                out[new_key] = redacted(field) if field else _redact(sub)
            else:
                _check_scalar(key)
                out[new_key] = _redact(sub)
        return out
    if isinstance(value, (list, tuple)):
        return [_redact(sub) for sub in value]
    _check_scalar(value)
    return value


# A PEM key is redacted from its BEGIN line through its END line (or the end of the text),
# not just the header the scanning rule looks for.
_PEM_BLOCK = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?"
                        r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)


def redact_text(text: str, allowed: frozenset[str] = frozenset()) -> str:
    """``text`` with every span a rule matches replaced by ``[redacted:<rule>]``.

    For what a step produced (``log:`` text, ``shell:`` output, a ``python:`` value, a
    ``fail:`` message): the rest of the text stays readable, unlike :func:`filter_event`,
    which replaces a matching string whole. A span found inside one of ``allowed`` (the
    strings of answers accepted with the ``--no-secret-detection`` bypass,
    :func:`let_through`) is kept: the bypass carries through to what a step copies of it.
    """
    def keep(name: str) -> Callable[[re.Match[str]], str]:
        return lambda found: (found.group(0) if _let_through(found.group(0), allowed)
                              else redacted(name))

    text = _PEM_BLOCK.sub(keep("pem_private_key"), text)
    for name, pattern in RULES:
        text = pattern.sub(keep(name), text)
    return text


def _let_through(span: str, allowed: frozenset[str]) -> bool:
    return bool(allowed) and any(span in text for text in allowed)


def let_through(value: Any) -> frozenset[str]:
    """Every string in ``value`` (keys too): what an answer accepted with the bypass holds."""
    found: set[str] = set()

    def walk(item: Any) -> None:
        if isinstance(item, str):
            found.add(item)
        elif isinstance(item, Mapping):
            for key, sub in item.items():
                walk(key)
                walk(sub)
        elif isinstance(item, (list, tuple)):
            for sub in item:
                walk(sub)

    walk(value)
    return frozenset(found)


def scrub(value: Any, allowed: frozenset[str] = frozenset()) -> Any:
    """A copy of a JSON value with :func:`redact_text` applied to every string (keys too)
    and every credential-named field's value redacted, except what ``allowed`` lets
    through; raises :class:`SecretScanError` on a value the scanner cannot judge, like
    :func:`scan`."""
    if isinstance(value, str):
        return redact_text(value, allowed)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, sub in value.items():
            if not isinstance(key, str):
                _check_scalar(key)
                out[key] = scrub(sub, allowed)
                continue
            new_key, n = redact_text(key, allowed), 2
            while new_key != key and (new_key in out or new_key in value):
                new_key = f"{redact_text(key, allowed)}#{n}"
                n += 1
            field = _field_rule(key, sub)
            if field and not _let_through(str(sub), allowed):
                out[new_key] = redacted(field)
            else:
                out[new_key] = scrub(sub, allowed)
        return out
    if isinstance(value, (list, tuple)):
        return [scrub(sub, allowed) for sub in value]
    _check_scalar(value)
    return value
