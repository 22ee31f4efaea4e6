"""Control min/max under the collection's default collation (issue 25 item 14; mongod's
jstests/core/timeseries/nondefault_collation.js): a bucket's ``control.min``/``control.max`` of strings —
top-level and nested — are the minimum and maximum under the collection's default collation (of
collation-equal strings the first one stays), as mongod's bucket catalog computes them, also after a
delete rewrites the bucket; a read under another collation (the simple one) never prunes a bucket by
those strings, so it answers as a regular collection does."""

import datetime as dt

import pytest

INSENSITIVE = {"locale": "en_US", "strength": 1}  # case and diacritics ignored
NUMERIC = {"locale": "en_US", "numericOrdering": True}
SIMPLE = {"locale": "simple"}
T0 = dt.datetime(2024, 1, 1)


def _one_bucket(db, collation, values):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"}, collation=collation)
    db.create_collection("ref", collation=collation)
    docs = [{"_id": i, "t": T0 + dt.timedelta(seconds=i), "m": 1, "v": v, "o": {"s": v}} for i, v in enumerate(values)]
    db.ts.insert_many([dict(d) for d in docs])
    db.ref.insert_many([dict(d) for d in docs])
    buckets = list(db["system.buckets.ts"].find())
    assert len(buckets) == 1
    return buckets[0]["control"]


@pytest.mark.commands("insert", "find")
def test_strength_one_collation_orders_control_strings(db):
    control = _one_bucket(db, INSENSITIVE, ["b", "A", "á", "B", "a"])
    # under strength 1, "A" == "a" == "á" < "b" == "B"; the first of equals stays
    assert (control["min"]["v"], control["max"]["v"]) == ("A", "b")
    assert (control["min"]["o"], control["max"]["o"]) == ({"s": "A"}, {"s": "b"})


@pytest.mark.commands("insert", "find")
def test_numeric_collation_orders_control_strings(db):
    control = _one_bucket(db, NUMERIC, ["10", "5"])
    assert (control["min"]["v"], control["max"]["v"]) == ("5", "10")  # binary order would say "10", "5"


@pytest.mark.commands("insert", "find")
def test_simple_collection_keeps_binary_control_strings(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0, "m": 1, "v": v} for v in ["b", "A", "á", "B", "a"]])
    control = db["system.buckets.ts"].find_one()["control"]
    assert (control["min"]["v"], control["max"]["v"]) == ("A", "á")


@pytest.mark.commands("delete", "find")
def test_a_delete_that_rewrites_the_bucket_recomputes_control_under_the_collation(db):
    _one_bucket(db, INSENSITIVE, ["b", "A", "á", "B", "a"])
    db.ts.delete_many({"v": "b"}, collation=SIMPLE)  # removes only the exact "b"
    control = db["system.buckets.ts"].find_one()["control"]
    assert (control["min"]["v"], control["max"]["v"]) == ("A", "B")
    assert sorted(d["v"] for d in db.ts.find()) == ["A", "B", "a", "á"]


@pytest.mark.commands("find", "aggregate", "count")
@pytest.mark.parametrize(("collation", "values", "flt"), [
    (INSENSITIVE, ["a", "B"], {"v": {"$gt": "Z"}}),  # binary: "a" > "Z", though control.max is "B"
    (INSENSITIVE, ["a", "B"], {"v": {"$lt": "b"}}),
    (NUMERIC, ["10", "5"], {"v": {"$gt": "4"}}),  # binary: "5" > "4", though control.max is "10"
    (NUMERIC, ["10", "5"], {"v": {"$in": ["5", "x"]}}),
    (NUMERIC, ["10", "5"], {"v": {"$lt": "2"}, "t": {"$gte": T0}}),  # binary: "10" < "2", control.min "5"
])
def test_reads_under_another_collation_answer_as_a_regular_collection(db, collation, values, flt):
    _one_bucket(db, collation, values)
    for read in (SIMPLE, None):
        kw = {"collation": read} if read else {}
        expected = sorted(d["_id"] for d in db.ref.find(flt, **kw))
        assert sorted(d["_id"] for d in db.ts.find(flt, **kw)) == expected
        assert db.ts.count_documents(flt, **kw) == len(expected)
        assert sorted(d["_id"] for d in db.ts.aggregate([{"$match": flt}], **kw)) == expected
    assert sorted(d["_id"] for d in db.ts.find(flt, collation=SIMPLE))  # each filter matches under simple
