"""No failure message prints more than 256 bytes of a record's value: values show by length,
a hash and their first bytes, in messages and in Hypothesis's failing examples alike."""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dw_testing.models.shown_bytes import SHOWN_BYTES, ShownBytes, describe
from dw_testing.models.verdicts import bytes_difference, value_problem

BOUND = 256
_BYTES_LITERAL = re.compile(r"""b'(?:[^'\\]|\\.)*'|b"(?:[^"\\]|\\.)*\"""")


def _longest_printed_value(text: str) -> int:
    """The most bytes any one bytes literal in ``text`` holds."""
    sizes = [len(ast.literal_eval(found)) for found in _BYTES_LITERAL.findall(text)]
    return max(sizes, default=0)


@given(data=st.binary(min_size=SHOWN_BYTES + 1, max_size=4096))
def test_a_long_value_is_described_by_length_hash_and_first_bytes(data: bytes) -> None:
    shown = describe(data)
    assert f"<{len(data)} bytes #" in shown
    assert _longest_printed_value(shown) == SHOWN_BYTES
    assert repr(ShownBytes(data)) == shown and ShownBytes(data) == data


@given(data=st.binary(min_size=BOUND + 1, max_size=4096), at=st.integers(0, 4095),
       flip=st.integers(1, 255))
def test_a_wrong_value_is_told_without_quoting_it(data: bytes, at: int, flip: int) -> None:
    at %= len(data)
    wrong = data[:at] + bytes([data[at] ^ flip]) + data[at + 1:]
    told = [bytes_difference(wrong, data),
            value_problem(wrong, data, "get('k') on h1", others={}, deleted=False,
                          other_handle=False, reopened=False)]
    for message in told:
        assert message is not None and f"first differing at byte {at}" in message
        assert not _BYTES_LITERAL.search(message), message  # lengths and hashes only


def test_a_value_decoded_as_text_is_named_by_its_replacement_character() -> None:
    data = b"ok\xff\xfe tail"
    message = bytes_difference(data.decode("utf-8", "replace").encode(), data)
    assert message is not None and "EF BF BD is U+FFFD" in message


@given(data=st.binary(min_size=1, max_size=64))
def test_the_hint_names_a_text_decode_whenever_one_changed_the_bytes(data: bytes) -> None:
    decoded = data.decode("utf-8", "replace").encode()
    message = bytes_difference(decoded, data)
    assert (message is None) is (decoded == data)
    if message is not None:
        assert "U+FFFD" in message


FAILING_EXAMPLE = """
from hypothesis import assume, given, settings
from dw_testing.models.strategies import values

@settings(max_examples=400, database=None, derandomize=True)
@given(value=values(max_size=4096))
def test_large_values_fail(value):
    assume(len(value) > 1000)
    assert not value
"""


def test_a_failing_hypothesis_example_prints_no_value_whole(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=FAILING_EXAMPLE)
    result = pytester.runpytest_inprocess("-q", "-p", "no:randomly", "test_example.py")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "value=<" in output and " bytes #" in output, output[-3000:]
    assert _longest_printed_value(output) <= BOUND


CORRUPTING_STORE = """
from reference_engine.stores.memory import MemoryStore


class FlipsLargeValues(MemoryStore):
    '''Reads a value over 300 bytes back with its last byte changed.'''

    def get(self, key):
        data = super().get(key)
        if data is not None and len(data) > 300:
            return data[:-1] + bytes([data[-1] ^ 1])
        return data


def factory():
    return FlipsLargeValues("value-bounds")
"""


def test_the_suites_failures_on_large_values_quote_none_of_them(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(flipping=CORRUPTING_STORE)
    result = pytester.runpytest_subprocess(
        "--dw-suite-only", "--dw-store=flipping:factory", "--dw-profile=quick", "-vv",
        "-p", "no:randomly", "-k",
        "test_values_up_to_one_mebibyte or test_every_answer_of_the_store_matches_the_model")
    output = result.stdout.str() + result.stderr.str()
    assert "a 1 MiB put did not read back whole" in output, output[-3000:]
    assert "first differing at byte 1048575" in output
    assert _longest_printed_value(output) <= BOUND
