"""The ``$sort`` right after a columnar ``$group`` is answered from the group keys (groupstate
``sorted_results``): the documents, their order (ties in first-seen group order) and their BSON types
are exactly those of the generic ``$group`` + ``$sort`` over the same buckets (forced by a no-op
``$skip: 0`` before the ``$group``), and the same groups as a regular collection holding the same
measurements. The metas make ties and BSON type order matter: equal hostnames under different metas,
strings of both cases, numbers, null, a missing hostname, an array (sorted by its least / greatest
element) and a sub-document."""

from __future__ import annotations

import datetime as dt

import bson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "insert", "create")

T0 = dt.datetime(2024, 3, 1)
METAS = [{"h": "a", "r": 1}, {"h": "b"}, {"h": "a", "r": 2}, {"h": "B", "r": 1}, {"h": 1, "r": 2},
         {"h": 2.5}, {"h": None, "r": 1}, {"r": 3}, {"h": ["x", "a"]}, {"h": {"z": 1}}, {"h": "é", "r": 2}]
TRUNC = {"$dateTrunc": {"date": "$t", "unit": "hour"}}
IDS = {
    "time": TRUNC,
    "time-host": {"t": TRUNC, "h": "$m.h"},
    "host-time": {"h": "$m.h", "t": TRUNC},
    "host": "$m.h",
    "host-region": {"h": "$m.h", "r": "$m.r"},
    "time-host-const": {"t": TRUNC, "h": "$m.h", "c": {"$literal": 1}},
}
SORT_PATHS = ["_id", "_id.t", "_id.h", "_id.r", "_id.c", "a"]


def _rows() -> list[dict]:
    rows = []
    for i in range(3 * 12):  # 3 hours, every 5 minutes, one row per meta (and one series without meta)
        for k, meta in enumerate(METAS):
            rows.append({"t": T0 + dt.timedelta(minutes=5 * i + k % 3), "m": meta, "v": float((i * 7 + k) % 23)})
        rows.append({"t": T0 + dt.timedelta(minutes=5 * i), "v": float(i % 5)})
    return rows


@pytest.fixture(scope="module")
def db(client):
    db = client["t_ts_columnar_sort"]
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = _rows()
    db.ts.insert_many(rows[: len(rows) // 2])
    db.ts.delete_many({"_id": "none"})  # the first half stored (closed buckets), the rest in memory
    db.ts.insert_many(rows[len(rows) // 2:])
    db.reg.insert_many(rows)
    yield db
    client.drop_database("t_ts_columnar_sort")


def _encoded(docs) -> list[bytes]:
    return [bson.encode(d) for d in docs]  # types and field order count


@st.composite
def _pipelines(draw):
    shape = draw(st.sampled_from(sorted(IDS)))
    paths = draw(st.lists(st.sampled_from(SORT_PATHS), min_size=1, max_size=3, unique=True))
    sort = {p: draw(st.sampled_from([1, -1])) for p in paths}
    start = draw(st.integers(0, 150))
    window = {"$gte": T0 + dt.timedelta(minutes=start), "$lt": T0 + dt.timedelta(minutes=start + draw(st.integers(1, 200)))}
    group = {"_id": IDS[shape], "a": {"$avg": "$v"}}
    if draw(st.booleans()):
        group.update(n={"$count": {}}, last={"$max": "$t"})
    pipeline = [{"$match": {"t": window}}, {"$group": group}, {"$sort": sort}]
    limit = draw(st.none() | st.integers(1, 6))
    return pipeline + ([{"$limit": limit}] if limit is not None else [])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pipeline=_pipelines())
def test_sort_after_a_columnar_group_equals_the_generic_sort(db, pipeline):
    columnar = list(db.ts.aggregate(pipeline))
    generic = list(db.ts.aggregate(pipeline[:1] + [{"$skip": 0}] + pipeline[1:]))
    assert _encoded(columnar) == _encoded(generic), pipeline
    if len(pipeline) == 3:  # no $limit: the same groups as the regular collection (their order may tie differently)
        regular = list(db.reg.aggregate(pipeline))
        assert sorted(_encoded(columnar)) == sorted(_encoded(regular)), pipeline


def test_the_tsbs_double_groupby_takes_the_columnar_group(db):
    pipeline = [{"$match": {"t": {"$gte": T0, "$lt": T0 + dt.timedelta(hours=3)}}},
                {"$group": {"_id": IDS["time-host"], "a": {"$avg": "$v"}}}, {"$sort": {"_id.t": 1, "_id.h": -1}}]
    explain = db.command("explain", {"aggregate": "ts", "pipeline": pipeline, "cursor": {}})
    assert "columnarGroup" in str(explain)
    docs = list(db.ts.aggregate(pipeline))
    keys = [(d["_id"]["t"], bson.encode({"h": d["_id"].get("h")})) for d in docs]
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)
    assert len(docs) == 3 * 10  # "a" under two metas, and a missing hostname under two, are one group each


VALUES = [0.0, -0.0, 1.0, -3.0, 0.5, 0.1, 0.2, 2.0**52 + 1, -(2.0**52), 7.0]


@st.composite
def _series(draw):
    """Rows of up to three series over two hours (times may go backwards inside a bucket), values
    drawn from signed zeros, fractions and magnitudes whose sums are not exact in every order."""
    rows = []
    for h in draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True)):
        minutes = draw(st.lists(st.integers(0, 119), min_size=1, max_size=30))
        for m in minutes:
            rows.append({"t": T0 + dt.timedelta(minutes=m), "m": {"h": h}, "v": draw(st.sampled_from(VALUES)),
                         "w": float(draw(st.integers(-5, 5)))})
    return rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_series(), cut=st.integers(0, 120), unit=st.sampled_from(["minute", "hour"]))
def test_columnar_group_values_and_order_equal_the_generic_group(client, rows, cut, unit):
    """Every accumulator over signed zeros, fractions and sums past 2**53, from stored buckets (their
    remembered whole-bucket runs on the second read) and a window cutting them: the same documents in
    the same first-seen order as the generic ``$group``, unsorted and sorted."""
    db = client["t_ts_columnar_values"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db.ts.insert_many(rows)
    db.ts.delete_many({"_id": "none"})  # closes the buckets: they are read as stored ones
    group = {"$group": {"_id": {"t": {"$dateTrunc": {"date": "$t", "unit": unit}}, "h": "$m.h"},
                        "mx": {"$max": "$v"}, "mn": {"$min": "$v"}, "s": {"$sum": "$v"}, "a": {"$avg": "$v"},
                        "f": {"$first": "$v"}, "l": {"$last": "$v"}, "n": {"$count": {}}, "sw": {"$sum": "$w"}}}
    for match in ({"$match": {"t": {"$gte": T0}}}, {"$match": {"t": {"$gte": T0 + dt.timedelta(minutes=cut)}}}):
        for tail in ([], [{"$sort": {"_id.h": -1, "_id.t": 1}}]):
            pipeline = [match, group, *tail]
            generic = _encoded(db.ts.aggregate([match, {"$skip": 0}, group, *tail]))
            for _ in range(2):  # the second read takes stored buckets from their remembered runs
                assert _encoded(db.ts.aggregate(pipeline)) == generic, pipeline


# hostnames whose order differs by case, accents, code points past the BMP and the empty string, and of
# several lengths (the BSON heads of the documents then differ in size)
HOSTS = ["", "a", "A", "b", "ab", "aé", "ae", "é", "z" * 9, "\U0001d11e", "\uffff", "host_1", "host_10", "host_2"]


@st.composite
def _string_hosts(draw):
    """Rows of up to 12 series whose hostnames are all strings, some equal under different metas (ties),
    over 4 hours: enough groups for the documents made straight as BSON (``groupstate.ENCODED_MIN``)."""
    hosts = draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=12))
    rows = []
    for k, h in enumerate(hosts):
        for m in sorted(draw(st.sets(st.integers(0, 239), min_size=1, max_size=8))):
            rows.append({"t": T0 + dt.timedelta(minutes=m), "m": {"h": h, "k": k}, "v": float(m % 7)})
    return rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_string_hosts(), first=st.sampled_from(["_id.h", "_id.t"]), dh=st.sampled_from([1, -1]),
       dt_=st.sampled_from([1, -1]), limit=st.none() | st.integers(1, 40))
def test_sort_by_string_hostnames_equals_the_generic_sort(client, rows, first, dh, dt_, limit):
    """Every hostname a string (ranked without the generic sort key): the same documents, order (ties in
    first-seen order) and BSON as the generic ``$group`` + ``$sort``, from stored buckets and again from
    their remembered runs."""
    db = client["t_ts_columnar_strings"]
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    db.ts.insert_many(rows)
    db.ts.delete_many({"_id": "none"})  # closes the buckets: they are read as stored ones
    sort = {"_id.h": dh, "_id.t": dt_} if first == "_id.h" else {"_id.t": dt_, "_id.h": dh}
    match = {"$match": {"t": {"$gte": T0}}}
    group = {"$group": {"_id": {"t": TRUNC, "h": "$m.h"},
                        "a": {"$avg": "$v"}}}
    tail = [{"$sort": sort}] + ([{"$limit": limit}] if limit is not None else [])
    generic = _encoded(db.ts.aggregate([match, {"$skip": 0}, group, *tail]))
    for _ in range(2):
        assert _encoded(db.ts.aggregate([match, group, *tail])) == generic, (sort, limit)
