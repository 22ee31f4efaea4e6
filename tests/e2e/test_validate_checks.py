"""validate checks what mongod 7.0's validate adaptor checks in each record:

- a document its collection's validator refuses (written with bypassDocumentValidation) is counted in
  ``nNonCompliantDocuments`` and reported once: a warning under validationAction "warn", an error that
  makes the collection invalid under "error" (validate_doc_schema.js);
- a time-series bucket is consistent: its ``_id``'s time is control.min's, control.version is 1 or 2,
  control and data name the same fields, the data are indexed "0", "1", ... with dates for the time,
  control.min/max are the data's min/max (the time's min rounded down) — a bucket that is not is
  non-compliant with one warning, and the collection stays valid (validate_timeseries_*.js);
- open buckets are records like stored ones: ``nrecords`` and ``keysPerIndex`` count every bucket.

Tidemark reported the shape of a bucket only, ignored validators, and left out buckets still in memory
(found by porting the jstests). The family: each corruption a direct write can make of a bucket, and
(Hypothesis) buckets Tidemark itself wrote from measurements of mixed types, nested objects and arrays,
strings under a collation, which must all be consistent, in memory and stored.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("validate", "create", "insert", "update")

T0 = dt.datetime(2024, 1, 1)
SCHEMA = "Detected one or more documents not compliant with the collection's schema. Check logs for log id 5363500."
BUCKETS = ("Detected one or more documents in this collection incompatible with time-series specifications. "
           "For more info, see logs with log id 6698300.")


@pytest.mark.parametrize("action", ["warn", "error"])
def test_documents_the_validator_refuses(db, action):
    db.create_collection("c", validator={"a": {"$exists": True}}, validationAction=action)
    db.command("insert", "c", documents=[{"a": 1}, {"b": 1}, {"c": 1}], bypassDocumentValidation=True)
    report = db.command("validate", "c")
    assert report["nNonCompliantDocuments"] == 2 and report["nrecords"] == 3
    if action == "warn":
        assert (report["valid"], report["warnings"], report["errors"]) == (True, [SCHEMA], [])
    else:
        assert (report["valid"], report["warnings"], report["errors"]) == (False, [], [SCHEMA])
    db.c.delete_many({"a": {"$exists": False}})
    report = db.command("validate", "c")
    assert (report["valid"], report["nNonCompliantDocuments"], report["warnings"], report["errors"]) == (True, 0, [], [])


def test_a_validator_at_level_off_refuses_nothing(db):
    db.create_collection("c", validator={"a": {"$exists": True}}, validationLevel="off")
    db.c.insert_one({"b": 1})
    report = db.command("validate", "c")
    assert (report["valid"], report["nNonCompliantDocuments"], report["warnings"]) == (True, 0, [])


def _measurements(n: int = 6) -> list[dict]:
    return [{"t": T0 + dt.timedelta(seconds=i), "m": i % 2, "v": i, "o": {"a": i, "b": "x"}, "arr": [i, -i]}
            for i in range(n)]


CORRUPTIONS = {
    "version": {"$set": {"control.version": 7}},
    "a field's min": {"$set": {"control.min.v": -1}},
    "a nested field's max": {"$set": {"control.max.o.a": 100}},
    "an array's max": {"$set": {"control.max.arr": [5, 1]}},
    "the time's min": {"$set": {"control.min.t": T0 + dt.timedelta(seconds=1)}},
    "the time's max": {"$set": {"control.max.t": T0 + dt.timedelta(seconds=9)}},
    "a data index out of range": {"$rename": {"data.v.1": "data.v.9"}},
    "a data field control lacks": {"$set": {"data.w": {"0": 1}}},
    "a time that is not a date": {"$set": {"data.t.1": 5}},
    "a gap in the time's indexes": {"$unset": {"data.t.1": ""}},
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_each_corruption_of_a_bucket_is_non_compliant(db, corruption):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(_measurements())
    assert db.system.buckets.ts.update_one({"meta": 0}, CORRUPTIONS[corruption]).modified_count == 1
    report = db.command("validate", "ts")
    assert (report["valid"], report["nNonCompliantDocuments"], report["warnings"], report["errors"]) == \
        (True, 1, [BUCKETS], [])
    assert report["nrecords"] == 2


def test_a_bucket_id_with_another_time_is_non_compliant(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(_measurements())
    bucket = db.system.buckets.ts.find_one({"meta": 0})
    db.system.buckets.ts.delete_one({"_id": bucket["_id"]})
    late = ObjectId.from_datetime(T0 + dt.timedelta(hours=5))
    db.system.buckets.ts.insert_one({**bucket, "_id": late})
    report = db.command("validate", "system.buckets.ts")
    assert (report["valid"], report["nNonCompliantDocuments"], report["warnings"]) == (True, 1, [BUCKETS])


def test_two_bad_buckets_warn_once(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(_measurements())
    db.system.buckets.ts.update_many({}, {"$set": {"control.min.v": -5}})
    report = db.command("validate", "ts")
    assert (report["nNonCompliantDocuments"], report["warnings"]) == (2, [BUCKETS])


def test_buckets_in_memory_are_records_too(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many(_measurements())  # two open buckets, not stored yet
    report = db.command("validate", "ts")
    assert (report["nrecords"], report["keysPerIndex"], report["nNonCompliantDocuments"]) == (2, {"m_1_t_1": 2}, 0)
    db.ts.insert_one({"t": T0, "m": 7})  # a third series
    assert db.command("validate", "ts")["nrecords"] == 3


SCALARS = st.one_of(
    st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1).map(Int64),
    st.floats(allow_nan=True), st.text(max_size=4), st.booleans(), st.none(),
    st.sampled_from([Decimal128("1.5"), Decimal128("-0"), Decimal128("NaN")]),
    st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2030, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)), max_leaves=6)
ROWS = st.lists(st.fixed_dictionaries({"m": st.sampled_from([0, 1, "x"]), "s": st.integers(0, 7200)},
                                      optional={"v": VALUES, "w": VALUES}), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=ROWS, collated=st.booleans())
def test_buckets_tidemark_writes_are_consistent(db, rows, collated):
    db.drop_collection("ts")
    options = {"collation": {"locale": "en", "strength": 2}} if collated else {}
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"}, **options)
    db.ts.insert_many([{**row, "t": T0 + dt.timedelta(seconds=row.pop("s"))} for row in rows])
    for _stored in (False, True):
        report = db.command("validate", "ts")
        assert (report["valid"], report["nNonCompliantDocuments"], report["warnings"]) == (True, 0, []), report
        assert report["nrecords"] == db.system.buckets.ts.count_documents({})
        db.system.buckets.ts.delete_many({"_id": "none"})  # a direct write stores every bucket


CONFLICTS = [
    ({"background": True, "full": True}, "both { background: true } and { full: true } is not supported."),
    ({"background": True, "enforceFastCount": True},
     "both { background: true } and { enforceFastCount: true } is not supported."),
    ({"background": 1, "repair": True}, "both { background: true } and { repair: true } is not supported."),
    ({"enforceFastCount": True, "repair": 1.0}, "both { enforceFastCount: true } and { repair: true } is not supported."),
    ({"metadata": True, "full": True}, "{ metadata: true } is not supported with any other options"),
    ({"metadata": 1, "background": True}, "{ metadata: true } is not supported with any other options"),
    ({"metadata": True, "enforceFastCount": True}, "{ metadata: true } is not supported with any other options"),
]


@pytest.mark.parametrize(("options", "message"), CONFLICTS)
def test_conflicting_options_are_refused_before_anything_is_read(db, options, message):
    """validate.cpp's option checks (72 InvalidOptions), before the collection is looked up."""
    db.c.insert_one({})
    for name in ("c", "missing"):
        with pytest.raises(OperationFailure) as refused:
            db.command({"validate": name, **options})
        assert (refused.value.code, refused.value.details["errmsg"]) == \
            (72, f"Running the validate command with {message}")


def test_compatible_options_validate(db):
    db.c.insert_one({})
    for options in ({"full": True}, {"background": True}, {"metadata": True}, {"full": True, "repair": False},
                    {"metadata": True, "full": False}):
        assert db.command({"validate": "c", **options})["valid"] is True
