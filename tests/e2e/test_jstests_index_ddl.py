"""MongoDB's index DDL jstests (ordinary collections) ported to pymongo against a real Tidemark server:
createIndexes option validation and its error codes, dropIndexes by name / key pattern / list / ``'*'``,
listIndexes shapes, hidden indexes, unique / sparse / partial indexes, and index answers equal to
collection-scan answers.

Ported from mongodb/mongo (7.0-era; 43 files of ``jstests/core/ddl/``, ``jstests/core/index/`` and
``jstests/core/catalog/``): ``create_indexes.js``, ``create_indexes_with_unknown_field_names.js``,
``create_index_same_spec_different_name.js``, ``bad_index_plugin.js``, ``index_create_too_many.js``,
``index_create_with_nul_in_name.js``, ``index_dropdups_ignore.js``, ``ttl_index_options.js``,
``drop_index.js``, ``drop_indexes.js``, ``collection_uuid_index_commands.js``, ``hidden_index.js``,
``index_partial_create_drop.js``, ``index_partial_read_ops.js``, ``index_partial_write_ops.js``,
``indexes_multiple_commands.js``, ``index_signature.js``, ``index_id_options.js``, ``index_plugins.js``,
``index_many.js``, ``index_many2.js``, ``index_sparse1.js``, ``index_sparse2.js``, ``indext.js``,
``sparse_index_internal_expr.js``, ``indexa.js``, ``indexb.js``, ``indexu.js``, ``index_arr1.js``,
``index_type_change.js``, ``index_decimal.js``, ``index_large_and_small_dates.js``,
``index_bounds_maxkey.js``, ``index_bounds_minkey.js``, ``indexl.js``, ``indexn.js``, ``index_check3.js``,
``index_check5.js``, ``indexr.js``, ``indexs.js``, ``list_indexes.js``, ``list_indexes_invalid.js``, ``list_indexes_non_existent_ns.js``.

The expected error messages are mongod 7.0's (index_key_validate.cpp, index_catalog_impl.cpp,
create_indexes_cmd.cpp). Explain shapes (which plan a query takes), plan-cache checks, failpoints,
``validate``'s key counts (replaced by the documents a hinted index scan returns), wildcard and
columnstore indexes (not supported by Tidemark), sharding and replication parts are left out.
"""

from __future__ import annotations

import pytest
from bson import Code, DatetimeConversion, DatetimeMS, Decimal128, Int64, MaxKey, MinKey
from bson.codec_options import CodecOptions
from harness.jstests import fails, ids
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

pytestmark = pytest.mark.commands(
    "createIndexes", "listIndexes", "dropIndexes", "insert", "find", "update", "delete", "collMod", "count",
)

BAD_VALUE = 2
FAILED_TO_PARSE = 9
TYPE_MISMATCH = 14
INDEX_NOT_FOUND = 27
INVALID_OPTIONS = 72
CANNOT_CREATE_INDEX = 67
INDEX_ALREADY_EXISTS = 68
INDEX_OPTIONS_CONFLICT = 85
INDEX_KEY_SPECS_CONFLICT = 86
OPERATION_FAILED = 96
INVALID_INDEX_SPEC_OPTION = 197
UNKNOWN_FIELD = 40415
DUPLICATE_KEY = 11000
AMBIGUOUS_INDEX_KEY_PATTERN = 181

# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def create(coll, *specs, **extra) -> dict:
    """The createIndexes command with these raw specs."""
    return coll.database.command("createIndexes", coll.name, indexes=list(specs), **extra)


def spec(key: dict, name: str | None = None, **options) -> dict:
    """A raw index spec named as the shell names it (``a_1_b_-1``) unless ``name`` is given."""
    if name is None:
        name = "_".join(f"{k}_{v}" for k, v in key.items())
    return {"key": key, "name": name, **options}


def create_fails(coll, *specs_and_codes, **extra) -> OperationFailure:
    specs = [s for s in specs_and_codes if isinstance(s, dict)]
    codes = [c for c in specs_and_codes if isinstance(c, int)]
    return fails(lambda: create(coll, *specs, **extra), *codes)


def names(coll) -> list[str]:
    return sorted(s["name"] for s in coll.list_indexes())


def index_spec(coll, name: str) -> dict | None:
    return next((s for s in coll.list_indexes() if s["name"] == name), None)


def hinted_ids(coll, flt: dict, hint) -> list:
    return ids(coll.find(flt).hint(hint))


def natural_ids(coll, flt: dict) -> list:
    return ids(coll.find(flt).hint([("$natural", 1)]))


# --------------------------------------------------------------------------------------------------
# create_indexes.js
# --------------------------------------------------------------------------------------------------

def test_create_indexes_counts_and_notes(db):
    """create_indexes.js: the counts before/after, createdCollectionAutomatically, and the note when some
    or all of the requested indexes exist."""
    reply = create(db.nodb, spec({"x": 1}))
    assert reply["createdCollectionAutomatically"] is True
    assert reply["numIndexesAfter"] == reply["numIndexesBefore"] + 1 and "note" not in reply
    reply = create(db.t, spec({"x": 1}))
    assert reply["createdCollectionAutomatically"] is True and "note" not in reply
    reply = create(db.t, spec({"x": 1}))
    assert "createdCollectionAutomatically" not in reply  # (mongod's early reply)
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] and reply["note"] == "all indexes already exist"
    reply = create(db.t, spec({"x": 1}), spec({"y": 1}))
    assert reply["numIndexesAfter"] == reply["numIndexesBefore"] + 1 and reply["note"] == "index already exists"
    assert reply["createdCollectionAutomatically"] is False
    reply = create(db.t, spec({"a": 1}), spec({"b": 1}))
    assert reply["numIndexesAfter"] == reply["numIndexesBefore"] + 2 and "note" not in reply
    reply = create(db.t, spec({"a": 1}), spec({"b": 1}))
    assert reply["numIndexesBefore"] == reply["numIndexesAfter"] and reply["note"] == "all indexes already exist"


def test_create_indexes_malformed_requests_build_nothing(db):
    """create_indexes.js: an empty list is 2, a spec without 'key' is 9, and one bad spec fails the whole
    command, building none of the others."""
    create(db.t, spec({"x": 1}), spec({"y": 1}))
    create_fails(db.t, BAD_VALUE)
    create_fails(db.t, {}, FAILED_TO_PARSE)
    create_fails(db.t, {}, spec({"m": 1}, "asd"), FAILED_TO_PARSE)
    assert names(db.t) == ["_id_", "x_1", "y_1"]
    create(db.t, spec({"c": 1}, sparse=True))
    assert [s["name"] for s in db.t.list_indexes() if s.get("sparse")] == ["c_1"]
    create_fails(db.t, spec({"x": "invalid_index_type"}, "x_1"), CANNOT_CREATE_INDEX)
    create_fails(db.t, spec({"x": 1}, ""), CANNOT_CREATE_INDEX)
    assert names(db.t) == ["_id_", "c_1", "x_1", "y_1"]


@pytest.mark.parametrize(("raw", "code", "message"), [
    ({"key": {"d": 1}, "name": "d_1", "v": 0}, CANNOT_CREATE_INDEX,
     'Error in specification { key: { d: 1 }, name: "d_1", v: 0 } :: caused by :: Invalid index specification '
     '{ key: { d: 1 }, name: "d_1", v: 0 }; cannot create an index with v=0'),
    ({"key": {"d": 1}, "name": "d_1", "v": 3}, CANNOT_CREATE_INDEX, None),
    ({"key": {"d": 1}, "name": "d_1", "v": "2"}, TYPE_MISMATCH,
     "Error in specification { key: { d: 1 }, name: \"d_1\", v: \"2\" } :: caused by :: The field 'v' must be a "
     "number, but got string"),
    ({"key": {"d": 1}, "name": "d_1", "v": 1.5}, BAD_VALUE, None),
    ({"key": {"e": 1}, "name": "e_1", "v": 2, "invalidField": 1}, INVALID_INDEX_SPEC_OPTION,
     'Error in specification { key: { e: 1 }, name: "e_1", v: 2, invalidField: 1 } :: caused by :: The field '
     "'invalidField' is not valid for an index specification. Specification: { key: { e: 1 }, name: \"e_1\", "
     "v: 2, invalidField: 1 }"),
    ({"key": {"e": 1}, "name": "e_1", "v": 1, "invalidField": 1}, INVALID_INDEX_SPEC_OPTION, None),
    ({"key": {"star": 1}, "name": "*"}, BAD_VALUE, "The index name '*' is not valid."),
    ({"key": {"f": ""}, "name": "f_1"}, CANNOT_CREATE_INDEX,
     'Error in specification { key: { f: "" }, name: "f_1" } :: caused by :: Values in the index key pattern '
     "cannot be empty strings"),
    ({"key": {"x": 1}}, FAILED_TO_PARSE,
     "Error in specification { key: { x: 1 } } :: caused by :: The 'name' field is a required property of an "
     "index specification"),
    ({"name": "x"}, FAILED_TO_PARSE, None),
    ({"key": {"x": 1}, "name": 5}, TYPE_MISMATCH, None),
    ({"key": 5, "name": "x"}, TYPE_MISMATCH, None),
    ({"key": {"x": 1}, "name": "x", "unique": "yes"}, TYPE_MISMATCH,
     "Error in specification { key: { x: 1 }, name: \"x\", unique: \"yes\" } :: caused by :: The field 'unique has "
     "value unique: \"yes\", which is not convertible to bool"),
    ({"key": {"x": 1}, "name": "x", "sparse": []}, TYPE_MISMATCH, None),
    ({"key": {"x": 1}, "name": "x", "hidden": 1}, TYPE_MISMATCH, None),
    ({"key": {"x": 1}, "name": "x", "collation": {}}, BAD_VALUE, None),
    ({"key": {"x": 1}, "name": "x", "collation": "fr"}, TYPE_MISMATCH, None),
    ({"key": {"x": 1}, "name": "x", "v": 1, "collation": {"locale": "fr"}}, CANNOT_CREATE_INDEX, None),
    ({"key": {"x": 1}, "name": "x", "weights": {"x": 1}}, CANNOT_CREATE_INDEX, None),
    ({"key": {"x": 1}, "name": "x", "default_language": 1}, TYPE_MISMATCH, None),
    ({"key": {"x": "2dsphere"}, "name": "x", "2dsphereIndexVersion": "3"}, TYPE_MISMATCH, None),
    ({"key": {"x": "text"}, "name": "x", "collation": {"locale": "fr"}}, CANNOT_CREATE_INDEX, None),
], ids=lambda v: None if not isinstance(v, dict) else "-".join(sorted(v))[:40])
def test_create_indexes_spec_validation(db, raw, code, message):
    """create_indexes.js and mongod's validateIndexSpec: every malformed spec gets mongod's code, and the
    message "Error in specification <spec> :: caused by :: <reason>" where the jstests or mongod show it."""
    error = create_fails(db.t, raw, code)
    if message is not None:
        assert error.details["errmsg"] == message
    assert "x" not in names(db.t) if "t" in db.list_collection_names() else True


def test_create_indexes_version_one_is_kept(db):
    """create_indexes.js: v: 1 indexes can still be created explicitly; listIndexes shows their version."""
    create(db.t, spec({"d": 1}, v=1))
    create(db.t, spec({"e": 1}, v=2.0))
    assert index_spec(db.t, "d_1")["v"] == 1
    assert index_spec(db.t, "e_1")["v"] == 2


def test_create_indexes_unknown_command_field_is_40415(db):
    """create_indexes.js: an unknown top-level field of the command is an IDL error."""
    error = create_fails(db.t, spec({"e": 1}), UNKNOWN_FIELD, invalidField=1)
    assert error.details["errmsg"] == "BSON field 'createIndexes.invalidField' is an unknown field."


def test_create_indexes_same_name_in_one_command(db):
    """create_indexes.js: two specs of one command with the same name and different keys are 86, whether
    the collection exists or is created by the command; two identical ones are refused as well."""
    for coll in (db.exists, db.created):
        if coll.name == "exists":
            db.create_collection("exists")
        create_fails(coll, spec({"g": 1}, "myidx"), spec({"h": 1}, "myidx"), INDEX_KEY_SPECS_CONFLICT)
        create_fails(coll, spec({"g": 1}, "g1"), spec({"g": 1}, "g2"), INDEX_OPTIONS_CONFLICT)
    db.create_collection("twice")
    error = create_fails(db.twice, spec({"g": 1}), spec({"g": 1}), OPERATION_FAILED)
    assert error.details["errmsg"] == "Cannot build two identical indexes. Try again without duplicate indexes."
    create_fails(db.twice_new, spec({"g": 1}), spec({"g": 1}), INDEX_ALREADY_EXISTS)
    assert names(db.exists) == ["_id_"] and names(db.twice) == ["_id_"]


# --------------------------------------------------------------------------------------------------
# create_indexes_with_unknown_field_names.js, index_dropdups_ignore.js, index_create_with_nul_in_name.js
# --------------------------------------------------------------------------------------------------

def test_unknown_spec_fields_and_ignore_unknown_index_options(db):
    """create_indexes_with_unknown_field_names.js: an unknown spec field is 197 unless
    ignoreUnknownIndexOptions is true (a bool: a string is 14), which drops it from the stored spec."""
    bad = spec({"x": 1}, "myindex", someField="someValue")
    create_fails(db.c, bad, INVALID_INDEX_SPEC_OPTION)
    create_fails(db.c, bad, INVALID_INDEX_SPEC_OPTION, ignoreUnknownIndexOptions=False)
    create_fails(db.c, bad, TYPE_MISMATCH, ignoreUnknownIndexOptions="badValue")
    create(db.c, bad, ignoreUnknownIndexOptions=True)
    assert index_spec(db.c, "myindex") == {"v": 2, "key": {"x": 1}, "name": "myindex"}


def test_drop_dups_is_ignored_and_stripped(db):
    """index_dropdups_ignore.js: dropDups does not drop duplicates (11000) and is not stored."""
    db.c.insert_many([{"_id": 1, "a": "dup"}, {"_id": 2, "a": "dup"}])
    create_fails(db.c, spec({"a": 1}, unique=True, dropDups=True), DUPLICATE_KEY)
    db.c.delete_one({"_id": 2})
    create(db.c, spec({"a": 1}, unique=True, dropDups=True))
    assert all("dropDups" not in s for s in db.c.list_indexes())


def test_index_name_with_nul_is_refused(db):
    """index_create_with_nul_in_name.js."""
    error = create_fails(db.c, spec({"a": 1}, "foo\0bar"), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"] == "index name cannot contain NUL bytes"


# --------------------------------------------------------------------------------------------------
# bad_index_plugin.js, index_plugins.js, key pattern validation
# --------------------------------------------------------------------------------------------------

def test_bad_index_plugin(db):
    """bad_index_plugin.js: an unknown plugin fails and builds nothing."""
    create(db.c, spec({"good": 1}))
    error = create_fails(db.c, spec({"bad": "bad"}), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"].endswith("Unknown index plugin 'bad'")
    assert names(db.c) == ["_id_", "good_1"]


SPECIAL = ["2d", "2dsphere", "hashed", "text"]


@pytest.mark.parametrize("key", [
    {"a": "hashed"}, {"a": "2d"}, {"a": "2dsphere"}, {"a": "text"}, {"a": "2dsphere", "b": 1}, {"a": 1, "b": "2dsphere"},
    {"a": "text", "b": 1}, {"a": 1, "b": "text"}, {"a": "2d", "b": 1}, {"a": "hashed", "b": 1}, {"a": 1, "b": "hashed"},
    {"a": "2dsphere", "b": "2dsphere"}, {"a": "text", "b": "text"},
], ids=str)
def test_index_plugins_that_compound(db, key):
    """index_plugins.js: special index types alone and compounded with ascending fields."""
    create(db.c, spec(key))
    db.c.drop_indexes()


@pytest.mark.parametrize(("key", "code"), [
    ({"a": 1, "b": "2d"}, None),
    ({"a": "2d", "b": "2d"}, None),
    ({"a": "hashed", "b": "hashed"}, 31303),
    ({"c": 1, "a": "hashed", "b": "hashed"}, 31303),
    *[(key, CANNOT_CREATE_INDEX) for t1 in SPECIAL for t2 in SPECIAL if t1 != t2
      for key in ({"a": t1, "b": t2}, {"a": t1, "b": t2, "c": 1}, {"c": -1, "a": t1, "b": t2}, {"a": t1, "c": 1, "b": t2})],
    *[({"$**": 1, "b": t}, CANNOT_CREATE_INDEX) for t in SPECIAL],
], ids=str)
def test_index_plugins_that_do_not_compound(db, key, code):
    """index_plugins.js: 2d not first, two 2d fields, two hashed fields (31303), and any two different
    special types (67, "Can't use more than one index plugin for a single index.") are refused."""
    error = create_fails(db.c, spec(key), *([code] if code else []))
    if code == CANNOT_CREATE_INDEX:
        assert error.details["errmsg"].endswith("Can't use more than one index plugin for a single index.")


@pytest.mark.parametrize(("key", "reason"), [
    ({"a": 0}, "Values in the index key pattern cannot be 0."),
    ({"a": 0.0}, "Values in the index key pattern cannot be 0."),
    ({"a": Int64(0)}, "Values in the index key pattern cannot be 0."),
    ({"a": float("nan")}, "Values in the index key pattern cannot be NaN."),
    ({"a": True}, "Values in v:2 index key pattern cannot be of type bool. Only numbers > 0, numbers < 0, and "
                  "strings are allowed."),
    ({"a": None}, "Values in v:2 index key pattern cannot be of type null. Only numbers > 0, numbers < 0, and "
                  "strings are allowed."),
    ({"a": {"b": 1}}, "Values in v:2 index key pattern cannot be of type object. Only numbers > 0, numbers < 0, "
                      "and strings are allowed."),
    ({"": 1}, "Index keys cannot be an empty field."),
    ({"a..b": 1}, "Index keys cannot contain an empty field."),
    ({"a.": 1}, "Index keys cannot contain an empty field."),
    ({".a": 1}, "Index keys cannot contain an empty field."),
    ({"$a": 1}, "Index key contains an illegal field name: field name starts with '$'."),
    ({"a.$b": 1}, "Index key contains an illegal field name: field name starts with '$'."),
    ({"$id": 1}, "Index key contains an illegal field name: field name starts with '$'."),
    ({"_fts": 1}, "Index key contains an illegal field name: '_fts'"),
    ({}, "Index keys cannot be empty."),
    ({"a" * 2100: 1}, "Index key pattern too large."),
], ids=lambda v: repr(v)[:30])
def test_key_pattern_validation(db, key, reason):
    """mongod's validateKeyPattern (the jstests' bad specs above): 67 and its reason."""
    raw = {"key": key, "name": "k"}
    error = create_fails(db.c, raw, CANNOT_CREATE_INDEX)
    assert error.details["errmsg"].endswith(" :: caused by :: " + reason)
    assert error.details["errmsg"].startswith("Error in specification { key: ")


@pytest.mark.parametrize("key", [{"a.$id": 1}, {"a.$ref": 1, "a.$db": -1}, {"a": 1.5}, {"a": -Int64(3)},
                                 {"_id": 1.7976931348623157e308}, {"_id": -1.7976931348623157e308}], ids=str)
def test_key_patterns_mongod_accepts(db, key):
    """DBRef parts after the first, any non-zero number (index_id_options.js: Number.MAX_VALUE on _id)."""
    db.c.insert_one({"_id": 0})
    create(db.c, spec(key, "k"))
    assert index_spec(db.c, "k")["key"] == key


_FIELD_PART = st.sampled_from(["a", "b", "", "$a", "$id", "$ref", "$db", "_fts"])
_KEY_NAME = st.lists(_FIELD_PART, min_size=1, max_size=3).map(".".join)
_KEY_VALUE = st.sampled_from([1, -1, 0, 2.5, float("nan"), "", "hashed", "2dsphere", "bogus", True, None])


def _reference_key_error(key: dict) -> str | None:
    """mongod 7.0's validateKeyPattern as the jstests state it, for btree/hashed/2dsphere keys (the reason of
    the first fault, or None)."""
    plugin = next((v for v in key.values() if isinstance(v, str)), "")
    if plugin and plugin not in ("hashed", "2dsphere"):
        return f"Unknown index plugin '{plugin}'"
    for name, value in key.items():
        if isinstance(value, bool) or value is None:
            return (f"Values in v:2 index key pattern cannot be of type {'bool' if value is not None else 'null'}. "
                    "Only numbers > 0, numbers < 0, and strings are allowed.")
        if isinstance(value, float) and value != value:
            return "Values in the index key pattern cannot be NaN."
        if not isinstance(value, str) and value == 0:
            return "Values in the index key pattern cannot be 0."
        if isinstance(value, str) and value != plugin:
            return "Can't use more than one index plugin for a single index."
        if name == "":
            return "Index keys cannot be an empty field."
        if name == "_fts" and value != "text":
            return "Index key contains an illegal field name: '_fts'"
        for i, part in enumerate(name.split(".")):
            if part == "":
                return "Index keys cannot contain an empty field."
            if part.startswith("$") and not (i and part in ("$id", "$ref", "$db")):
                return "Index key contains an illegal field name: field name starts with '$'."
    if "" in key.values():
        return "Values in the index key pattern cannot be empty strings"
    return None


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(key=st.dictionaries(_KEY_NAME, _KEY_VALUE, min_size=1, max_size=3))
def test_key_pattern_validation_matches_reference(db, key):
    """Random key patterns (field paths with empty, '$'-prefixed and DBRef parts; zero, NaN, bool, null,
    string and numeric values): refused with mongod's reason exactly when the reference rules refuse them."""
    expected = _reference_key_error(key)
    hashed = sum(v == "hashed" for v in key.values())
    if expected is None and (hashed > 1 or "hashed" in key.values() and "2dsphere" in key.values()):
        return  # type-specific refusals (31303, ...) are checked elsewhere
    try:
        create(db.c, {"key": key, "name": "k"})
    except OperationFailure as error:
        assert expected is not None, (key, error.details["errmsg"])
        assert error.code == CANNOT_CREATE_INDEX
        assert error.details["errmsg"].endswith(" :: caused by :: " + expected), (key, error.details["errmsg"])
    else:
        assert expected is None, (key, expected)
        db.c.drop_index("k")


# --------------------------------------------------------------------------------------------------
# index_create_too_many.js, index_many.js
# --------------------------------------------------------------------------------------------------

def test_too_many_indexes(db):
    """index_create_too_many.js: 63 indexes exist; two more in one command push past 64: 67, nothing built."""
    for i in range(62):
        create(db.c, spec({f"i{i}": 1}, f"i{i}"))
    error = create_fails(db.c, spec({"i62": 1}, "i62"), spec({"i63": 1}, "i63"), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"] == f"add index fails, too many indexes for {db.name}.c key:{{ i63: 1 }}"
    assert len(names(db.c)) == 63


def test_index_many_keeps_queries_right(db):
    """index_many.js: creating indexes until the 64 limit fails; queries still answer right, also after
    renaming the collection."""
    db.many.insert_many([{"x": 9, "y": 99}, {"x": 19, "y": 99}])
    last = None
    for x in range(2, 70):
        key = {"x": 1} if x == 20 else {"y": 1} if x == 64 else {str(x): 1}
        try:
            db.many.create_index(list(key.items()))
        except OperationFailure as error:
            last = error
    assert last is not None and last.code == CANNOT_CREATE_INDEX
    assert len(names(db.many)) == 64
    assert len(list(db.many.find({"x": 9}))) == 1
    assert len(list(db.many.find({"y": 99}))) == 2
    db.many.rename("many2")
    assert len(list(db.many.find({"x": 9}))) == 0
    assert len(list(db.many2.find({"x": 9}))) == 1
    assert len(list(db.many2.find({"y": 99}))) == 2
    assert len(names(db.many2)) == 64


# --------------------------------------------------------------------------------------------------
# ttl_index_options.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "seconds", "reason"), [
    ({"x": 1}, 9223372036854775808.0, "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"),
    ({"x": 1}, 999999999999999, "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"),
    ({"x": 1}, -1, "TTL index 'expireAfterSeconds' option cannot be less than 0"),
    ({"x": 1}, "invalidOption", "TTL index 'expireAfterSeconds' option must be numeric, but received a type of "
                                "'string'"),
    ({"x": 1}, float("nan"), "TTL index 'expireAfterSeconds' option must not be NaN"),
    ({"x": 1, "y": 1}, 100, None),
], ids=str)
def test_ttl_options_refused(db, key, seconds, reason):
    """ttl_index_options.js: overflowing, negative, non-numeric and compound TTL indexes are 67."""
    raw = spec(key, expireAfterSeconds=seconds)
    error = create_fails(db.c, raw, CANNOT_CREATE_INDEX)
    if reason is not None:
        assert error.details["errmsg"].endswith(" :: caused by :: " + reason)
    else:
        assert error.details["errmsg"].startswith("TTL indexes are single-field indexes, compound indexes do not "
                                                  "support TTL. Index spec: ")


def test_ttl_options_accepted(db):
    """ttl_index_options.js: a time past the epoch, 0, a key named expireAfterSeconds, several TTL
    indexes in one command."""
    create(db.c, spec({"x_before_epoch": 1}, expireAfterSeconds=2_000_000_000))
    create(db.c, spec({"z": 1}, expireAfterSeconds=0))
    create(db.c, spec({"x": 1, "expireAfterSeconds": 3600}))
    create(db.c, spec({"x": 1}, expireAfterSeconds=3600), spec({"y": 1}, expireAfterSeconds=3600))
    assert index_spec(db.c, "z_1")["expireAfterSeconds"] == 0
    assert "expireAfterSeconds" not in index_spec(db.c, "x_1_expireAfterSeconds_3600")


# --------------------------------------------------------------------------------------------------
# drop_index.js, drop_indexes.js
# --------------------------------------------------------------------------------------------------

def _five_indexes(coll) -> None:
    coll.insert_one({"_id": 1, "a": 2, "b": 3, "c": 1, "d": 1, "e": 1})
    for field in "abcde":
        coll.create_index(field)
    assert names(coll) == ["_id_", "a_1", "b_1", "c_1", "d_1", "e_1"]


def test_drop_index_by_name_and_key_pattern(db):
    """drop_index.js: by name, by key pattern, never the _id index (72, by name or pattern), recreate,
    and a one-name list."""
    _five_indexes(db.t)
    db.t.drop_index("a_1")
    assert names(db.t) == ["_id_", "b_1", "c_1", "d_1", "e_1"]
    db.command("dropIndexes", "t", index={"b": 1})
    assert names(db.t) == ["_id_", "c_1", "d_1", "e_1"]
    for target in ("_id_", {"_id": 1}):
        error = fails(lambda target=target: db.command("dropIndexes", "t", index=target), INVALID_OPTIONS)
        assert error.details["errmsg"]
    db.t.create_index("a")
    assert names(db.t) == ["_id_", "a_1", "c_1", "d_1", "e_1"]
    db.command("dropIndexes", "t", index=["c_1"])
    assert names(db.t) == ["_id_", "a_1", "d_1", "e_1"]


def test_drop_indexes_lists_are_all_or_nothing(db):
    """drop_indexes.js: several names at once; a list naming _id_ (72) or holding a non-string (14)
    drops nothing."""
    _five_indexes(db.t)
    reply = db.command("dropIndexes", "t", index=["c_1", "d_1"])
    assert reply["nIndexesWas"] == 6
    assert names(db.t) == ["_id_", "a_1", "b_1", "e_1"]
    fails(lambda: db.command("dropIndexes", "t", index=["a_1", "_id_"]), INVALID_OPTIONS)
    fails(lambda: db.command("dropIndexes", "t", index=["a_1", 123]), TYPE_MISMATCH)
    fails(lambda: db.command("dropIndexes", "t", index=["a_1", "nosuch"]), INDEX_NOT_FOUND)
    assert names(db.t) == ["_id_", "a_1", "b_1", "e_1"]


def test_drop_indexes_star_and_errors(db):
    """dropIndexes '*' keeps _id_; an unknown name or pattern is 27; a missing collection is 26."""
    _five_indexes(db.t)
    reply = db.command("dropIndexes", "t", index="*")
    assert reply["nIndexesWas"] == 6 and reply["msg"] == "non-_id indexes dropped for collection"
    assert names(db.t) == ["_id_"]
    error = fails(lambda: db.command("dropIndexes", "t", index="nosuch"), INDEX_NOT_FOUND)
    assert error.details["errmsg"] == "index not found with name [nosuch]"
    error = fails(lambda: db.command("dropIndexes", "t", index={"nosuch": 1}), INDEX_NOT_FOUND)
    assert error.details["errmsg"] == "can't find index with key: { nosuch: 1 }"
    fails(lambda: db.command("dropIndexes", "missing", index="*"), 26)
    fails(lambda: db.command("dropIndexes", "t", index=5), TYPE_MISMATCH)


# --------------------------------------------------------------------------------------------------
# create_index_same_spec_different_name.js, indexes_multiple_commands.js, index_signature.js
# --------------------------------------------------------------------------------------------------

def test_same_spec_different_name_is_85(db):
    """create_index_same_spec_different_name.js."""
    create(db.c, spec({"x": 1}, "x_1"))
    create(db.c, spec({"x": 1}, "x_1"))
    error = create_fails(db.c, spec({"x": 1}, "x_2"), INDEX_OPTIONS_CONFLICT)
    assert error.details["errmsg"] == "Index already exists with a different name: x_1"


def _created(reply: dict) -> int:
    return reply["numIndexesAfter"] - reply["numIndexesBefore"]


def test_multiple_indexes_same_key_different_collations(db):
    """indexes_multiple_commands.js: one key pattern, several collations; names and options conflict as
    mongod says; an ambiguous key pattern cannot drop or hint; names can."""
    db.create_collection("c")
    assert _created(create(db.c, spec({"a": 1}, "a_1"))) == 1
    create_fails(db.c, spec({"a": 1}, "a_1:1"), INDEX_OPTIONS_CONFLICT)
    assert _created(create(db.c, spec({"a": 1}, "fr", collation={"locale": "fr"}))) == 1
    assert _created(create(db.c, spec({"a": 1}, "en_US", collation={"locale": "en_US"}))) == 1
    fails(lambda: create(db.c, spec({"a": 1}, "a_1", collation={"locale": "en_US"})))
    create_fails(db.c, spec({"a": 1}, "fr2", collation={"locale": "fr"}), INDEX_OPTIONS_CONFLICT)
    fails(lambda: create(db.c, spec({"a": 1}, "fr_expire", collation={"locale": "fr"}, expireAfterSeconds=3600)))
    db.c.drop()
    db.create_collection("c")
    reply = create(db.c, spec({"a": 1}, "en_US", collation={"locale": "en_US"}),
                   spec({"a": 1}, "en_US_1", collation={"locale": "en_US", "strength": 1}))
    assert _created(reply) == 2
    fails(lambda: create(db.c, spec({"_id": 1}, "other", collation={"locale": "fr"})))
    db.c.drop()
    db.create_collection("c")
    create(db.c, spec({"a": 1}, "foo", collation={"locale": "en_US"}))
    create(db.c, spec({"a": 1}, "bar", collation={"locale": "en_US", "strength": 1}))
    fails(lambda: db.command("dropIndexes", "c", index={"a": 1}), AMBIGUOUS_INDEX_KEY_PATTERN)
    db.c.drop_index("foo")
    db.c.drop_index("bar")


def test_hints_with_several_indexes_on_one_key(db):
    """indexes_multiple_commands.js: an ambiguous hint pattern fails; a hint by name answers under the
    query's collation; an unambiguous pattern is allowed whatever its collation."""
    db.create_collection("c")
    create(db.c, spec({"a": 1}, "sbc"))
    create(db.c, spec({"a": 1}, "caseInsensitive", collation={"locale": "en_US", "strength": 2}))
    db.c.insert_many([{"a": "a"}, {"a": "A"}, {"a": 20}])
    assert len(list(db.c.find({"a": "a"}).hint("sbc"))) == 1
    assert len(list(db.c.find({"a": "a"}).hint("caseInsensitive"))) == 1
    assert len(list(db.c.find({"a": "a"}).collation({"locale": "en_US", "strength": 2}).hint("sbc"))) == 2
    create(db.c, spec({"b": 1}, collation={"locale": "fr"}))
    assert len(list(db.c.find({"a": "a"}).collation({"locale": "en_US"}).hint([("b", 1)]))) == 1


def test_ambiguous_hint_pattern_fails(db):
    """indexes_multiple_commands.js: a key-pattern hint matching two indexes is refused."""
    db.create_collection("c")
    create(db.c, spec({"a": 1}, "sbc"))
    create(db.c, spec({"a": 1}, "caseInsensitive", collation={"locale": "en_US", "strength": 2}))
    # the jstest only asserts a throw; mongod 7.0's QueryPlanner::plan answers 27 IndexNotFound
    # "Hint matched multiple indexes, must hint by index name"
    fails(lambda: list(db.c.find({"a": 1}).hint([("a", 1)])), INDEX_NOT_FOUND)
    assert len(list(db.c.find({"a": 1}).hint("sbc"))) == 0


INITIAL = {"name": "initial_index", "collation": {"locale": "en_US", "strength": 1},
           "partialFilterExpression": {"a": {"$gt": 0, "$lt": 10}, "b": "blah"}}


def _signature_coll(db):
    db.create_collection("sig")
    return db.sig


@pytest.mark.parametrize("options", [
    {"name": "sparse_index", "sparse": True},
    {"name": "unique_index", "unique": True},
    {"name": "unique_sparse_index", "unique": True, "sparse": True},
])
def test_signature_unique_and_sparse_tell_indexes_apart(db, options):
    """index_signature.js: a second index on {a: 1} that differs only by unique / sparse is built."""
    coll = _signature_coll(db)
    create(coll, spec({"a": 1}, "basic_index"))
    assert _created(create(coll, {"key": {"a": 1}, **options})) == 1


def test_signature_same_name_other_uniqueness_is_86(db):
    """index_signature.js (compareIndexOptions: unique differs -> kDifferent): the same name is 86."""
    coll = _signature_coll(db)
    create(coll, spec({"a": 1}, "basic_index"))
    create_fails(coll, spec({"a": 1}, "basic_index", unique=True), INDEX_KEY_SPECS_CONFLICT)


def test_signature_collation_and_partial_filter(db):
    """index_signature.js: collation and partial filter tell indexes apart; equivalent filters (written
    differently) are one index; leaf values are not sorted, so a reversed $and of $type is another filter
    (86 under the same name); expireAfterSeconds is no part of the signature (85)."""
    coll = _signature_coll(db)
    assert _created(create(coll, {"key": {"a": 1}, **INITIAL})) == 1
    assert _created(create(coll, {"key": {"a": 1}, **INITIAL, "name": "simple_collation_index",
                                  "collation": {"locale": "simple"}})) == 1
    assert _created(create(coll, {"key": {"a": 1}, **INITIAL, "name": "partial_filter_index",
                                  "partialFilterExpression": {"a": {"$gt": 5, "$lt": 10}, "b": "blah"}})) == 1
    dupe = {"key": {"a": 1}, **INITIAL,
            "partialFilterExpression": {"$and": [{"b": "blah"}, {"a": {"$lt": 10}}, {"a": {"$gt": 0}}]}}
    assert _created(create(coll, dupe)) == 0
    create_fails(coll, {**dupe, "name": "partial_filter_dupe_index"}, INDEX_OPTIONS_CONFLICT)
    assert _created(create(coll, {"key": {"a": 1}, **INITIAL, "name": "partial_filter_collator_index",
                                  "partialFilterExpression": {"a": {"$gt": 0, "$lt": 10}, "b": "BLAH"}})) == 1
    unsorted = {"key": {"a": 1}, **INITIAL, "name": "partial_filter_single_field_multiple_predicates_same_matchtype",
                "partialFilterExpression": {"$and": [{"a": {"$type": 1}}, {"a": {"$type": 2}}]}}
    assert _created(create(coll, unsorted)) == 1
    reversed_leaves = {**unsorted, "partialFilterExpression": {"$and": [{"a": {"$type": 2}}, {"a": {"$type": 1}}]}}
    create_fails(coll, reversed_leaves, INDEX_KEY_SPECS_CONFLICT)
    assert _created(create(coll, spec({"a": 1}, "basic_index_default_opts"))) == 1
    error = create_fails(coll, spec({"a": 1}, "non_sig_index", expireAfterSeconds=10), INDEX_OPTIONS_CONFLICT)
    assert error.details["errmsg"].startswith("An equivalent index already exists with a different name and options.")


_LEAF = st.one_of(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$eq"]),
              st.integers(-3, 3)).map(lambda t: {t[0]: {t[1]: t[2]}}),
    st.sampled_from(["a", "b"]).map(lambda p: {p: {"$exists": True}}),
)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(leaves=st.lists(_LEAF, min_size=2, max_size=4, unique_by=lambda d: repr(d)), data=st.data())
def test_signature_is_blind_to_the_order_of_different_predicates(db, leaves, data):
    """index_signature.js, generalised: an $and of predicates that differ in kind or path, in any order
    (nested or flat), is the same partial filter: the same name is "already exists" and another name 85.
    Predicates of one kind on one path keep their order (mongod does not sort by value)."""
    kinds = [(next(iter(leaf)), next(iter(next(iter(leaf.values()))))) for leaf in leaves]
    if len(set(kinds)) != len(kinds):
        return
    db.sig.drop()
    create(db.sig, spec({"x": 1}, "p", partialFilterExpression={"$and": leaves}))
    shuffled = data.draw(st.permutations(leaves))
    nested = {"$and": [shuffled[0], {"$and": shuffled[1:]}]}
    for flt in ({"$and": shuffled}, nested):
        assert _created(create(db.sig, spec({"x": 1}, "p", partialFilterExpression=flt))) == 0
        create_fails(db.sig, spec({"x": 1}, "q", partialFilterExpression=flt), INDEX_OPTIONS_CONFLICT)


# --------------------------------------------------------------------------------------------------
# index_id_options.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "code"), [
    ({"unique": True}, INVALID_INDEX_SPEC_OPTION),
    ({"sparse": False}, INVALID_INDEX_SPEC_OPTION),
    ({"partialFilterExpression": {"a": 1}}, INVALID_INDEX_SPEC_OPTION),
    ({"expireAfterSeconds": 3600}, INVALID_INDEX_SPEC_OPTION),
    ({"hidden": False}, INVALID_INDEX_SPEC_OPTION),
    ({"unknown": True}, INVALID_INDEX_SPEC_OPTION),
], ids=str)
def test_id_index_options_refused(db, options, code):
    """index_id_options.js: an _id index takes no options besides key, name, ns, v and collation."""
    error = create_fails(db.c, {"key": {"_id": 1}, "name": "_id_", **options}, code)
    field = next(iter(options))
    assert f"The field '{field}' is not valid for an" in error.details["errmsg"]


def test_id_index_shapes(db):
    """index_id_options.js: {_id: -1} named _id_ is refused; an {_id: 1} spec of any name is the _id
    index (already there); the allowed options are accepted; non-_id indexes cannot be named _id_."""
    db.c.insert_one({"_id": 0})
    error = create_fails(db.c, spec({"_id": -1}, "_id_"), BAD_VALUE)
    assert error.details["errmsg"] == "The field 'key' for an _id index must be {_id: 1}, but got { _id: -1 }"
    assert create(db.c, spec({"_id": 1}, "bad"))["note"] == "all indexes already exist"
    create(db.c, spec({"_id": 1}, "_id_", ns=f"{db.name}.c", v=2, collation={"locale": "simple"}))
    assert names(db.c) == ["_id_"]
    error = create_fails(db.c, spec({"_id": 1}, "_id_", collation={"locale": "en_US"}), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"] == "_id index must have the collection default collation"
    db.create_collection("fr", collation={"locale": "en_US"})
    create_fails(db.fr, spec({"_id": 1}, "_id_", collation={"locale": "simple"}), CANNOT_CREATE_INDEX)
    create_fails(db.fr, spec({"_id": 1}, "_id_", collation={"locale": "fr_CA"}), CANNOT_CREATE_INDEX)
    create_fails(db.c, spec({"_id": "hashed"}, "_id_"), BAD_VALUE)
    error = create_fails(db.c, spec({"a": 1}, "_id_"), BAD_VALUE)
    assert error.details["errmsg"] == ("The index name '_id_' is reserved for the _id index, which must have key "
                                       "pattern {_id: 1}, found key: { a: 1 }")


def test_id_index_of_a_collection_with_a_collation(db):
    """index_id_options.js: the _id index of a collection with a default collation has that collation;
    asking for it again (with that collation spelled out, or none) is "already exists"."""
    db.create_collection("fr", collation={"locale": "en_US"})
    assert index_spec(db.fr, "_id_")["collation"]["locale"] == "en_US"
    assert create(db.fr, spec({"_id": 1}, "_id_", collation={"locale": "en_US", "strength": 3}))["numIndexesAfter"] == 1
    assert create(db.fr, spec({"_id": 1}, "_id_"))["numIndexesAfter"] == 1


def test_id_index_compares_under_the_collection_collation(db):
    """The _id index takes the collection's collation (mongod's getDefaultIdIndexSpec), so ``_id``
    uniqueness and _id lookups compare under it; $out recreating the collection keeps it."""
    db.create_collection("ci", collation={"locale": "en", "strength": 2})
    db.ci.insert_one({"_id": "a", "x": 1})
    with pytest.raises(DuplicateKeyError):
        db.ci.insert_one({"_id": "A"})
    assert db.ci.find_one({"_id": "A"}) == {"_id": "a", "x": 1}
    db.ci.aggregate([{"$set": {"x": 2}}, {"$out": "ci"}])
    assert index_spec(db.ci, "_id_")["collation"]["strength"] == 2
    assert db.ci.find_one({"_id": "A"}) == {"_id": "a", "x": 2}
    db.create_collection("plain", collation={"locale": "simple"})
    assert "collation" not in index_spec(db.plain, "_id_")


# --------------------------------------------------------------------------------------------------
# hidden_index.js
# --------------------------------------------------------------------------------------------------

def _hide(coll, name: str, hidden: bool = True) -> None:
    coll.database.command("collMod", coll.name, index={"name": name, "hidden": hidden})


@pytest.mark.parametrize(("key", "query"), [
    ({"a": 1}, {"a": 1}),
    ({"a": "2dsphere"}, {"a": {"$geoWithin": {"$geometry": {"type": "Polygon",
                                                             "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]]]}}}}),
], ids=["btree", "2dsphere"])
def test_hidden_index_lifecycle(db, key, query):
    """hidden_index.js: hide / unhide through collMod show in listIndexes; a hidden index still answers
    queries right (by collection scan); recreating it hidden is allowed, and asking for it unhidden under
    the same name is 85."""
    name = "a_" + str(key["a"])
    db.c.insert_many([{"a": {"type": "Point", "coordinates": [2, 2]}}, {"a": {"type": "Point", "coordinates": [9, 9]}},
                      {"b": 1}] if key["a"] == "2dsphere" else [{"a": 1}, {"a": 2}, {"b": 1}])
    create(db.c, spec(key, name))
    assert "hidden" not in index_spec(db.c, name)
    expected = natural_ids(db.c, query)
    _hide(db.c, name)
    assert index_spec(db.c, name)["hidden"] is True
    assert ids(db.c.find(query)) == expected
    _hide(db.c, name, False)
    assert not index_spec(db.c, name).get("hidden")
    assert ids(db.c.find(query)) == expected
    db.c.drop_index(name)
    create(db.c, spec(key, name, hidden=True))
    assert index_spec(db.c, name)["hidden"] is True
    assert ids(db.c.find(query)) == expected
    error = create_fails(db.c, spec(key, name, hidden=False), INDEX_OPTIONS_CONFLICT)
    assert error.details["errmsg"].startswith("An equivalent index already exists with the same name but different "
                                              "options.")
    assert index_spec(db.c, name)["hidden"] is True


def test_hidden_index_rules(db):
    """hidden_index.js: listIndexes shows hidden: true; _id_ cannot be hidden; a hidden index cannot be
    hinted (2); TTL and hidden change together; hidden: false is never stored."""
    create(db.c, spec({"lsIdx": 1}, hidden=True))
    assert db.command("listIndexes", "c")["cursor"]["firstBatch"][1]["hidden"] is True
    fails(lambda: _hide(db.c, "_id_"))
    create(db.c, spec({"a": 1}, hidden=True))
    fails(lambda: db.command("find", "c", hint={"a": 1}), BAD_VALUE)
    db.c.drop_indexes()
    create(db.c, spec({"tm": 1}, expireAfterSeconds=10))
    db.command("collMod", "c", index={"name": "tm_1", "expireAfterSeconds": 1, "hidden": True})
    ttl = index_spec(db.c, "tm_1")
    assert ttl["hidden"] is True and ttl["expireAfterSeconds"] == 1
    create(db.c, spec({"y": 1}, "y", hidden=False))
    assert "hidden" not in index_spec(db.c, "y")
    _hide(db.c, "y")
    assert index_spec(db.c, "y")["hidden"] is True
    _hide(db.c, "y", False)
    assert not index_spec(db.c, "y").get("hidden")


def test_unhiding_leaves_no_hidden_field(db):
    """hidden_index.js: unhiding an index does not add 'hidden: false' to its spec."""
    create(db.c, spec({"y": 1}, "y", hidden=True))
    _hide(db.c, "y", False)
    assert "hidden" not in index_spec(db.c, "y")


def test_hidden_text_index_cannot_be_hinted(db):
    """hidden_index.js (text): with the text index hidden, $text finds no usable index (291)."""
    db.c.insert_one({"a": "java"})
    create(db.c, spec({"a": "text"}, "a_text"))
    _hide(db.c, "a_text")
    # the jstest's {hint: {a: 1}} is runCommand's ignored third argument: the find it sends has no hint
    fails(lambda: db.command("find", "c", filter={"$text": {"$search": "java"}}), 291)


# --------------------------------------------------------------------------------------------------
# index_partial_create_drop.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("pfe", "code"), [
    (5, TYPE_MISMATCH),
    ({"x": {"$asdasd": 3}}, BAD_VALUE),
    ({"$and": 5}, BAD_VALUE),
    ({"x": {"$regex": "abc"}}, CANNOT_CREATE_INDEX),
    ({"$expr": {"$eq": ["$x", 5]}}, 224),
    ({"$expr": {"$eq": [{"$trim": {"input": "$x"}}, "hi"]}}, 224),
    ({"$and": [{"$and": [{"$and": [{"$and": [{"x": 3}]}]}]}]}, CANNOT_CREATE_INDEX),
    ({"a": {"$gt": 1}, "$or": [{"$and": [{"b": 1, "c": 2}]}]}, CANNOT_CREATE_INDEX),
    ({"$text": {"$search": "x"}}, BAD_VALUE),
    ({"$jsonSchema": {"required": ["x"]}}, 224),
    ({"loc": {"$near": [0, 0]}}, 5626500),
    ({"$where": "this.x == 1"}, BAD_VALUE),
], ids=str)
def test_partial_filter_refused(db, pfe, code):
    """index_partial_create_drop.js: bad filter specs; $expr (and every other special feature) is banned
    by the parse, whose errors come "in specification"; the tree is at most 4 deep."""
    error = create_fails(db.c, spec({"x": 1}, partialFilterExpression=pfe), code)
    if code == CANNOT_CREATE_INDEX and "$regex" not in str(pfe):
        assert error.details["errmsg"] == "partialFilterExpression depth may not exceed 4"
    if code != CANNOT_CREATE_INDEX:
        assert error.details["errmsg"].startswith("Error in specification { key: { x: 1 }, name: \"x_1\", "
                                                  "partialFilterExpression: ")


def _reference_depth(flt: dict) -> int:
    """The depth of mongod's parse tree of ``flt`` (a document of one condition is that condition)."""
    conditions = []
    for key, value in flt.items():
        if key in ("$and", "$or"):
            conditions.append(1 + max(_reference_depth(sub) for sub in value))
        elif isinstance(value, dict) and next(iter(value), "").startswith("$"):
            conditions.extend([1] * len(value))
        else:
            conditions.append(1)
    return conditions[0] if len(conditions) == 1 else 1 + max(conditions)


_PFE_LEAF = st.sampled_from([{"x": 3}, {"y": {"$gt": 1}}, {"x": {"$gt": 1, "$lt": 9}}, {"z": {"$exists": True}}])
_PFE = st.recursive(_PFE_LEAF, lambda sub: st.one_of(
    st.lists(sub, min_size=1, max_size=2).map(lambda xs: {"$and": xs}),
    st.lists(sub, min_size=1, max_size=2).map(lambda xs: {"$or": xs}),
    st.tuples(_PFE_LEAF, sub).map(lambda t: {**t[0], "$and": [t[1]]}),
), max_leaves=6)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pfe=_PFE)
def test_partial_filter_depth_matches_reference(db, pfe):
    """index_partial_create_drop.js, generalised: random $and / $or trees of supported predicates are
    accepted exactly when mongod's parse tree is at most 4 deep."""
    allowed = _reference_depth(pfe) <= 4
    try:
        create(db.c, spec({"x": 1}, "p", partialFilterExpression=pfe))
    except OperationFailure as error:
        assert not allowed, (pfe, error.details["errmsg"])
        assert error.code == CANNOT_CREATE_INDEX
        assert error.details["errmsg"] == "partialFilterExpression depth may not exceed 4"
    else:
        assert allowed, pfe
        db.c.drop_index("p")


def test_partial_index_create_drop(db):
    """index_partial_create_drop.js: a tree of depth 4 is allowed; partial indexes index only matching
    documents (seen through a hinted scan); partial and sparse do not mix; several partial indexes on
    one key are allowed, then the key pattern is ambiguous (19)."""
    create(db.c, spec({"x": 1}, partialFilterExpression={"$and": [{"$and": [{"$and": [{"x": 3}]}]}]}))
    db.c.drop()
    db.c.insert_many([{"x": i, "a": i} for i in range(10)])
    create(db.c, spec({"x": 1}, partialFilterExpression={"a": {"$lt": 5}}))
    assert len(list(db.c.find({"a": {"$lt": 5}}).hint("x_1"))) == 5
    db.command("dropIndexes", "c", index={"x": 1})
    assert names(db.c) == ["_id_"]
    create(db.c, spec({"x": 1}))
    assert len(list(db.c.find().hint("x_1"))) == 10
    db.c.drop_index("x_1")
    for sparse in (True, 1):
        error = create_fails(db.c, spec({"x": 1}, partialFilterExpression={"a": 1}, sparse=sparse),
                             CANNOT_CREATE_INDEX)
        assert error.details["errmsg"] == 'cannot mix "partialFilterExpression" and "sparse" options'
    create(db.c, spec({"x": 1}, partialFilterExpression={"a": 1}, sparse=False))
    assert len(names(db.c)) == 2
    db.c.drop_index("x_1")
    create(db.c, spec({"x": 1}, partialFilterExpression={"a": {"$lt": 5}}))
    db.c.drop_index("x_1")
    assert len(list(db.c.find({"x": 0, "a": 0}))) == 1
    create(db.c, spec({"x": 1}, "partialIndex1", partialFilterExpression={"a": {"$lt": 5}}))
    create(db.c, spec({"x": 1}, "partialIndex2", partialFilterExpression={"a": {"$gte": 5}}))
    fails(lambda: db.command("dropIndexes", "c", index={"x": 1}), AMBIGUOUS_INDEX_KEY_PATTERN)
    db.c.drop_index("partialIndex2")
    assert names(db.c) == ["_id_", "partialIndex1"]


# --------------------------------------------------------------------------------------------------
# index_partial_read_ops.js, index_partial_write_ops.js
# --------------------------------------------------------------------------------------------------

def test_partial_index_read_ops(db):
    """index_partial_read_ops.js: find / count / aggregate / findAndModify answer the same with a partial
    index as without, whether or not the query implies its filter."""
    create(db.c, spec({"x": 1}, partialFilterExpression={"a": {"$lte": 1.5}}))
    db.c.insert_many([{"x": 5, "a": 2}, {"x": 6, "a": 1}])
    for query in ({"x": 6, "a": 1}, {"x": {"$gt": 1}, "a": 1}, {"x": 6, "a": {"$lte": 1}}, {"x": 6, "a": {"$lt": 1.6}},
                  {"x": 6}):
        assert len(list(db.c.find(query))) == 1, query
    assert db.c.count_documents({"x": {"$gt": 1}, "a": 1}) == 1
    assert db.c.count_documents({"x": {"$gt": 1}, "a": 2}) == 1
    assert len(list(db.c.aggregate([{"$match": {"x": {"$gt": 1}, "a": 1}}]))) == 1
    assert db.c.find_one_and_update({"x": {"$gt": 1}, "a": 1}, {"$inc": {"x": 1}})["x"] == 6
    assert db.c.find_one_and_update({"x": {"$gt": 1}, "a": 2}, {"$inc": {"x": 1}})["x"] == 5


def test_overlapping_partial_indexes_on_one_key(db):
    """index_partial_read_ops.js: three partial indexes on {a: 1}; each query answers as a collection
    scan does."""
    for name, low in (("index1", 0), ("index2", 10), ("index3", 100)):
        create(db.c, spec({"a": 1}, name, partialFilterExpression={"a": {"$gte": low}}))
    db.c.insert_many([{"a": v} for v in (1, 2, 3, 11, 12, 13, 101, 102, 103)])
    for query, expected in (({"a": {"$gt": 0, "$lt": 10}}, [1, 2, 3]), ({"a": {"$gt": 10, "$lt": 100}}, [11, 12, 13]),
                            ({"a": {"$gt": 100, "$lt": 1000}}, [101, 102, 103]),
                            ({"a": {"$gt": 0}}, [1, 2, 3, 11, 12, 13, 101, 102, 103]), ({"a": {"$lt": 0}}, [])):
        found = sorted(d["a"] for d in db.c.find(query, {"_id": 0}))
        assert found == expected, query
        assert ids(db.c.find(query)) == natural_ids(db.c, query)


@pytest.mark.parametrize(("pfe", "docs", "queries"), [
    ({"a": {"$in": [3, 5]}}, [{"x": 1, "a": 4}, {"x": 2, "a": 3}, {"x": 3, "a": 5}],
     [{"x": 2, "a": 3}, {"x": {"$gt": 1}, "a": 5}, {"x": 3, "a": {"$lt": 6}}, {"x": 2}]),
    ({"$or": [{"a": 3}, {"$and": [{"a": 5}, {"b": 5}]}]},
     [{"x": 1, "a": 1}, {"x": 2, "a": 5}, {"x": 3, "a": 5, "b": 1}, {"x": 4, "a": 3}, {"x": 5, "a": 5, "b": 5}],
     [{"x": 4, "a": 3}, {"x": 5, "a": 5, "b": 5}, {"x": 1, "a": 1}, {"x": 2, "a": 5}, {"x": 3, "a": 5, "b": 1}]),
], ids=["in", "and-or"])
def test_partial_filters_with_in_and_or(db, pfe, docs, queries):
    """index_partial_read_ops.js: $in and nested $and/$or partial filters; each query finds its one
    document; a hinted scan of the index returns exactly the documents the filter admits."""
    create(db.c, spec({"x": 1}, partialFilterExpression=pfe))
    db.c.insert_many(docs)
    for query in queries:
        assert len(list(db.c.find(query))) == 1, query
    assert ids(db.c.find().hint("x_1")) == natural_ids(db.c, pfe)


def test_partial_unique_index_write_ops(db):
    """index_partial_write_ops.js: updates move documents into and out of a unique partial index (its
    hinted scan shows which are in); duplicates only conflict inside the index."""
    create(db.c, spec({"x": 1}, unique=True, partialFilterExpression={"a": 1}))
    db.c.insert_many([{"_id": 1, "x": 5, "a": 2, "b": 1}, {"_id": 2, "x": 6, "a": 1, "b": 1}])

    def in_index():
        return ids(db.c.find().hint("x_1"))

    assert in_index() == [2]
    db.c.update_one({"_id": 1}, {"$set": {"a": 1}})
    assert in_index() == [1, 2]
    db.c.update_one({"_id": 1}, {"$set": {"a": 2}})
    assert in_index() == [2]
    db.c.update_one({"_id": 2}, {"$set": {"b": 2}})
    db.c.update_one({"_id": 1}, {"$set": {"b": 2}})
    assert in_index() == [2]
    big = [{"arbitrary": i} for i in range(2048)]
    db.c.update_one({"_id": 2}, {"$set": {"b": big}})
    db.c.update_one({"_id": 1}, {"$set": {"b": big}})
    assert in_index() == [2]
    db.c.delete_one({"x": 5})
    assert in_index() == [2]
    db.c.delete_one({"x": 6})
    assert in_index() == []
    db.c.insert_one({"_id": 3, "x": 1, "a": 1})
    db.c.insert_one({"_id": 4, "x": 1, "a": 0})
    with pytest.raises(DuplicateKeyError):
        db.c.insert_one({"_id": 5, "x": 1, "a": 1})
    assert in_index() == [3]
    db.c.delete_one({"_id": 4})
    assert in_index() == [3]


_PDOC = st.fixed_dictionaries({"x": st.integers(0, 4), "a": st.one_of(st.integers(-2, 6), st.none())},
                              optional={"b": st.sampled_from([1, 5, "s"])})
_PQUERY = st.one_of(
    st.tuples(st.integers(0, 4), st.integers(-2, 6)).map(lambda t: {"x": t[0], "a": t[1]}),
    st.integers(-2, 6).map(lambda v: {"x": {"$gte": 0}, "a": {"$gte": v}}),
    st.integers(0, 4).map(lambda v: {"x": {"$lte": v}, "a": {"$in": [1, 3, 5]}}),
    st.integers(0, 4).map(lambda v: {"x": v}),
)
_PFILTER = st.sampled_from([{"a": {"$gte": 2}}, {"a": {"$in": [1, 3, 5]}}, {"a": {"$lte": 1.5}},
                            {"$or": [{"a": 3}, {"$and": [{"a": 5}, {"b": 5}]}]}, {"b": {"$exists": True}}])


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(docs=st.lists(_PDOC, max_size=10), pfe=_PFILTER, queries=st.lists(_PQUERY, min_size=1, max_size=3))
def test_partial_index_answers_equal_collection_scan(db, docs, pfe, queries):
    """The jstests' invariant for partial indexes: with a partial index on {x: 1}, every query returns the
    documents a collection scan returns, and a hinted scan of the index holds exactly the documents the
    filter admits."""
    db.c.drop()
    create(db.c, spec({"x": 1}, partialFilterExpression=pfe))
    if docs:
        db.c.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    for query in queries:
        assert ids(db.c.find(query)) == natural_ids(db.c, query), query
    assert ids(db.c.find().hint("x_1")) == natural_ids(db.c, pfe)


# --------------------------------------------------------------------------------------------------
# index_sparse1.js, index_sparse2.js, indext.js
# --------------------------------------------------------------------------------------------------

def test_sparse_index_and_sorts(db):
    """index_sparse1.js: a sort does not lose documents to a sparse index; a unique index fails on two
    missing values (11000) unless sparse; a sparse unique index still refuses real duplicates."""
    db.c.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}, {"_id": 3, "x": 2}, {"_id": 4}, {"_id": 5}])
    assert db.c.count_documents({}) == 5
    assert len(list(db.c.find().sort("x", 1))) == 5
    create(db.c, spec({"x": 1}))
    assert len(list(db.c.find().sort("x", 1))) == 5
    db.c.drop_index("x_1")
    create(db.c, spec({"x": 1}, sparse=1))
    assert names(db.c) == ["_id_", "x_1"]
    assert len(list(db.c.find().sort("x", 1))) == 5
    assert len(list(db.c.find().hint("x_1"))) == 3
    db.c.drop_index("x_1")
    db.c.delete_one({"_id": 2})
    create_fails(db.c, spec({"x": 1}, unique=1), DUPLICATE_KEY, CANNOT_CREATE_INDEX)
    assert names(db.c) == ["_id_"]
    create(db.c, spec({"x": 1}, unique=1, sparse=1))
    db.c.drop_index("x_1")
    db.c.insert_one({"_id": 2, "x": 2})
    create_fails(db.c, spec({"x": 1}, unique=1, sparse=1), DUPLICATE_KEY, CANNOT_CREATE_INDEX)
    assert names(db.c) == ["_id_"]


@pytest.mark.parametrize("sparse", [False, True])
def test_sparse_compound_index_sorts(db, sparse):
    """index_sparse2.js: a compound (sparse) index does not change what a sorted find or count returns."""
    db.c.insert_many([{"_id": 1, "x": 1, "y": 1}, {"_id": 2, "x": 2}, {"_id": 3}])
    create(db.c, spec({"x": 1, "y": 1}, sparse=sparse))
    assert len(list(db.c.find().sort([("x", 1), ("y", 1)]))) == 3
    assert db.c.count_documents({}) == 3
    hinted = len(list(db.c.find().hint("x_1_y_1")))
    assert hinted == (2 if sparse else 3)


def test_sparse_index_with_arrays(db):
    """indext.js: a sparse index on 'a.b' holds no entry for {a: []} or {a: 1}; an element with b counts."""
    create(db.c, spec({"a.b": 1}, sparse=True))
    db.c.insert_many([{"a": []}, {"a": 1}])
    assert len(list(db.c.find().hint([("a.b", 1)]))) == 0
    create(db.c, spec({"a.b": 1, "a.c": 1}, sparse=True))
    db.c.insert_many([{"a": []}, {"a": 1}])
    assert len(list(db.c.find().hint([("a.b", 1), ("a.c", 1)]))) == 0
    db.c.insert_many([{"a": [{"b": 1}]}, {"a": 1}])
    assert len(list(db.c.find().hint([("a.b", 1), ("a.c", 1)]))) == 1


# --------------------------------------------------------------------------------------------------
# list_indexes.js, list_indexes_invalid.js, list_indexes_non_existent_ns.js
# --------------------------------------------------------------------------------------------------

def test_list_indexes_shapes_and_batches(db):
    """list_indexes.js: the cursor's shape; the _id index has no 'unique'; batch sizes of every numeric
    type, including 0 and 2**62; more than two batches through getMore."""
    db.create_collection("c")
    reply = db.command("listIndexes", "c")
    assert reply["cursor"]["id"] == 0 and reply["cursor"]["ns"] == f"{db.name}.c"
    assert [s["name"] for s in reply["cursor"]["firstBatch"]] == ["_id_"]
    create(db.c, spec({"a": 1}, unique=True))
    specs = sorted(db.c.list_indexes(), key=lambda s: s["name"])
    assert specs[0]["key"] == {"_id": 1} and "unique" not in specs[0]
    assert specs[1]["key"] == {"a": 1} and specs[1]["unique"] is True
    for size, first in ((2, 2), (1, 1), (0, 0), (Int64(2), 2), (2 ** 62, 2)):
        reply = db.command("listIndexes", "c", cursor={"batchSize": size})
        assert len(reply["cursor"]["firstBatch"]) == first, size
    assert len(db.command("listIndexes", "c", cursor={})["cursor"]["firstBatch"]) == 2
    create(db.c, spec({"b": 1}, unique=True), spec({"c": 1}, unique=True))
    reply = db.command("listIndexes", "c", cursor={"batchSize": 0})
    assert reply["cursor"]["firstBatch"] == [] and reply["cursor"]["id"] != 0
    seen = []
    cursor_id = reply["cursor"]["id"]
    while cursor_id:
        more = db.command("getMore", cursor_id, collection="c", batchSize=2)["cursor"]
        seen.extend(s["name"] for s in more["nextBatch"])
        cursor_id = more["id"]
    assert sorted(seen) == ["_id_", "a_1", "b_1", "c_1"]


@pytest.mark.parametrize("target", ["", 1, {}, []], ids=repr)
def test_list_indexes_bad_collection_names(db, target):
    """list_indexes.js: the collection argument must be a non-empty string."""
    fails(lambda: db.command({"listIndexes": target}))


@pytest.mark.parametrize("cursor", [0, "x", [], {"foo": 1}, {"batchSize": -1}, {"batchSize": "x"},
                                    {"batchSize": {}}, {"batchSize": 2, "foo": 1}], ids=repr)
def test_list_indexes_bad_cursor_options(db, cursor):
    """list_indexes_invalid.js."""
    create(db.c, spec({"a": 1}, unique=True))
    fails(lambda: db.command("listIndexes", "c", cursor=cursor))


def test_list_indexes_non_existent_namespaces(client, db):
    """list_indexes_non_existent_ns.js: a missing database or collection is an error (26)."""
    other = client[db.name + "_none"]
    fails(lambda: other.command("listIndexes", "list_indexes_non_existent_db"), 26)
    db.c.insert_one({})
    fails(lambda: db.command("listIndexes", "list_indexes_non_existent_collection"), 26)


# --------------------------------------------------------------------------------------------------
# unique indexes: writes after the build (index_partial_write_ops.js, index_sparse1.js, create_indexes.js)
# --------------------------------------------------------------------------------------------------

def test_unique_index_refuses_duplicates_in_bulk_writes(db):
    """A unique index refuses a duplicate insert or update (11000) and keeps the rest of an unordered
    batch; missing and null are the same key."""
    create(db.c, spec({"k": 1}, unique=True))
    with pytest.raises(BulkWriteError) as info:
        db.c.insert_many([{"_id": 1, "k": 1}, {"_id": 2, "k": 1}, {"_id": 3, "k": 2}, {"_id": 4}, {"_id": 5, "k": None}],
                         ordered=False)
    assert [e["index"] for e in info.value.details["writeErrors"]] == [1, 4]
    assert ids(db.c.find()) == [1, 3, 4]
    with pytest.raises(DuplicateKeyError):
        db.c.update_one({"_id": 3}, {"$set": {"k": 1}})
    assert db.c.find_one({"_id": 3})["k"] == 2


# --------------------------------------------------------------------------------------------------
# indexu.js, index_arr1.js, index_type_change.js
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("doc", "key"), [
    ({"a": [{"0": 1}]}, {"a.0": 1}),
    ({"a": [{"1": 1}, "c"]}, {"a.1": 1}),
    ({"a": [[1], {"0": [1]}]}, {"a.0.0": 1}),
    ({"a": [{"0": 1}]}, {"a.0.0": 1}),
    ({"a": [{"0": {"c": []}}]}, {"a.0.c": 1}),
], ids=str)
def test_ambiguous_array_fields_cannot_be_indexed(db, doc, key):
    """indexu.js: a field name that is also an array position is ambiguous: 16746, at build and insert."""
    db.c.insert_one(doc)
    create_fails(db.c, spec(key), 16746)


def test_ambiguous_array_fields_refuse_inserts(db):
    """indexu.js: with {a.0: 1} and {a.1: 1} built, documents with ambiguous paths are write errors."""
    create(db.c, spec({"a.0": 1, "a.1": 1}))
    db.c.insert_one({"a": [{"1": 1}]})
    with pytest.raises(OperationFailure):
        db.c.insert_one({"a": [{"1": 1}, 4]})


def test_numeric_path_components_that_are_not_ambiguous(db):
    """indexu.js: other indexes on such documents, '-1' and '00' (not array positions), unambiguous
    documents, nested arrays: built, and hinted answers equal collection scans."""
    create(db.one, spec({"a.b": 1}))
    db.one.insert_one({"_id": 0, "a": [{"0": 1}]})
    for path in ("a.-1", "a.00"):
        create(db[path], spec({path: 1}))
        db[path].insert_one({"a": [{path[2:]: 1}]})
    db.two.insert_one({"a": [{"1": 1}]})
    create(db.two, spec({"a.0": 1}))
    create(db.two, spec({"a.1": 1}))
    assert len(list(db.two.find({"a.1": 1}).hint([("a.1", 1)]))) == 1
    assert len(list(db.two.find({"a.1": 1}).hint([("$natural", 1)]))) == 1
    assert len(list(db.two.find({"a.0": {"1": 1}}).hint([("a.0", 1)]))) == 1
    assert len(list(db.two.find({"a.0": {"1": 1}}).hint([("$natural", 1)]))) == 1
    db.three.insert_one({"a": [[1]]})
    create(db.three, spec({"a.0.0": 1}))
    assert len(list(db.three.find({"a.0.0": 1}).hint([("$natural", 1)]))) == 1
    assert len(list(db.three.find({"a.0.0": 1}).hint([("a.0.0", 1)]))) == 1
    db.four.insert_one({"a": [[{"b": 1}]]})
    assert len(list(db.four.find({"a.0.b": 1}))) == 1
    create(db.four, spec({"a.0.b": 1}))
    assert len(list(db.four.find({"a.0.b": 1}))) == 1


def test_compound_index_over_empty_and_missing_arrays(db):
    """index_arr1.js: {a: 1, 'b.x': 1} keeps documents whose b is [] or missing (SERVER-1082)."""
    db.c.insert_many([{"_id": 1, "a": 5, "b": [{"x": 1}]}, {"_id": 2, "a": 5, "b": []}, {"_id": 3, "a": 5}])
    assert len(list(db.c.find({"a": 5}))) == 3
    create(db.c, spec({"a": 1, "b.x": 1}))
    assert len(list(db.c.find({"a": 5}))) == 3
    assert len(list(db.c.find({"a": 5}).hint("a_1_b.x_1"))) == 3
    db.c.insert_one({"_id": 4, "a": 5, "b": []})
    create(db.c, spec({"a": 1, "b.a": 1, "b.c": 1}))
    assert names(db.c) == ["_id_", "a_1_b.a_1_b.c_1", "a_1_b.x_1"]
    assert len(list(db.c.find({"a": 5}).hint("a_1_b.a_1_b.c_1"))) == 4


def test_replacing_a_value_with_another_type_updates_the_index(db):
    """index_type_change.js: a replacement turning double 2 into long 2 changes the indexed value too."""
    create(db.c, spec({"a": 1}))
    db.c.insert_one({"a": 2.0})
    assert len(list(db.c.find({"a": {"$type": "double"}}))) == 1
    result = db.c.replace_one({}, {"a": Int64(2)})
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert len(list(db.c.find({"a": {"$type": "long"}}).hint("a_1"))) == 1
    assert isinstance(db.c.find_one({"a": 2}, {"_id": 0, "a": 1}, hint="a_1")["a"], Int64)


# --------------------------------------------------------------------------------------------------
# collection_uuid_index_commands.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["createIndexes", "dropIndexes"])
def test_collection_uuid_of_index_commands(client, db, command):
    """collection_uuid_index_commands.js: the right UUID works; a UUID of no collection, of another
    collection (even a dropped one, or with the index gone), or in another database is 361
    CollectionUUIDMismatch with db / collectionUUID / expectedCollection / actualCollection."""
    def run(database, coll_name, uuid):
        body = {"indexes": [{"name": "x_1", "key": {"x": 1}}]} if command == "createIndexes" else {"index": {"y": 1}}
        return database.command({command: coll_name, **body, "collectionUUID": uuid})

    def mismatch(database, coll_name, uuid, actual):
        error = fails(lambda: run(database, coll_name, uuid), 361)
        assert (error.details["db"], error.details["collectionUUID"]) == (database.name, uuid)
        assert (error.details["expectedCollection"], error.details["actualCollection"]) == (coll_name, actual)

    db.coll.insert_one({"x": 1, "y": 2})
    db.coll.create_index("y")
    uuid = db.command("listCollections")["cursor"]["firstBatch"][0]["info"]["uuid"]
    run(db, "coll", uuid)
    other_uuid = type(uuid).from_uuid(__import__("uuid").uuid4())
    mismatch(db, "coll", other_uuid, None)
    db.coll_2.insert_one({"x": 1, "y": 1})
    db.coll_2.create_index("y")
    mismatch(db, "coll_2", uuid, "coll")
    if command == "dropIndexes":
        db.coll_2.drop_index("y_1")
        mismatch(db, "coll_2", uuid, "coll")
    db.coll_2.drop()
    mismatch(db, "coll_2", uuid, "coll")
    assert "coll_2" not in db.list_collection_names()
    mismatch(client[db.name + "_nonexistent"], "nonexistent", uuid, None)
    other_db = client[db.name + "_2"]
    try:
        other_db.coll_3.insert_one({"_id": 2})
        mismatch(other_db, "coll_3", uuid, None)
    finally:
        client.drop_database(other_db.name)


# --------------------------------------------------------------------------------------------------
# index_decimal.js, index_large_and_small_dates.js, sparse_index_internal_expr.js
# --------------------------------------------------------------------------------------------------

def test_decimal_index_keys(db):
    """index_decimal.js: decimals and doubles in one index keep their exact order and equality (the double
    0.1 is above decimal 0.10); -0.0 and 0E3 are the same _id."""
    db.t.insert_many([{"x": 0.1, "y": Decimal128("0.3000")}, {"x": 0.1}, {"y": 0.3}])
    create(db.t, spec({"x": 1}))
    create(db.t, spec({"y": -1}))
    db.t.insert_one({"x": Decimal128("0.10")})
    db.t.insert_one({"_id": Decimal128("0E3")})
    with pytest.raises(DuplicateKeyError):
        db.t.insert_one({"_id": -0.0})
    found = list(db.t.find({"x": Decimal128("0.1")}, {"_id": 0, "x": 1}))
    assert found == [{"x": Decimal128("0.10")}] and str(found[0]["x"]) == "0.10"
    assert list(db.t.find({"x": 0.1}, {"_id": 0}).sort([("x", 1), ("y", 1)])) == [
        {"x": 0.1}, {"x": 0.1, "y": Decimal128("0.3000")}]
    assert list(db.t.find({"x": {"$lt": 0.1}}, {"_id": 0})) == [{"x": Decimal128("0.10")}]
    assert list(db.t.find({"y": {"$lt": Decimal128("0.3")}}, {"y": 1, "_id": 0})) == [{"y": 0.3}]
    assert list(db.t.find({"_id": 0}, {"_id": 1})) == [{"_id": Decimal128("0E3")}]


def test_extreme_dates_in_v1_and_v2_indexes(db):
    """index_large_and_small_dates.js: the smallest and largest JavaScript dates, indexed by a v: 1 and
    a v: 2 index, are found by $type and sorted."""
    small, large = DatetimeMS(-8640000000000000), DatetimeMS(8640000000000000)
    raw_docs = [{"_id": 1, "d": small}, {"_id": 2, "d": large}, {"_id": 3, "d": 100}]
    db.c.insert_many(raw_docs)

    def check():
        found = list(db.c.with_options(codec_options=CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))
                     .find({"d": {"$type": "date"}}).sort("_id", 1))
        assert found == raw_docs[:2]

    check()
    create(db.c, spec({"d": 1}, v=1))
    assert index_spec(db.c, "d_1")["v"] == 1
    check()
    db.command("dropIndexes", "c", index={"d": 1})
    create(db.c, spec({"d": 1}))
    check()


def test_sparse_index_hinted_for_expr_misses_documents(db):
    """sparse_index_internal_expr.js: $expr {$lt: ['$missing', 'r']} matches {a: 1} with no index, with a
    non-sparse index, and unhinted with a sparse one; hinting the sparse index misses it."""
    db.c.insert_one({"a": 1})
    query = {"$expr": {"$lt": ["$missing", "r"]}}
    assert list(db.c.find(query, {"_id": 0})) == [{"a": 1}]
    create(db.c, spec({"missing": 1}))
    assert list(db.c.find(query, {"_id": 0})) == [{"a": 1}]
    db.c.drop_index("missing_1")
    create(db.c, spec({"missing": 1}, "missing_1_sparse", sparse=True))
    assert list(db.c.find(query, {"_id": 0})) == [{"a": 1}]
    assert list(db.c.find(query, {"_id": 0}).hint("missing_1_sparse")) == []


# --------------------------------------------------------------------------------------------------
# index_many2.js, indexa.js, indexb.js
# --------------------------------------------------------------------------------------------------

def test_index_limit_after_drops(db):
    """index_many2.js: 64 indexes in all; the 65th is 67; dropping one makes room for one; '*' leaves _id."""
    db.c.insert_one({"_id": 1, "x": 1})
    for i in range(2, 65):
        db.c.create_index(f"x{i}")
    assert len(names(db.c)) == 64
    create_fails(db.c, spec({"y": 1}), CANNOT_CREATE_INDEX)
    db.command("dropIndexes", "c", index={"x63": 1})
    assert len(names(db.c)) == 63
    db.c.create_index("z")
    assert len(names(db.c)) == 64
    db.command("dropIndexes", "c", index="*")
    assert names(db.c) == ["_id_"]


def test_unique_index_refuses_updates_to_a_taken_value(db):
    """indexa.js / indexb.js: a replacement or save that would duplicate a unique key fails and changes
    nothing, whether or not the document grows."""
    create(db.a, spec({"x": 1}, unique=True))
    db.a.insert_one({"x": "A"})
    db.a.insert_one({"x": "B"})
    with pytest.raises(DuplicateKeyError):
        db.a.insert_one({"x": "A"})
    assert db.a.count_documents({}) == 2
    with pytest.raises(DuplicateKeyError):
        db.a.replace_one({"x": "B"}, {"x": "A"})
    assert sorted(d["x"] for d in db.a.find()) == ["A", "B"]
    create(db.b, spec({"a": 1}, unique=True))
    db.b.insert_one({"a": 1})
    saved = {"a": 2}
    db.b.insert_one(saved)
    with pytest.raises(DuplicateKeyError):
        db.b.replace_one({"_id": saved["_id"]}, {"a": 1, "filler": "a" * 59})
    assert db.b.count_documents({}) == 2
    assert db.b.count_documents({"a": 1}) == 1 and db.b.count_documents({"a": 2}) == 1


_UDOC = st.fixed_dictionaries({}, optional={"k": st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["a", "b"]),
                                                           st.lists(st.integers(0, 3), max_size=2))})


def _unique_keys(doc: dict, sparse: bool) -> list | None:
    """The keys a document adds to a unique {k: 1} index: None for none (sparse, field missing); an array
    gives each distinct element ([] is undefined, a key of its own); missing and null are one key."""
    if "k" not in doc:
        return None if sparse else [("null",)]
    value = doc["k"]
    if isinstance(value, list):
        return [("undefined",)] if not value else sorted({("v", repr(v)) for v in value})
    return [("null",)] if value is None else [("v", repr(value))]


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(docs=st.lists(_UDOC, max_size=8), sparse=st.booleans())
def test_unique_index_admits_exactly_the_reference_model(db, docs, sparse):
    """index_sparse1.js / indexa.js, generalised: inserting documents one at a time into a collection with
    a unique (sparse) index on k admits exactly those whose keys no earlier admitted document holds
    (missing and null share a key unless sparse skips the missing); a hinted scan returns them all."""
    db.c.drop()
    create(db.c, spec({"k": 1}, unique=True, sparse=sparse))
    taken: set = set()
    admitted = []
    for i, doc in enumerate(docs):
        keys = _unique_keys(doc, sparse)
        expected = keys is None or not taken.intersection(keys)
        try:
            db.c.insert_one({"_id": i, **doc})
        except DuplicateKeyError:
            assert not expected, (doc, taken)
        else:
            assert expected, (doc, taken)
            admitted.append(i)
            taken.update(keys or [])
    assert ids(db.c.find()) == admitted
    in_index = [i for i in admitted if _unique_keys(docs[i], sparse) is not None]
    assert ids(db.c.find().hint("k_1")) == in_index


def test_unique_index_tells_an_empty_array_from_missing(db):
    """mongod keys an empty array as undefined, missing and null as null: a unique index holds both."""
    create(db.c, spec({"k": 1}, unique=True))
    db.c.insert_one({"_id": 1})
    db.c.insert_one({"_id": 2, "k": []})
    assert ids(db.c.find().hint("k_1")) == [1, 2]


# --------------------------------------------------------------------------------------------------
# other options mongod's validateIndexSpec / _isSpecOk accept or refuse
# --------------------------------------------------------------------------------------------------

def test_options_of_other_index_types_are_kept(db):
    """mongod accepts a text or 2d index's options on an ascending index (only 'weights' is refused there)
    and keeps them in the spec; a 2dsphere index keeps its version."""
    create(db.c, spec({"a": 1}, default_language="french", bits=26, min=-10, max=10))
    shown = index_spec(db.c, "a_1")
    assert (shown["default_language"], shown["bits"], shown["min"], shown["max"]) == ("french", 26, -10, 10)
    create(db.c, spec({"g": "2dsphere"}, language_override="lang"))
    assert index_spec(db.c, "g_2dsphere")["2dsphereIndexVersion"] == 3
    assert index_spec(db.c, "g_2dsphere")["language_override"] == "lang"


@pytest.mark.parametrize(("engine", "message"), [
    (5, '"storageEngine" options must be a document if present'),
    ({}, 'Empty "storageEngine" options are invalid. Please remove the field or include valid options.'),
], ids=["number", "empty"])
def test_storage_engine_option_shape(db, engine, message):
    """IndexCatalog::_isSpecOk: storageEngine must be a non-empty document."""
    error = create_fails(db.c, spec({"a": 1}, storageEngine=engine), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"] == message


def test_ttl_index_on_capped_collection_is_refused(db):
    """mongod 7.0 refuses TTL indexes on capped collections (before looking for conflicts)."""
    db.create_collection("capped", capped=True, size=4096)
    create(db.capped, spec({"t": 1}))
    error = create_fails(db.capped, spec({"t": 1}, expireAfterSeconds=10), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"] == "Cannot create TTL index on a capped collection"


# --------------------------------------------------------------------------------------------------
# values of other BSON types where a string or number is expected (no Python error may leak)
# --------------------------------------------------------------------------------------------------

def test_javascript_values_are_no_strings(db):
    """BSON javascript (pymongo's Code, a str subclass in Python) is no string: as a key value it is 67, as
    an index name 14, as dropIndexes' argument 14."""
    error = create_fails(db.c, spec({"a": Code("x")}, "k"), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"].endswith("Values in v:2 index key pattern cannot be of type javascript. Only "
                                            "numbers > 0, numbers < 0, and strings are allowed.")
    create_fails(db.c, {"key": {"a": 1}, "name": Code("k")}, TYPE_MISMATCH)
    db.c.insert_one({})
    fails(lambda: db.command("dropIndexes", "c", index=Code("a_1")), TYPE_MISMATCH)


@pytest.mark.parametrize(("size", "first"), [(float("nan"), 0), (float("inf"), 1), (Decimal128("NaN"), 0)], ids=str)
def test_list_indexes_batch_size_is_a_safe_long(db, size, first):
    """listIndexes' cursor.batchSize is read as mongod's safeNumberLong: NaN is 0, infinity the largest."""
    db.c.insert_one({})
    assert len(db.command("listIndexes", "c", cursor={"batchSize": size})["cursor"]["firstBatch"]) == first
    fails(lambda: db.command("listIndexes", "c", cursor={"batchSize": float("-inf")}), 51024)


def test_partial_filter_type_of_javascript_value(db):
    """A $type argument of BSON type javascript is 14 TypeMismatch, in a partial filter as in a find."""
    create_fails(db.c, spec({"x": 1}, partialFilterExpression={"a": {"$type": Code("x")}}), TYPE_MISMATCH)


def test_spec_errors_come_before_ttl_errors(db):
    """createIndexes parses every spec before it checks TTL options: a bad second spec wins over a bad
    TTL option in the first."""
    error = create_fails(db.c, spec({"a": 1}, expireAfterSeconds=-1), spec({"b": 0}), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"].endswith("Values in the index key pattern cannot be 0.")
    error = create_fails(db.c, spec({"a": 1}, expireAfterSeconds=-1), spec({"b": 1}), CANNOT_CREATE_INDEX)
    assert "cannot be less than 0" in error.details["errmsg"]


# --------------------------------------------------------------------------------------------------
# a second text index (index_signature.js's rules applied to text indexes)
# --------------------------------------------------------------------------------------------------

def test_second_text_index_on_other_fields_is_an_equivalent_index(db):
    """Every single text index has the key {_fts: 'text', _ftsx: 1}: another one under another name is
    the same signature with other options (85), before the one-text-index rule is looked at."""
    create(db.c, spec({"title": "text", "body": "text"}, "title_text_body_text", weights={"title": 10}))
    error = create_fails(db.c, spec({"other": "text"}, "other_text"), INDEX_OPTIONS_CONFLICT)
    assert error.details["errmsg"].startswith("An equivalent index already exists with a different name and options.")


def test_same_named_text_index_with_other_weights_is_85(db):
    create(db.c, spec({"a": "text"}, "t"))
    create_fails(db.c, spec({"a": "text"}, "t", weights={"a": 5}), INDEX_OPTIONS_CONFLICT)


def test_text_index_rules_that_hold(db):
    """The identical text index is "already exists"; a compound text index (another key pattern) next to
    a text index is 67, "only one text index per collection allowed"."""
    create(db.c, spec({"a": "text"}, "t"))
    assert create(db.c, spec({"a": "text"}, "t"))["note"] == "all indexes already exist"
    error = create_fails(db.c, spec({"x": 1, "b": "text"}, "xt"), CANNOT_CREATE_INDEX)
    assert error.details["errmsg"] == 'only one text index per collection allowed, found existing text index "t"'


# --------------------------------------------------------------------------------------------------
# index_bounds_maxkey.js, index_bounds_minkey.js, indexl.js, indexn.js, index_check3.js: indexed answers
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("bound", "docs", "counts"), [
    (MaxKey(), [{"a": MaxKey()}], {"$gt": 0, "$gte": 1, "$lt": 0, "$lte": 1}),
    (MaxKey(), [{"a": "string"}, {"a": {"b": 1}}, {}], {"$gt": 0, "$gte": 0, "$lt": 3, "$lte": 3}),
    (MinKey(), [{"a": MinKey()}], {"$gt": 0, "$gte": 1, "$lt": 0, "$lte": 1}),
    (MinKey(), [{"a": "string"}, {"a": {"b": 1}}, {}], {"$gt": 3, "$gte": 3, "$lt": 0, "$lte": 0}),
], ids=["maxkey-doc", "below-maxkey", "minkey-doc", "above-minkey"])
def test_min_and_max_key_bounds(db, bound, docs, counts):
    """index_bounds_maxkey.js / index_bounds_minkey.js: every value (missing too) is above MinKey and
    below MaxKey; the index answers with the counts of a collection scan."""
    create(db.c, spec({"a": 1}))
    db.c.insert_many(docs)
    for op, expected in counts.items():
        query = {"a": {op: bound}}
        assert len(list(db.c.find(query, {"a": 1, "_id": 0}))) == expected, op
        assert ids(db.c.find(query).hint("a_1")) == natural_ids(db.c, query), op


@pytest.mark.parametrize("indexed", [False, True])
def test_in_and_all_on_multikey_arrays(db, indexed):
    """indexl.js: nonoverlapping $in / $all on a multikey field, with and without an index."""
    if indexed:
        create(db.c, spec({"a": 1}))
    db.c.insert_one({"a": [1, 2]})
    for query in ({"$all": [1], "$in": [2]}, {"$all": [2], "$in": [1]}, {"$in": [2], "$all": [1]},
                  {"$in": [1], "$all": [2]}):
        assert db.c.count_documents({"a": query}) == 1, query
    db.c.insert_many([{"a": [3, 4]}, {"a": [2, 3]}, {"a": [1, 2, 3, 4]}])
    for query, expected in (({"$in": [2], "$all": [1]}, 2), ({"$in": [3], "$all": [1, 2]}, 1),
                            ({"$in": [1], "$all": [3]}, 1), ({"$in": [2, 3], "$all": [1]}, 2),
                            ({"$in": [4], "$all": [2, 3]}, 1), ({"$in": [1, 3], "$all": [2]}, 3)):
        assert db.c.count_documents({"a": query}) == expected, query


def test_impossible_ranges_with_indexes(db):
    """indexn.js: an empty range matches nothing, also in a conjunction or as one $or clause."""
    db.c.insert_one({"a": 1, "b": [1, 2]})
    create(db.c, spec({"a": 1}))
    create(db.c, spec({"b": 1}))
    assert db.c.count_documents({"a": {"$gt": 5, "$lt": 0}}) == 0
    assert db.c.count_documents({"a": {"$gt": 5, "$lt": 0}, "b": 2}) == 0
    assert db.c.count_documents({"a": {"$gt": 5, "$lt": 0}, "b": {"$gt": 0, "$lt": 5}}) == 0
    assert db.c.count_documents({"$or": [{"a": {"$gt": 5, "$lt": 0}}, {"a": 1}]}) == 1
    assert db.c.count_documents({"$or": [{"a": 1}, {"a": {"$gt": 5, "$lt": 0}}]}) == 1
    db.c.insert_one({"a": 2})
    assert db.c.count_documents({"$or": [{"a": 1}, {"a": {"$gt": 5, "$lt": 0}}, {"a": 2}]}) == 2


def test_ranges_stay_within_their_type(db):
    """index_check3.js: ranges compare within a type (no string below 2), with or without an index; a
    string range over missing values; MaxKey as an upper bound, in both sort orders."""
    db.c.insert_many([{"a": 1}, {"a": 2}, {"a": 3}, {"a": "z"}])
    for _ in range(2):
        assert len(list(db.c.find({"a": {"$lt": 2}}))) == 1
        assert len(list(db.c.find({"a": {"$gt": 2}}))) == 1
        create(db.c, spec({"a": 1}))
    db.d.insert_one({"i": "a"})
    db.d.insert_many([{} for _ in range(10)])
    create(db.d, spec({"i": 1}))
    assert db.d.count_documents({"i": {"$gte": "a"}}) == 1
    assert len(list(db.d.find({"i": {"$gte": "a"}}).sort("i", 1))) == 1
    db.d.insert_one({"i": "b"})
    assert len(list(db.d.find({"i": {"$gte": "a"}}))) == 2
    for direction in (1, -1):
        assert len(list(db.d.find({"i": {"$gte": "a", "$lt": MaxKey()}}).sort("i", direction))) == 2


# --------------------------------------------------------------------------------------------------
# indexr.js, indexs.js, index_check5.js: multikey compound indexes answer as collection scans do
# --------------------------------------------------------------------------------------------------

def test_parallel_nested_fields_of_a_multikey_index(db):
    """indexr.js: conditions on two fields of one array's elements may be met by different elements;
    with single-key and multikey compound indexes, in both directions and hinted."""
    query1, query2 = {"a.b": {"$gt": 2}, "a.c": {"$lt": 4}}, {"a": {"b": 3, "c": 6}, "a.c": {"$lt": 4}}
    db.c.insert_one({"a": [{"b": 3, "c": 6}, {"b": 1, "c": 1}]})
    assert db.c.count_documents(query1) == 1 and db.c.count_documents(query2) == 1
    db.c.delete_many({})
    create(db.c, spec({"a.b": 1, "a.c": 1}))
    create(db.c, spec({"a": 1, "a.c": 1}))
    assert db.c.count_documents(query1) == 0 and db.c.count_documents(query2) == 0
    db.c.insert_one({"a": {"b": 3, "c": 3}})
    assert db.c.count_documents(query1) == 1
    assert db.c.count_documents({"a": {"b": 3, "c": 3}, "a.c": {"$lt": 4}}) == 1
    db.c.delete_many({})
    db.c.insert_one({"a": [{"b": 3, "c": 6}, {"b": 1, "c": 1}]})
    assert db.c.count_documents(query1) == 1 and db.c.count_documents(query2) == 1
    assert len(list(db.c.find(query1).sort("a.b", -1))) == 1
    assert len(list(db.c.find(query2).sort("a", -1))) == 1
    assert len(list(db.c.find({"a.c": {"$lt": 4}}).hint([("a.b", 1), ("a.c", 1)]))) == 1
    assert len(list(db.c.find({"a.c": {"$lt": 4}}).hint([("a", 1), ("a.c", 1)]))) == 1


@pytest.mark.parametrize(("key", "doc"), [
    ({"a": 1}, {"a": [{"b": 3}]}), ({"a": 1, "a.b": 1}, {"a": {"b": 3}}), ({"a": 1, "a.b": 1}, {"a": [{"b": 3}]}),
], ids=str)
def test_parent_and_nested_field_in_one_index(db, key, doc):
    """indexs.js: an index on a field and its subfield finds the whole subdocument."""
    create(db.c, spec(key))
    db.c.insert_one(doc)
    assert db.c.count_documents({"a": {"b": 3}}) == 1


def test_compound_multikey_index_on_array_of_documents(db):
    """index_check5.js: two conditions met by different elements of 'scores' match, indexed or not."""
    db.c.insert_many([
        {"name": "Player1", "scores": [{"level": 1, "score": 100}, {"level": 2, "score": 50}], "total": 150},
        {"name": "Player2", "total": 90, "scores": [{"level": 1, "score": 90}, {"level": 2, "score": 0}]},
    ])
    query = {"scores.level": 2, "scores.score": {"$gt": 30}}
    assert len(list(db.c.find(query))) == 2
    create(db.c, spec({"scores.level": 1, "scores.score": 1}))
    assert len(list(db.c.find(query))) == 2
    assert ids(db.c.find(query).hint("scores.level_1_scores.score_1")) == natural_ids(db.c, query)
