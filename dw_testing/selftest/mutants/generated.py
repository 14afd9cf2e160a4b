"""Mutant families generated from the contract's grammar, not picked by hand.

- keys: for each character class of :data:`dw_testing.kit.key_grammar.CHARACTER_CLASSES`
  and a position in a segment, a store that rewrites such a character to ``_`` (as a
  filename or URL layer that "sanitises" names does);
- list: for each class, a listing that is wrong for keys whose last segment holds such a
  character: the key missing, named twice, or moved out of order;
- values: for each byte class, a store that rewrites it (line endings in each form, NUL,
  invalid UTF-8).

Each family member differs from :class:`~dw_testing.selftest.mutants.base.CorrectStore` by
its one treatment. Only members that pass the suite without the differential model are
registered (docs/unkillable.md, "Generated families"): they prove what the model adds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from dw_testing.kit.key_grammar import CHARACTER_CLASSES, in_class
from dw_testing.selftest.mutants.base import CorrectStore
from reference_engine.stores.keys import is_under, validate_key, validate_prefix

POSITIONS = ("first", "last", "any")
LIST_BREAKS = ("missing", "duplicate", "misplaced")


def rewrite_segment(segment: str, name: str, position: str) -> str:
    """``segment`` with its characters of class ``name`` at ``position`` replaced by ``_``."""
    chars = list(segment)
    spots = {"first": [0], "last": [len(chars) - 1], "any": range(len(chars))}[position]
    for index in spots:
        if in_class(chars[index], name):
            chars[index] = "_"
    return "".join(chars)


def key_treatment(name: str, position: str) -> type[CorrectStore]:
    """A store that rewrites class ``name`` at ``position`` of every segment to ``_``."""

    def mapped(text: str) -> str:
        return "/".join(rewrite_segment(s, name, position) if s else s for s in text.split("/"))

    class RewritesKeyCharacters(CorrectStore):
        def checked_key(self, key: str, op: str) -> str:
            return mapped(validate_key(key, op=op))

        def checked_prefix(self, prefix: str) -> str:
            return mapped(validate_prefix(prefix))

    RewritesKeyCharacters.__doc__ = (
        f"Keys are stored with each {name} character at the {position} position of a "
        "segment rewritten to '_', as a name-sanitising layer does: two keys merge, and "
        "list shows the rewritten name.")
    return RewritesKeyCharacters


def list_break(name: str, kind: str) -> type[CorrectStore]:
    """A listing wrong in one ``kind`` for keys whose last segment holds a ``name`` char."""

    def hit(key: str) -> bool:
        return any(in_class(ch, name) for ch in key.rpartition("/")[2])

    class BreaksListing(CorrectStore):
        def list(self, prefix: str) -> list[str]:
            normalised = self.checked_prefix(prefix)
            with self.backing.lock:
                found = sorted(k for k in self.backing.records if is_under(k, normalised))
            if kind == "missing":
                return [k for k in found if not hit(k)]
            if kind == "duplicate":
                return [k for key in found for k in ([key, key] if hit(key) else [key])]
            return [k for k in found if not hit(k)] + [k for k in found if hit(k)]

    BreaksListing.__doc__ = {
        "missing": f"list leaves out every key whose last segment holds a {name} character, "
                   "as a walker that filters names it takes for hidden or temporary does.",
        "duplicate": f"list names twice every key whose last segment holds a {name} "
                     "character, as a listing merged from two pages that overlap does.",
        "misplaced": f"list puts every key whose last segment holds a {name} character "
                     "after the others, as a backend listing by a collation does.",
    }[kind]
    return BreaksListing


def _crlf_to_lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


def _lone_cr_to_lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\x00CRLF\x00").replace(b"\r", b"\n").replace(
        b"\x00CRLF\x00", b"\r\n")


def _lf_cr_to_lf(data: bytes) -> bytes:
    return data.replace(b"\n\r", b"\n")


def _invalid_utf8_replaced(data: bytes) -> bytes:
    return data.decode("utf-8", errors="replace").encode("utf-8")


VALUE_REWRITES: Mapping[str, tuple[Callable[[bytes], bytes], str]] = MappingProxyType({
    "crlf": (_crlf_to_lf, "CR LF line endings are stored as LF, as a text-mode layer does"),
    "lone_cr": (_lone_cr_to_lf, "a CR not followed by LF is stored as LF, as a "
                "line-ending normaliser does"),
    "lf_cr": (_lf_cr_to_lf, "LF CR line endings (as RISC OS writes them) are stored as LF, "
              "as a line-ending normaliser that knows them does"),
    "invalid_utf8": (_invalid_utf8_replaced, "bytes that are not UTF-8 are stored as U+FFFD, "
                     "as a layer that decodes values as text does"),
    "trailing_nul": (lambda data: data.rstrip(b"\x00"), "trailing NUL bytes are dropped, as a "
                     "C-string layer does"),
})


def value_rewrite(byte_class: str) -> type[CorrectStore]:
    rewrite, doc = VALUE_REWRITES[byte_class]

    class RewritesValues(CorrectStore):
        def put(self, key: str, data: bytes) -> None:
            super().put(key, rewrite(bytes(data)))

        def put_if_absent(self, key: str, data: bytes) -> bool:
            return super().put_if_absent(key, rewrite(bytes(data)))

    RewritesValues.__doc__ = f"Values are rewritten: {doc}."
    return RewritesValues


Family = tuple[str, str, str, tuple[str, ...], type[CorrectStore]]


def _members() -> list[Family]:
    """``(name, family, section, clauses, class)`` for every member of every family."""
    found: list[Family] = []
    for name in CHARACTER_CLASSES:
        for position in POSITIONS:
            found.append((f"gen_key_{name}_{position}", "gen_key", "Keys (generated)",
                          ("C-KEY-2",),
                          key_treatment(name, position)))
        for kind in LIST_BREAKS:
            clause = "C-LIST-5" if kind == "misplaced" else "C-LIST-3"
            found.append((f"gen_list_{kind}_{name}", "gen_list", "List (generated)", (clause,),
                          list_break(name, kind)))
    for byte_class in VALUE_REWRITES:
        found.append((f"gen_value_{byte_class}", "gen_value", "Values (generated)", ("C-VAL-1",),
                      value_rewrite(byte_class)))
    return found


#: Every generated member, by name: ``(family, section, clauses, class)``.
ALL_MEMBERS: Mapping[str, tuple[str, str, tuple[str, ...], type[CorrectStore]]] = (
    MappingProxyType({name: rest for name, *rest in _members()}))  # type: ignore[misc]

#: Members the suite already caught without the differential model (measured under the ci
#: profile, and proved again by tests/selftest/test_generated_mutants.py, slow): they prove
#: nothing new, so they are not registered. Mostly the sort, case and normalisation tests;
#: the space members and ``gen_value_crlf`` by the corner tests (key corners, value classes).
CAUGHT_WITHOUT_THE_MODEL: frozenset[str] = frozenset({
    "gen_key_ascii_lower_any",
    "gen_key_ascii_lower_first",
    "gen_key_ascii_lower_last",
    "gen_key_ascii_upper_any",
    "gen_key_ascii_upper_first",
    "gen_key_ascii_upper_last",
    "gen_key_combining_any",
    "gen_key_combining_last",
    "gen_key_digit_any",
    "gen_key_digit_first",
    "gen_key_digit_last",
    "gen_key_fullwidth_any",
    "gen_key_fullwidth_first",
    "gen_key_fullwidth_last",
    "gen_key_latin1_any",
    "gen_key_latin1_first",
    "gen_key_latin1_last",
    "gen_key_non_bmp_any",
    "gen_key_non_bmp_first",
    "gen_key_non_bmp_last",
    "gen_key_punctuation_any",
    "gen_key_punctuation_first",
    "gen_key_punctuation_last",
    "gen_key_space_any",
    "gen_key_space_first",
    "gen_key_space_last",
    "gen_list_duplicate_ascii_lower",
    "gen_list_duplicate_ascii_upper",
    "gen_list_duplicate_combining",
    "gen_list_duplicate_digit",
    "gen_list_duplicate_fullwidth",
    "gen_list_duplicate_latin1",
    "gen_list_duplicate_non_bmp",
    "gen_list_duplicate_punctuation",
    "gen_list_duplicate_space",
    "gen_list_misplaced_ascii_lower",
    "gen_list_misplaced_ascii_upper",
    "gen_list_misplaced_combining",
    "gen_list_misplaced_digit",
    "gen_list_misplaced_fullwidth",
    "gen_list_misplaced_latin1",
    "gen_list_misplaced_punctuation",
    "gen_list_missing_ascii_lower",
    "gen_list_missing_ascii_upper",
    "gen_list_missing_combining",
    "gen_list_missing_digit",
    "gen_list_missing_fullwidth",
    "gen_list_missing_latin1",
    "gen_list_missing_non_bmp",
    "gen_list_missing_punctuation",
    "gen_list_missing_space",
    "gen_value_crlf",
    "gen_value_invalid_utf8",
    "gen_value_lone_cr",
    "gen_value_trailing_nul",
})

#: The members the kill matrix runs.
REGISTERED: Mapping[str, tuple[str, str, tuple[str, ...], type[CorrectStore]]] = (
    MappingProxyType({name: member for name, member in ALL_MEMBERS.items()
                      if name not in CAUGHT_WITHOUT_THE_MODEL}))


def __getattr__(name: str) -> object:
    """``--dw-store=dw_testing.selftest.mutants.generated:<name>`` reaches any member."""
    from dw_testing.selftest.mutants.base import memory_provider

    if name in ALL_MEMBERS:
        return memory_provider(name, ALL_MEMBERS[name][3])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
