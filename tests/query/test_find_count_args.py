"""Pure argument checks of find / count / distinct (``tidemark.commands.crud``): mongod's
``hasInvalidNaturalParam`` and count's ``countParseSkip`` / ``countParseLimit``."""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64

from tidemark.commands.crud import _check_natural, _count_integer, _element_repr
from tidemark.protocol.errors import MongoError


@pytest.mark.parametrize("spec", [None, "a_1", {}, {"a": 1}, {"$natural": 1}, {"$natural": -1}, {"$natural": 1.0},
                                  {"$natural": Int64(-1)}, {"$natural": Decimal128("1")},
                                  {"$natural": Decimal128("-1.0")}])
def test_natural_accepts_exactly_one_or_minus_one(spec):
    _check_natural(spec, "sort")


@pytest.mark.parametrize("spec", [{"$natural": 0}, {"$natural": 2}, {"$natural": 1.5}, {"$natural": "1"},
                                  {"$natural": True}, {"$natural": None}, {"$natural": float("nan")},
                                  {"$natural": Decimal128("1.1")}, {"$natural": {"forward": 1}},
                                  {"$natural": 1, "a": 1}, {"a": 1, "$natural": -1}])
@pytest.mark.parametrize("field", ["sort", "hint"])
def test_natural_refuses_anything_else(spec, field):
    with pytest.raises(MongoError) as info:
        _check_natural(spec, field)
    assert info.value.code == 2
    assert info.value.message == f"$natural {field} cannot be set to a value other than -1 or 1."


@pytest.mark.parametrize(("value", "expected"), [(None, 0), (3, 3), (Int64(-4), -4), (2.0, 2), (-0.0, 0),
                                                 (Decimal128("7"), 7), (Decimal128("-7.00"), -7),
                                                 (2.0**62, 2**62)])
def test_count_integer_reads_integral_numbers(value, expected):
    assert _count_integer({"skip": value}, "skip") == expected


def test_count_integer_absent_is_zero():
    assert _count_integer({}, "limit") == 0


@pytest.mark.parametrize(("value", "code", "message"), [
    ("1", 2, "limit value is not a valid number"),
    (True, 2, "limit value is not a valid number"),
    ([1], 2, "limit value is not a valid number"),
    (1.25, 9, "Expected an integer: limit: 1.25"),
    (float("nan"), 9, "Expected an integer, but found NaN in: limit: nan.0"),
    (float("inf"), 9, "Cannot represent as a 64-bit integer: limit: inf.0"),
    (2.0**63, 9, "Cannot represent as a 64-bit integer: limit: 9.223372036854776e+18"),
    (Decimal128("0.5"), 9, "Cannot represent as a 64-bit integer: limit: 0.5"),
    (Decimal128("Infinity"), 9, "Cannot represent as a 64-bit integer: limit: Infinity"),
    (Decimal128("1E+30"), 9, "Cannot represent as a 64-bit integer: limit: 1E+30"),
])
def test_count_integer_refusals(value, code, message):
    with pytest.raises(MongoError) as info:
        _count_integer({"limit": value}, "limit")
    assert (info.value.code, info.value.message) == (code, message)


@pytest.mark.parametrize(("value", "text"), [(1.0, "1.0"), (-2.0, "-2.0"), (1.5, "1.5"), (1e30, "1e+30.0"),
                                             (1e-7, "1e-07.0"), (0.1, "0.1"), (float("inf"), "inf.0"),
                                             (123456789012345678.0, "1.234567890123457e+17"), (5, "5"),
                                             (Int64(6), "6"), (Decimal128("1.50"), "1.50")])
def test_element_repr_is_append_double_nice(value, text):
    assert _element_repr(value) == text
