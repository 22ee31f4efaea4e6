"""``parse_collation`` checks a collation spec in mongod 7.0's order: the IDL pass over the fields in
document order first (an unknown field, a wrong type, an enum value or the strength range: the first
met fails), then the required locale, then the checks on the parsed spec (simple with other fields,
the ICU locale, the version). Also: the collator agrees with ICU's own for every option."""

from __future__ import annotations

import icu
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query.collation import parse_collation

UNKNOWN_FIELD = 40415
MISSING_FIELD = 40414
TYPE_MISMATCH = 14
BAD_VALUE = 2
FAILED_TO_PARSE = 9


def code_of(spec) -> int:
    with pytest.raises(MongoError) as info:
        parse_collation(spec)
    return info.value.code


@pytest.mark.parametrize("spec,code", [
    # an unknown field fails before the missing locale is noticed
    ({"blah": 1}, UNKNOWN_FIELD),
    ({"strength": 2, "blah": 1}, UNKNOWN_FIELD),
    ({}, MISSING_FIELD),
    ({"strength": 2}, MISSING_FIELD),
    # field order decides between an unknown field and a wrong type
    ({"locale": 1, "blah": 1}, TYPE_MISMATCH),
    ({"blah": 1, "locale": 1}, UNKNOWN_FIELD),
    ({"caseLevel": 1, "blah": 1}, TYPE_MISMATCH),
    ({"caseFirst": "sideways", "blah": 1}, BAD_VALUE),
    ({"strength": 9, "blah": 1}, 51024),
    ({"blah": 1, "strength": 9}, UNKNOWN_FIELD),
    # the IDL pass comes before the simple-locale check
    ({"locale": "simple", "blah": 1}, UNKNOWN_FIELD),
    ({"locale": "simple", "strength": 9}, 51024),
    ({"locale": "simple", "caseLevel": "yes"}, TYPE_MISMATCH),
    ({"locale": "simple", "strength": 2}, FAILED_TO_PARSE),
    ({"locale": "simple", "strength": 0}, FAILED_TO_PARSE),
    # and before the locale's own checks
    ({"locale": "xx", "blah": 1}, UNKNOWN_FIELD),
    ({"locale": "", "caseLevel": None}, TYPE_MISMATCH),
    ({"locale": "en", "backwards": None}, TYPE_MISMATCH),
    ({"locale": "xx"}, BAD_VALUE),
    ({"locale": "en", "version": "unknownVersion"}, 161),  # IncompatibleCollationVersion (error_codes.yml)
])
def test_collation_errors_follow_mongods_parse_order(spec, code):
    assert code_of(spec) == code


def test_simple_and_valid_specs_parse():
    assert parse_collation({"locale": "simple"}) is None
    c = parse_collation({"locale": "en_US", "strength": 2})
    assert c is not None and c.spec["strength"] == 2 and c.spec["locale"] == "en_US"


_A, _V = icu.UCollAttribute, icu.UCollAttributeValue


@settings(max_examples=150, deadline=None, derandomize=True)
@given(strength=st.integers(1, 5), case_level=st.booleans(), numeric=st.booleans(),
       shifted=st.booleans(), case_first=st.sampled_from(["upper", "lower", "off"]),
       a=st.text("aAbBéÉ1 29-_.", max_size=6), b=st.text("aAbBéÉ1 29-_.", max_size=6))
def test_collation_compares_like_icu(strength, case_level, numeric, shifted, case_first, a, b):
    """Strength, caseLevel, numericOrdering, alternate and caseFirst order two strings as ICU's own
    collator with the same attributes does (equal keys exactly when ICU calls them equal)."""
    spec = {"locale": "en", "strength": strength, "caseLevel": case_level, "numericOrdering": numeric,
            "alternate": "shifted" if shifted else "non-ignorable", "caseFirst": case_first}
    c = parse_collation(spec)
    ref = icu.Collator.createInstance(icu.Locale("en"))
    ref.setAttribute(_A.STRENGTH, [_V.PRIMARY, _V.SECONDARY, _V.TERTIARY, _V.QUATERNARY, _V.IDENTICAL][strength - 1])
    ref.setAttribute(_A.CASE_LEVEL, _V.ON if case_level else _V.OFF)
    ref.setAttribute(_A.NUMERIC_COLLATION, _V.ON if numeric else _V.OFF)
    ref.setAttribute(_A.ALTERNATE_HANDLING, _V.SHIFTED if shifted else _V.NON_IGNORABLE)
    ref.setAttribute(_A.CASE_FIRST, {"upper": _V.UPPER_FIRST, "lower": _V.LOWER_FIRST, "off": _V.OFF}[case_first])
    assert c is not None
    assert c.compare(a, b) == ref.compare(a, b)
    assert c.equal(a, b) == (ref.compare(a, b) == 0)


def test_locale_validity_does_not_depend_on_earlier_collators():
    """ICU caches collators by the data they load, keeping the first request's valid locale: after a
    zh_Hant collator (default type stroke) ICU reports zh@collation=stroke as valid for "zh_Hant".
    Validation must not depend on what ran before."""
    icu.Collator.createInstance(icu.Locale("zh_Hant"))
    c = parse_collation({"locale": "zh@collation=stroke"})
    assert c is not None and c.spec["locale"] == "zh@collation=stroke"


def test_every_icu_locale_and_collation_type_is_accepted():
    """Every locale ICU has collation data for, alone and with each of its collation types."""
    for name in sorted(icu.Collator.getAvailableLocales()):
        assert parse_collation({"locale": name}).spec["locale"] == name
        for kind in icu.Collator.getKeywordValuesForLocale("collation", icu.Locale(name), False):
            locale = f"{name}@collation={kind}"
            assert parse_collation({"locale": locale}).spec["locale"] == locale


@pytest.mark.parametrize("locale,suggestion", [
    ("fi_FI", "fi"), ("en_GB", "en"), ("EN_us", "en_US"), ("en-US", "en_US"), ("de@collation=xyz", "de"),
    ("en@colStrength=primary", "en"), ("xx", None), ("x_invalid", None), ("root", None),
])
def test_invalid_locales_are_bad_values(locale, suggestion):
    with pytest.raises(MongoError) as info:
        parse_collation({"locale": locale})
    assert info.value.code == BAD_VALUE
    message = str(info.value)
    assert message.startswith(f"Field 'locale' is invalid in: {{ locale: \"{locale}\" }}"), message
    assert (f"Did you mean '{suggestion}'?" in message) if suggestion else "Did you mean" not in message


@pytest.mark.parametrize("strength,code,message", [
    # (mongod reads strength with safeNumberInt: NaN is 0, doubles truncate, out-of-range values clamp)
    (2.9, None, None),
    (-0.5, FAILED_TO_PARSE, "Field 'strength' must be an integer 1 through 5. Got: 0"),
    (float("nan"), FAILED_TO_PARSE, "Field 'strength' must be an integer 1 through 5. Got: 0"),
    (9.9, 51024, "BSON field 'strength' value must be <= 5, actual value '9'"),
    (float("inf"), 51024, "BSON field 'strength' value must be <= 5, actual value '2147483647'"),
    (-1e300, 51024, "BSON field 'strength' value must be >= 0, actual value '-2147483648'"),
    (2**40, 51024, "BSON field 'strength' value must be <= 5, actual value '2147483647'"),
    ("Decimal128('2.5')", None, None),
    ("Decimal128('5.5')", 51024, "BSON field 'strength' value must be <= 5, actual value '6'"),
    ("Decimal128('NaN')", FAILED_TO_PARSE, "Field 'strength' must be an integer 1 through 5. Got: 0"),
    ("Decimal128('-1E+40')", 51024, "BSON field 'strength' value must be >= 0, actual value '-2147483648'"),
])
def test_strength_is_read_like_safe_number_int(strength, code, message):
    from bson.decimal128 import Decimal128
    from bson.int64 import Int64

    value = Decimal128(strength[12:-2]) if isinstance(strength, str) else \
        Int64(strength) if isinstance(strength, int) else strength
    if code is None:
        c = parse_collation({"locale": "en", "strength": value})
        assert c is not None and c.spec["strength"] == 2
        return
    with pytest.raises(MongoError) as info:
        parse_collation({"locale": "en", "strength": value})
    assert (info.value.code, str(info.value)) == (code, message)
