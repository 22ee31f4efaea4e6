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
