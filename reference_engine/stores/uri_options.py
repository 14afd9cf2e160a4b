"""The ``?name=value`` options of a store URI, for the built-in stores that take any."""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import SplitResult, parse_qs

from reference_engine.errors import StoreUnavailable


def uri_options(parsed: SplitResult, *, store: str, known: Collection[str],
                advice: str) -> dict[str, str]:
    """The last value of each option; an option not in ``known`` is refused with ``advice``
    (what the options are) before anything is opened."""
    raw = parse_qs(parsed.query, keep_blank_values=True)
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise StoreUnavailable(
            f"{store} URI has unknown option(s) {', '.join(unknown)}; {advice}", op="open")
    return {name: values[-1] for name, values in raw.items()}


_FLAGS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


def flag_option(text: str, name: str, *, store: str) -> bool:
    """An on/off option's value; anything but 0/1, true/false or yes/no is refused."""
    value = text.lower()
    if value not in _FLAGS:
        raise StoreUnavailable(
            f"{store} URI option {name}= must be 0 or 1 (or true/false), not {value!r}",
            op="open",
        )
    return _FLAGS[value]
