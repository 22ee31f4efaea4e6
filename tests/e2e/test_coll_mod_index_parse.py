"""collMod's ``index`` argument as mongod 7.0 parses and applies it (coll_mod.cpp's parseCollModRequest,
its strict CollModIndex IDL struct): one parse for regular and time-series collections
(``server/core/coll_mod_index.py``). Found by porting collMod_index_invalid_option.js, collmod.js,
collmod_convert_to_ttl.js and collmod_convert_index_uniqueness.js: an unknown field or a mistyped one
was accepted (and the TTL changed), ``index: {}`` and an index without a change answered ok, an
ambiguous key pattern changed the first match, a regular index could not become a TTL index, and a
``dryRun`` hid an index for real.
"""

from __future__ import annotations

import pytest
from bson import Decimal128, Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("collMod")

SAFE_BOOL = "[bool, long, int, decimal, double]"
SAFE_INT64 = "[long, int, decimal, double]"


def fails(db, cmd, code, message=None):
    with pytest.raises(OperationFailure) as info:
        db.command(cmd)
    assert info.value.code == code, info.value.details
    if message is not None:
        assert info.value.details["errmsg"] == message
    return info.value


def indexes(coll):
    return {spec["name"]: {k: v for k, v in spec.items() if k in ("expireAfterSeconds", "hidden")}
            for spec in coll.list_indexes()}


@pytest.fixture
def ttl(db):
    db.create_collection("c")
    db.c.create_index([("a", 1)], name="index1", expireAfterSeconds=50)
    return db.c


def test_unknown_index_field_is_refused_and_changes_nothing(db, ttl):
    """collMod_index_invalid_option.js."""
    fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "expireAfterSeconds": 200, "invalidOption": 1}},
          40415, "BSON field 'collMod.index.invalidOption' is an unknown field.")
    assert indexes(ttl)["index1"] == {"expireAfterSeconds": 50}


@pytest.mark.parametrize("index, code, message", [
    ({"keyPattern": "bad", "expireAfterSeconds": 100}, 14,
     "BSON field 'collMod.index.keyPattern' is the wrong type 'string', expected type 'object'"),
    ({"name": 2, "hidden": True}, 14, "BSON field 'collMod.index.name' is the wrong type 'int', expected type 'string'"),
    ({"keyPattern": {"a": 1}, "expireAfterSeconds": "100"}, 14,
     f"BSON field 'collMod.index.expireAfterSeconds' is the wrong type 'string', expected types '{SAFE_INT64}'"),
    ({"keyPattern": {"a": 1}, "hidden": "yes"}, 14,
     f"BSON field 'collMod.index.hidden' is the wrong type 'string', expected types '{SAFE_BOOL}'"),
    ({"keyPattern": {"a": 1}}, 72, "no expireAfterSeconds, hidden, unique, or prepareUnique field"),
    ({}, 72, "Must specify either index name or key pattern."),
    ({"keyPattern": {"a": 1}, "name": "index1", "expireAfterSeconds": 1}, 72,
     "Cannot specify both key pattern and name."),
    ({"keyPattern": {"a": 1}, "expireAfterSeconds": -1}, 72,
     "TTL index 'expireAfterSeconds' option cannot be less than 0"),
    ({"keyPattern": {"a": 1}, "expireAfterSeconds": Int64(2**31)}, 72,
     "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number"),
    ({"name": "index1", "unique": True, "forceNonUnique": True}, 72,
     "collMod does not support 'unique' and 'forceNonUnique' options at the same time"),
    ({"name": "nope", "hidden": True}, 27, None),
    ({"keyPattern": {"b": 1}, "hidden": True}, 27, None),
], ids=["keyPattern-string", "name-int", "ttl-string", "hidden-string", "no-change", "empty", "both",
        "ttl-negative", "ttl-too-large", "unique-and-force", "no-such-name", "no-such-key"])
def test_collmod_js_refusals(db, ttl, index, code, message):
    """collmod.js and collmod_convert_to_ttl.js: each refused, the index unchanged."""
    fails(db, {"collMod": "c", "index": index}, code, message)
    assert indexes(ttl)["index1"] == {"expireAfterSeconds": 50}


def test_safe_types_are_read_as_mongod_reads_them(db, ttl):
    """expireAfterSeconds is a safeInt64 (a double or decimal is truncated), hidden a safeBool (a number
    is its truth); null is absent."""
    reply = db.command({"collMod": "c", "index": {"name": "index1", "expireAfterSeconds": 70.9, "hidden": 1}})
    assert reply["expireAfterSeconds_new"] == 70 and reply["hidden_new"] is True
    reply = db.command({"collMod": "c", "index": {"name": "index1", "expireAfterSeconds": Decimal128("80"),
                                                  "hidden": 0, "unique": None}})
    assert reply["expireAfterSeconds_old"] == 70 and reply["expireAfterSeconds_new"] == 80
    assert reply["hidden_old"] is True and reply["hidden_new"] is False
    assert indexes(ttl)["index1"] == {"expireAfterSeconds": 80}


def test_ambiguous_key_pattern_is_refused(db):
    """collmod.js: two indexes on {a: 1} (another collation): a key pattern names neither (181), a name works."""
    db.create_collection("c")
    db.c.create_index([("a", 1)], name="TTL", expireAfterSeconds=60)
    db.c.create_index([("a", 1)], name="TTLfr", collation={"locale": "fr"}, expireAfterSeconds=120)
    error = fails(db, {"collMod": "c", "index": {"keyPattern": {"a": 1}, "expireAfterSeconds": 240}}, 181)
    assert error.details["codeName"] == "AmbiguousIndexKeyPattern"
    assert error.details["errmsg"].startswith("index keyPattern { a: 1 } matches 2 indexes, must use index name.")
    assert indexes(db.c)["TTL"] == {"expireAfterSeconds": 60} and indexes(db.c)["TTLfr"] == {"expireAfterSeconds": 120}
    reply = db.command({"collMod": "c", "index": {"name": "TTLfr", "expireAfterSeconds": 240}})
    assert (reply["expireAfterSeconds_old"], reply["expireAfterSeconds_new"]) == (120, 240)


def test_regular_index_becomes_a_ttl_index(db):
    """collmod_convert_to_ttl.js (5.1+): a single-field index gets a TTL (only expireAfterSeconds_new);
    a compound index or _id cannot."""
    db.create_collection("c")
    db.c.create_index([("a", 1)])
    db.c.create_index([("b", 1), ("c", 1)])
    reply = db.command({"collMod": "c", "index": {"keyPattern": {"a": 1}, "expireAfterSeconds": 100}})
    assert reply == {"expireAfterSeconds_new": 100, "ok": 1.0}
    assert indexes(db.c)["a_1"] == {"expireAfterSeconds": 100}
    fails(db, {"collMod": "c", "index": {"keyPattern": {"b": 1, "c": 1}, "expireAfterSeconds": 100}}, 72,
          "TTL indexes are single-field indexes, compound indexes do not support TTL")
    fails(db, {"collMod": "c", "index": {"name": "_id_", "expireAfterSeconds": 100}}, 72,
          "the _id field does not support TTL indexes")
    assert indexes(db.c)["b_1_c_1"] == {} and indexes(db.c)["_id_"] == {}


def test_dry_run_changes_nothing(db, ttl):
    """collmod_convert_index_uniqueness.js: a dry run checks only a conversion to unique; anything else
    is refused before it can change something."""
    fails(db, {"collMod": "c", "index": {"name": "index1", "hidden": True}, "dryRun": True}, 72,
          "dry run mode requires an index modification with unique: true.")
    fails(db, {"collMod": "c", "validationLevel": "off", "dryRun": True}, 72,
          "dry run mode requires an valid index modification.")
    assert indexes(ttl)["index1"] == {"expireAfterSeconds": 50}
    assert "validationLevel" not in db.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0][
        "options"]


def test_missing_collection(db):
    fails(db, {"collMod": "nothing", "index": {"name": "x", "hidden": True}}, 26, "ns does not exist")


# -- the family: generated index arguments, on a regular and on a time-series collection -------------

FIELDS = ["name", "keyPattern", "expireAfterSeconds", "hidden", "unique", "prepareUnique", "forceNonUnique", "bogus"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["index1", "x", "a_1"]),
                   st.just({"a": 1}), st.just({"b": 1}), st.just(2.5), st.just([1]))
SPECS = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=4)
NUMBER = (int, float)


def _model(spec: dict, timeseries: bool) -> int | None:
    """The code mongod 7.0 answers for ``index: spec`` (None: it applies), on collection ``c`` with the
    TTL index ``index1`` on {a: 1} (regular) or the index ``a_1`` on the meta field {a: 1} (time series)."""
    given = {}
    for field, value in spec.items():  # the IDL, in document order
        if field == "bogus":
            return 40415
        if value is None:
            continue
        if field == "name" and not isinstance(value, str) or field == "keyPattern" and not isinstance(value, dict):
            return 14
        if field == "expireAfterSeconds" and (isinstance(value, bool) or not isinstance(value, NUMBER)):
            return 14
        if field not in ("name", "keyPattern", "expireAfterSeconds") and not isinstance(value, (bool, *NUMBER)):
            return 14
        given[field] = value
    if "name" in given and "keyPattern" in given or "name" not in given and "keyPattern" not in given:
        return 72
    changes = [f for f in ("expireAfterSeconds", "hidden", "unique", "prepareUnique", "forceNonUnique") if f in given]
    if not changes:
        return 72
    if "unique" in given and "forceNonUnique" in given:
        return 72
    if timeseries:
        if "expireAfterSeconds" in given or {"unique", "prepareUnique", "forceNonUnique"} & set(given):
            return 72
    elif "expireAfterSeconds" in given and int(given["expireAfterSeconds"]) < 0:
        return 72
    target = "a_1" if timeseries else "index1"
    if "name" in given and given["name"] != target or "keyPattern" in given and given["keyPattern"] != {"a": 1}:
        return 27
    if not timeseries:  # index1 is neither unique nor prepared for it (coll_mod.cpp's order of checks)
        if "unique" in given:
            return 2 if not given["unique"] else 72  # "Cannot make index non-unique" / "... prepareUnique=false"
        if "forceNonUnique" in given and not given["forceNonUnique"]:
            return 2
        if given.get("prepareUnique") and len(changes) > 1:
            return 72  # "prepareUnique cannot be combined with any other modification."
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=SPECS, timeseries=st.booleans())
def test_coll_mod_index_family(db, spec, timeseries):
    """Any ``collMod.index`` answers the model's code and, when refused, changes nothing."""
    db.drop_collection("c")
    if timeseries:
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "a"})
        db.c.create_index([("a", 1)], name="a_1")
    else:
        db.create_collection("c")
        db.c.create_index([("a", 1)], name="index1", expireAfterSeconds=50)
    before = indexes(db.c)
    expected = _model(spec, timeseries)
    try:
        db.command({"collMod": "c", "index": spec})
    except OperationFailure as exc:
        assert exc.code == expected, (spec, timeseries, exc.details)
        assert indexes(db.c) == before
    else:
        assert expected is None, (spec, timeseries)
