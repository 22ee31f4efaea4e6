"""An update or delete of some series of a time-series collection settles only the in-memory buckets it
may change.

mongod marks only the buckets a write touches (bucket_catalog directWriteStart per bucket id). Tidemark
wrote every in-memory bucket of the collection in full first: with 100,000 series in memory, an update
of one series' meta took 62 s (12 s of CPU, the event loop held 2.7 s at a time) and the next insert of
every other series reopened its bucket from storage (103 s for the next round instead of 3.7). Now a
statement whose filter requires meta points (an equality or ``$in`` on the meta or a meta subfield)
settles the buckets holding them; any other statement, a collation, or a collection default collation
still settles every bucket. What holds, as a family: the documents left are those a regular collection
holding the same measurements is left with, and the untouched series keep their buckets in memory (their
next measurements join them: no bucket opened or reopened)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("update", "delete", "insert", "collStats")

T0 = dt.datetime(2024, 1, 1)
SERIES = 12

FILTERS = st.one_of(
    st.builds(lambda k: {"m.host": f"h{k}"}, st.integers(0, SERIES - 1)),
    st.builds(lambda ks: {"m.host": {"$in": [f"h{k}" for k in ks]}}, st.lists(st.integers(0, SERIES - 1), max_size=3)),
    st.builds(lambda k: {"m": {"host": f"h{k}", "dc": "x"}}, st.integers(0, SERIES - 1)),
    st.builds(lambda k, v: {"m.host": f"h{k}", "v": {"$gte": v}}, st.integers(0, SERIES - 1), st.integers(0, 3)),
    st.builds(lambda v: {"v": {"$lt": v}}, st.integers(0, 3)),  # no meta point: every bucket settles
)


def _docs(round_: int) -> list[dict]:
    return [{"t": T0 + dt.timedelta(minutes=round_), "m": {"dc": "x", "host": f"h{k}"}, "v": round_ + k % 3}
            for k in range(SERIES)]


def _stats(db) -> dict:
    return db.command("collStats", "ts")["timeseries"]


def _left(coll) -> list:
    return sorted((d["t"], d["m"]["host"], d["v"]) for d in coll.find({}, {"_id": 0}))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=FILTERS, kind=st.sampled_from(["deleteMany", "updateMany"]))
def test_a_write_settles_only_the_buckets_of_the_series_it_names(client, flt, kind):
    db = client.ts_settles_touched
    client.drop_database(db.name)
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "hours"})
    for coll in (db.ts, db.reg):
        coll.insert_many(_docs(0))
        coll.insert_many(_docs(1))
    before = _stats(db)
    if kind == "deleteMany":
        results = [coll.delete_many(flt).deleted_count for coll in (db.ts, db.reg)]
    else:
        meta_only = {k: v for k, v in flt.items() if k.startswith("m")}
        if not meta_only:
            return
        update = {"$set": {"m.dc": "y"}}
        results = [coll.update_many(meta_only, update).modified_count for coll in (db.ts, db.reg)]
        flt = meta_only
    assert results[0] == results[1]
    assert _left(db.ts) == _left(db.reg)
    # the series the filter names: which ones
    hosts: set[str] | None
    if "v" in flt and len(flt) == 1:
        hosts = None  # no meta point: every series' bucket was written out
    elif "m" in flt:
        hosts = {flt["m"]["host"]}
    elif isinstance(flt["m.host"], dict):
        hosts = set(flt["m.host"]["$in"])
    else:
        hosts = {flt["m.host"]}
    # another measurement of every series that has measurements left
    present = {d["m"]["host"] for d in db.reg.find({}, {"m": 1})}
    for coll in (db.ts, db.reg):
        coll.insert_many([d for d in _docs(2) if d["m"]["host"] in present])
    assert _left(db.ts) == _left(db.reg)
    after = _stats(db)
    reopened = after["numBucketsReopened"] - before["numBucketsReopened"]
    if hosts is None:
        assert reopened == len(present), (flt, reopened)  # every series continues its stored bucket
    else:
        # only the touched series continue a stored bucket; the others' stayed in memory
        assert reopened <= len(present & hosts), (flt, reopened, present - hosts)
