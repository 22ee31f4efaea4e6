"""``bson_repr`` renders values inside error messages as mongod prints them: a decoded DBRef as the
``{$ref, $id, $db}`` document it came from, MinKey/MaxKey by name, a Timestamp as ``Timestamp(t, i)`` and
a regex as ``/pattern/flags``."""

from bson import DBRef, MaxKey, MinKey, Regex, Timestamp

from tidemark.query.value_repr import bson_repr


def test_dbref_renders_as_its_document():
    assert bson_repr(DBRef("foo", 1)) == '{ $ref: "foo", $id: 1 }'
    assert bson_repr({"a": DBRef("foo", "x", "db", extra=2.5)}) == '{ a: { $ref: "foo", $id: "x", $db: "db", extra: 2.5 } }'


def test_min_max_key_timestamp_and_regex():
    assert bson_repr([MinKey(), MaxKey()]) == "[ MinKey, MaxKey ]"
    assert bson_repr(Timestamp(5, 7)) == "Timestamp(5, 7)"
    assert bson_repr(Regex("^a.b", "mi")) == "/^a.b/im"
    assert bson_repr(Regex("x")) == "/x/"
    assert bson_repr(Regex("x", "sux")) == "/x/sux"


def test_bindata_and_dates_past_pythons_range():
    """BSONElement::toString's forms, where Python's repr leaked into messages (``b''``,
    ``DatetimeMS(...)``; found by tests/reliability/test_operator_argument_values.py's nested run)."""
    from bson import Binary
    from bson.datetime_ms import DatetimeMS

    assert bson_repr(b"") == "BinData(0, )"
    assert bson_repr(Binary(b"\x01\xab", 5)) == "BinData(5, 01AB)"
    assert bson_repr(Binary(bytes(range(16)), 4)) == "BinData(4, 00010203-0405-0607-0809-0a0b0c0d0e0f)"
    assert bson_repr(b"z" * 81) == "BinData(0, " + "7A" * 70 + "...)"
    assert bson_repr(b"z" * 80) == "BinData(0, " + "7A" * 80 + ")"
    assert bson_repr(DatetimeMS(2**63 - 1)) == "new Date(9223372036854775807)"
    assert bson_repr(DatetimeMS(-(2**63))) == "new Date(-9223372036854775808)"
