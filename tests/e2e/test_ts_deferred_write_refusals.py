"""A time-series insert is acknowledged before its bucket document is written in full (close,
checkpoint, restart), so whatever that later write would refuse must be refused at insert: parallel arrays
under a compound meta index, an invalid geometry under a 2dsphere meta index, an array under a hashed
meta index (a long meta or measurement is not refused: index keys have no size limit, as in mongod since
4.2). The property: after inserts of generated documents into generated collections, a SIGKILL and a
restart, the server starts, every acknowledged measurement reads back, and every refused one got a
MongoDB error code (never 1 InternalError) and stored nothing.

A store written before these checks existed may still hold such a journaled bucket: recovery then moves
its measurements to ``<db>.tidemark.quarantine.<coll>`` and still starts (the last test forges one)."""

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError

pytestmark = pytest.mark.commands("insert", "find", "createIndexes", "getLog")

T0 = dt.datetime(2024, 1, 1)

# index specs a time-series collection accepts (metaField "m"; measurement fields "v", "loc")
INDEXES = [
    [("m.a", 1)], [("m.a", 1), ("m.b", 1)], [("m", 1)], [("m.loc", "2dsphere")], [("m.a", "hashed")],
    [("v", 1)], [("m.a", 1), ("v", -1)], [("loc", "2dsphere")],
]

long_text = st.integers(100, 700).map(lambda n: "x" * n)
scalars = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "\x00nul"]), long_text, st.none(), st.booleans())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.fixed_dictionaries({"a": inner})),
                      max_leaves=4)
points = st.one_of(st.just({"type": "Point", "coordinates": [10, 20]}),
                   st.just({"type": "Point", "coordinates": [500, 500]}), st.just([1, 2]), st.just("nowhere"))
metas = st.one_of(scalars, st.fixed_dictionaries({"a": values}, optional={"b": values, "loc": points}))


@st.composite
def measurements(draw, n):
    docs = []
    for i in range(n):
        doc = {"_id": i, "t": T0 + dt.timedelta(seconds=draw(st.integers(0, 7200)))}
        if draw(st.booleans()):
            doc["m"] = draw(metas)
        if draw(st.booleans()):
            doc["v"] = draw(st.one_of(scalars, long_text))
        if draw(st.integers(0, 3)) == 0:
            doc["loc"] = draw(points)
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    from harness import ServerProcess

    proc = ServerProcess(tmp_path_factory.mktemp("refusals") / "db").start()
    yield proc
    proc.kill()


def _insert(coll, docs: list[dict]) -> tuple[set, dict]:
    """(acknowledged _ids, {refused _id: code}) of an unordered insert."""
    try:
        coll.insert_many(docs, ordered=False)
        return {d["_id"] for d in docs}, {}
    except BulkWriteError as e:
        refused = {docs[err["index"]]["_id"]: err["code"] for err in e.details["writeErrors"]}
        return {d["_id"] for d in docs} - set(refused), refused


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(with_meta=st.booleans(), indexes=st.lists(st.sampled_from(INDEXES), max_size=3, unique_by=repr),
       data=st.data())
def test_acknowledged_measurements_survive_a_crash_and_refused_ones_store_nothing(shared_server, with_meta, indexes,
                                                                                 data):
    proc = shared_server
    options = {"timeField": "t", "metaField": "m"} if with_meta else {"timeField": "t"}
    with proc.client() as client:
        client.drop_database("refusals")
        db = client.refusals
        db.create_collection("ts", timeseries=options)
        for spec in indexes:
            if not with_meta and any(f.startswith("m") for f, _ in spec):
                continue
            db.ts.create_index(spec)
        docs = data.draw(measurements(data.draw(st.integers(1, 12))))
        acked, refused = _insert(db.ts, docs)
        acked2, refused2 = _insert(db.ts, [dict(d, _id=100 + d["_id"]) for d in docs])  # the buckets exist now
        acked |= acked2
        refused |= refused2
    assert all(code not in (1, 8, 17280) for code in refused.values()), refused
    proc.kill()
    proc.start()
    with proc.client() as client:
        found = {d["_id"] for d in client.refusals.ts.find({}, {"_id": 1})}
        assert found == acked, (sorted(found - acked), sorted(acked - found), refused)
        assert "tidemark.quarantine.ts" not in client.refusals.list_collection_names()


def test_parallel_arrays_under_a_compound_meta_index_are_refused_at_insert(db):
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.create_index([("m.a", 1), ("m.b", 1)])
    docs = [{"t": T0, "m": {"a": [1, 2], "b": 3}, "v": 1}, {"t": T0, "m": {"a": [1, 2], "b": [3, 4]}, "v": 2},
            {"t": T0, "m": "x" * 600, "v": 3}]
    with pytest.raises(BulkWriteError) as info:
        db.ts.insert_many(docs, ordered=False)
    assert [(e["index"], e["code"]) for e in info.value.details["writeErrors"]] == [(1, 171)]
    assert sorted(d["v"] for d in db.ts.find()) == [1, 3]


@pytest.mark.slow
def test_recovery_quarantines_a_journaled_bucket_its_indexes_refuse_and_still_starts(start_server):
    """Forge the store of an older version: the insert-time checks off (``measurement_rules`` patched in a
    launcher), parallel arrays under a compound meta index journaled, SIGKILL; then start the real server on it."""
    from harness.server import patched

    proc = start_server()
    proc.kill()
    old = patched(proc, "import tidemark.commands.timeseries_insert as ti\n"
                        "ti.measurement_rules = lambda *a, **k: None", "old")
    old.start()
    try:
        with old.client() as client:
            client.q.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
            client.q.ts.create_index([("m.a", 1), ("m.b", 1)])
            client.q.ts.insert_many([{"t": T0, "m": "ok", "v": 1}, {"t": T0, "m": {"a": [1], "b": [2, 3]}, "v": 2}])
    finally:
        old.kill()
    proc.start()
    with proc.client() as client:
        assert [d["v"] for d in client.q.ts.find()] == [1]
        quarantined = list(client.q["tidemark.quarantine.ts"].find())
        assert len(quarantined) == 1 and quarantined[0]["error"]["code"] == 171
        assert [m["v"] for m in quarantined[0]["measurements"]] == [2]
        assert quarantined[0]["measurements"][0]["m"] == {"a": [1], "b": [2, 3]}
        warnings = client.admin.command("getLog", "startupWarnings")["log"]
        assert any("tidemark.quarantine.ts" in line for line in warnings)
