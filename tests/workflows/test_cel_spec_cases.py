"""Cases from the CEL specification's conformance data, run through the workflow language.

Each case is labelled with the google/cel-spec conformance file and section it follows
(``tests/simple/testdata/<file>.textproto``) and a short name, restricted to what the
workflow language documents: strings,
numbers, lists, maps, ``in``, ``has()``, comparisons, logical operators and the ternary.
They run through :mod:`reference_engine.workflows.cel`, the wrapper the engine uses, so a
library swap or a wrapper change that breaks CEL's meaning fails here.
``benchmarks/cel_libraries.py`` scores every candidate library on the same cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


class _Error:
    def __repr__(self) -> str:
        return "ERROR"


ERROR: Any = _Error()  # the case expects an evaluation error


@dataclass(frozen=True)
class Case:
    origin: str  # cel-spec file/section it follows, and a short name
    expr: str
    expected: Any


CASES = [
    # strings
    Case("string/size/empty", "size('')", 0),
    Case("string/size/unicode", "size('πέντε')", 5),
    Case("string/starts_with/basic_true", "'foobar'.startsWith('foo')", True),
    Case("string/starts_with/empty_target", "''.startsWith('foo')", False),
    Case("string/ends_with/basic_true", "'foobar'.endsWith('bar')", True),
    Case("string/ends_with/unicode", "'forté'.endsWith('té')", True),
    Case("string/matches/re_alt", "'grey'.matches('gr(a|e)y')", True),
    Case("string/matches/empty_target", "''.matches('foo|bar')", False),
    Case("string/concatentation/concat_true", "'he' + 'llo'", "hello"),
    Case("string/concatentation/concat_with_spaces", "'hello' + ' ' == 'hello'", False),
    Case("string/concatentation/ascii_unicode", "'r' + 'ô' + 'le'", "rôle"),
    Case("string/contains/contains_true", "'hello'.contains('he')", True),
    Case("string/contains/contains_false", "'hello'.contains('ol')", False),
    Case("string/contains/contains_unicode", "'Straße'.contains('aß')", True),
    # numbers
    Case("integer_math/int64_math/add_positive_positive", "40 + 2", 42),
    Case("integer_math/int64_math/sub_positive_negative", "42 - -5", 47),
    Case("integer_math/int64_math/multiply_positive_negative", "-2 * 20", -40),
    Case("integer_math/int64_math/div_positive_positive", "10 / 3", 3),
    Case("integer_math/int64_math/mod_positive_negative", "47 % -5", 2),
    Case("integer_math/int64_math/div_by_zero", "1 / 0", ERROR),
    Case("integer_math/int64_math/mod_by_zero", "1 % 0", ERROR),
    Case("integer_math/int64_math/negative", "-(5)", -5),
    Case("fp_math/fp_math/add_positive_positive", "4.25 + 15.25", 19.5),
    Case("fp_math/fp_math/div_positive_positive", "24.5 / 2.0", 12.25),
    # comparisons
    Case("comparisons/eq_literal/eq_int", "1 == 1", True),
    Case("comparisons/eq_literal/not_eq_int", "-1 == 1", False),
    Case("comparisons/eq_literal/eq_string", "'' == \"\"", True),
    Case("comparisons/eq_literal/not_eq_string_case", "'abc' == 'ABC'", False),
    Case("comparisons/eq_literal/eq_null", "null == null", True),
    Case("comparisons/eq_literal/eq_list_numbers", "[1, 2, 3] == [1, 2, 3]", True),
    Case("comparisons/eq_literal/not_eq_list_order", "[1, 2, 3] == [1, 3, 2]", False),
    Case("comparisons/eq_literal/eq_map_numbers", "{1: 'a', 2: 'b'} == {2: 'b', 1: 'a'}",
         True),
    Case("comparisons/ne_literal/ne_int", "24 != 42", True),
    Case("comparisons/ne_literal/not_ne_string", "'abc' != 'abc'", False),
    Case("comparisons/lt_literal/lt_int", "-1 < 0", True),
    Case("comparisons/lt_literal/lt_string", "'a' < 'b'", True),
    Case("comparisons/lt_literal/not_lt_string_empty", "'a' < ''", False),
    Case("comparisons/gte_literal/gte_int", "0 >= 0", True),
    Case("comparisons/gte_literal/not_gte_double", "1.5 >= 2.0", False),
    Case("comparisons/in_list_literal/elem_in_list", "'elem' in ['elem', 'elemA', 'elemB']",
         True),
    Case("comparisons/in_list_literal/elem_not_in_list", "'not' in ['elem1', 'elem2']", False),
    Case("comparisons/in_list_literal/elem_in_empty_list", "'empty' in []", False),
    Case("comparisons/in_map_literal/key_in_map", "'key' in {'key': '1', 'other': '2'}", True),
    Case("comparisons/in_map_literal/key_not_in_map", "'key' in {'lock': '1'}", False),
    # lists
    Case("lists/concatentation/list_append", "[0, 1, 2] + [3, 4, 5] == [0, 1, 2, 3, 4, 5]",
         True),
    Case("lists/index/zero_based", "[7, 8, 9][0]", 7),
    Case("lists/index/out_of_bounds", "[1, 2][2]", ERROR),
    Case("lists/size/list_size", "size([1, 2, 3])", 3),
    Case("lists/size/list_empty", "size([])", 0),
    # maps
    Case("fields/map_fields/map_key_int", "{1: 'one'}[1]", "one"),
    Case("fields/map_fields/map_key_string", "{'a': 1}.a", 1),
    Case("fields/map_fields/map_no_such_key", "{'a': 1}.b", ERROR),
    Case("fields/map_has/has", "has({'a': 1, 'b': 2}.a)", True),
    Case("fields/map_has/has_not", "has({'a': 1, 'b': 2}.c)", False),
    Case("fields/map_has/has_empty", "has({}.a)", False),
    Case("lists/size/map_size", "size({'a': 1, 'b': 2})", 2),
    # logic
    Case("logic/conditional/true_case", "true ? 1 : 2", 1),
    Case("logic/conditional/false_case", "false ? 'foo' : 'bar'", "bar"),
    Case("logic/conditional/error_case", "2 / 0 > 4 ? 'baz' : 'quux'", ERROR),
    Case("logic/AND/all_true", "true && true", True),
    Case("logic/AND/false_right", "true && false", False),
    Case("logic/AND/short_circuit_error_left", "false && (2 / 0 > 3 ? false : true)", False),
    Case("logic/AND/short_circuit_error_right", "(2 / 0 > 3 ? false : true) && false", False),
    Case("logic/AND/error_right", "true && 1/0 != 0", ERROR),
    Case("logic/OR/false_left", "false || true", True),
    Case("logic/OR/short_circuit_error_right", "(2 / 0 > 3 ? false : true) || true", True),
    Case("logic/OR/error_left", "1/0 != 0 || false", ERROR),
    Case("logic/NOT/not_true", "!true", False),
    Case("logic/NOT/not_false", "!false", True),
    # macros over lists
    Case("macros/exists/list_elem_some_true", "[1, 2, 3].exists(e, e == 2)", True),
    Case("macros/all/list_elem_all_true", "[1, 2, 3].all(e, e > 0)", True),
    Case("macros/map/list_elem", "[1, 2, 3].map(n, n * 2)", [2, 4, 6]),
    Case("macros/filter/list_elem", "[1, 2, 3].filter(n, n > 1)", [2, 3]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.origin for c in CASES])
def test_cel_spec_case(case: Case) -> None:
    from reference_engine.workflows.cel import CelRuntimeError, compile_cel

    program = compile_cel(case.expr)
    try:
        got = program.evaluate({})
    except CelRuntimeError:
        got = ERROR
    assert got == case.expected and type(got) is type(case.expected), (case.expr, got)
