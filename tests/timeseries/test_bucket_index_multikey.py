"""Multikey buckets indexes: an index created on a time-series collection (on a meta subfield) is
flagged multikey as soon as a bucket expands an array under it — through the insert path (buckets
written in full by the committer) and through createIndex over existing buckets — like an index of a
regular collection, and explain's IXSCAN says ``isMultiKey``. A two-sided range on a multikey path
must not be intersected into one interval ({k: {$gt: 5, $lt: 8}} matches k: [1, 10]), so the
property test compares generated range, ``$elemMatch``, ``$in`` and equality filters (hinted and
not, sorted on the indexed field) on a regular and two time-series collections holding the same
documents."""

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("createIndexes", "find", "insert", "explain")

T0 = dt.datetime(2024, 1, 1)
INDEX = "tags.k_1"

# the values a meta subfield holds: scalars of a few types, arrays of them (nested arrays, empty
# arrays), sub-documents; a missing field too
scalars = st.one_of(st.integers(-3, 12), st.sampled_from([2.5, 6.5, float("inf")]), st.sampled_from(["a", "m"]),
                    st.none(), st.booleans())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.fixed_dictionaries({"a": inner})), max_leaves=5)
# numbers and arrays of numbers most of the time: where a two-sided range can straddle an array
metas = st.lists(st.one_of(st.integers(-1, 11), st.lists(st.integers(-1, 11), min_size=2, max_size=3), values,
                           st.just("absent")), min_size=1, max_size=10)

numbers = st.one_of(st.integers(-2, 12), st.sampled_from([5.5, 7.5]))


@st.composite
def ranges(draw) -> dict:
    """Two sides of a range ($gt/$gte below, $lt/$lte above; bounds drawn independently), now and
    then only one."""
    sides = draw(st.sampled_from(["both", "both", "both", "lower", "upper"]))
    ops: dict = {}
    if sides != "upper":
        ops[draw(st.sampled_from(["$gt", "$gte"]))] = draw(numbers)
    if sides != "lower":
        ops[draw(st.sampled_from(["$lt", "$lte"]))] = draw(numbers)
    return ops


predicates = st.one_of(
    ranges(),
    ranges().map(lambda r: {"$elemMatch": r}),
    st.lists(st.one_of(numbers, st.sampled_from(["a", None])), min_size=1, max_size=3).map(lambda v: {"$in": v}),
    values.map(lambda v: {"$eq": v}),
)


def _documents(meta_values: list) -> list[dict]:
    return [{"t": T0 + dt.timedelta(seconds=i), "tags": {} if v == "absent" else {"k": v}, "x": i}
            for i, v in enumerate(meta_values)]


def _load(db, meta_values: list) -> None:
    """``reg``: a regular collection; ``ts_after``: time-series, index created over existing buckets;
    ``ts_before``: time-series, index created first, its buckets then written in full by the write
    path (a second createIndex closes every bucket)."""
    for name in ("reg", "ts_after", "ts_before"):
        db.drop_collection(name)
    db.create_collection("reg")
    db.create_collection("ts_after", timeseries={"timeField": "t", "metaField": "tags"})
    db.create_collection("ts_before", timeseries={"timeField": "t", "metaField": "tags"})
    db.ts_before.create_index("tags.k")
    docs = _documents(meta_values)
    for name in ("reg", "ts_after", "ts_before"):
        db[name].insert_many([dict(d) for d in docs])
    db.reg.create_index("tags.k")
    db.ts_after.create_index("tags.k")
    db.ts_before.create_index("x")


def _answer(coll, flt: dict, hint: str | None, direction: int | None) -> list[int]:
    cursor = coll.find(flt, {"_id": 0, "x": 1})
    if hint is not None:
        cursor = cursor.hint(hint)
    if direction is not None:
        return [d["x"] for d in cursor.sort([("tags.k", direction), ("x", 1)])]
    return sorted(d["x"] for d in cursor)


def _ixscan_is_multikey(db, coll: str, flt: dict) -> bool:
    explain = db.command("explain", {"find": coll, "filter": flt, "hint": INDEX}, verbosity="queryPlanner")
    plan = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["stage"] == "IXSCAN", plan
    return plan["inputStage"]["isMultiKey"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(meta_values=metas, filters=st.lists(predicates, min_size=3, max_size=8),
       hint=st.sampled_from([None, INDEX]), direction=st.sampled_from([None, 1, -1]))
def test_time_series_answers_like_a_regular_collection_through_a_meta_subfield_index(
        db, meta_values, filters, hint, direction):
    _load(db, meta_values)
    for predicate in filters:
        flt = {"tags.k": predicate}
        expected = _answer(db.reg, flt, hint, direction)
        for name in ("ts_after", "ts_before"):
            assert _answer(db[name], flt, hint, direction) == expected, (name, flt, hint, direction)


@pytest.mark.parametrize("index_first", [False, True], ids=["createIndex-over-buckets", "write-path"])
def test_array_in_meta_subfield_flags_the_buckets_index_multikey(db, index_first):
    _load(db, [3, [1, 10], 6])
    name = "ts_before" if index_first else "ts_after"
    flt = {"tags.k": {"$gt": 5, "$lt": 8}}
    assert _ixscan_is_multikey(db, name, flt) is True
    assert _answer(db[name], flt, INDEX, None) == _answer(db.reg, flt, INDEX, None) == [1, 2]


@pytest.mark.parametrize("index_first", [False, True], ids=["createIndex-over-buckets", "write-path"])
def test_scalar_meta_subfield_leaves_the_buckets_index_not_multikey(db, index_first):
    _load(db, [3, 7, 6])
    name = "ts_before" if index_first else "ts_after"
    assert _ixscan_is_multikey(db, name, {"tags.k": {"$gt": 5, "$lt": 8}}) is False


def test_meta_update_to_an_array_flags_the_buckets_index_multikey(db):
    _load(db, [3, 7, 6])
    db.ts_after.update_many({"tags.k": 3}, {"$set": {"tags.k": [1, 10]}})
    flt = {"tags.k": {"$gt": 5, "$lt": 8}}
    assert _ixscan_is_multikey(db, "ts_after", flt) is True
    assert _answer(db.ts_after, flt, INDEX, None) == [0, 1, 2]


def test_bucket_inserted_into_the_buckets_collection_flags_its_index_multikey(db):
    _load(db, [3, 7, 6])
    bucket = db["system.buckets.ts_after"].find_one({"meta.k": 3})
    db["system.buckets.ts_after"].delete_one({"_id": bucket["_id"]})
    bucket["meta"]["k"] = [1, 10]
    db["system.buckets.ts_after"].insert_one(bucket)
    flt = {"tags.k": {"$gt": 5, "$lt": 8}}
    assert _ixscan_is_multikey(db, "ts_after", flt) is True
    assert _answer(db.ts_after, flt, INDEX, None) == [0, 1, 2]


@pytest.mark.slow
def test_buckets_rebuilt_by_recovery_flag_their_index_multikey(start_server):
    proc = start_server()
    with proc.client() as client:
        client.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "tags"})
        client.db.ts.create_index("tags.k")
        client.db.ts.insert_many(_documents([3, [1, 10], 6]))  # acknowledged: in the journal only
    proc.kill()
    proc.start()  # recovery writes the journaled buckets in full
    with proc.client() as client:
        flt = {"tags.k": {"$gt": 5, "$lt": 8}}
        assert _ixscan_is_multikey(client.db, "ts", flt) is True
        assert _answer(client.db.ts, flt, INDEX, None) == [1, 2]


def test_name_conflict_message_does_not_show_the_internal_multikey_flag(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "tags"})
    db.ts.insert_one({"t": T0, "tags": [1, 10], "x": 1})
    db.ts.create_index("x")  # the bucket is written in full: the default index on tags is now multikey
    with pytest.raises(OperationFailure) as info:
        db.ts.create_index("x", name="tags_1_t_1")
    assert info.value.code == 86
    assert "multikey" not in str(info.value) and "existing index: { v: 2, key: { meta: 1," in str(info.value)
