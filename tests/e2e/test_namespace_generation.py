"""A namespace resolution reused across commands while the catalog generation stays the same
(``tidemark.core.namespace.resolve``, storage's ``Engine.catalog_generation``): the command after any
DDL — a view created, redefined or dropped, a collection created, renamed or dropped, an index created
or dropped — answers from the new catalog. A Hypothesis sequence of DDL interleaved with reads is
compared to a model of the catalog."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

_COUNTER = itertools.count()


def _reads(coll, hint=None) -> tuple[list, list]:
    """(find's ids, aggregate's ids). The aggregate first: a find re-resolves the name in its own read
    snapshot (and remembers that), so an aggregate after it would not see a stale resolution."""
    kw = {"hint": hint} if hint else {}
    aggregated = sorted(d["_id"] for d in coll.aggregate([{"$match": {}}], **kw))
    return sorted(d["_id"] for d in coll.find({}, **kw)), aggregated


def test_an_index_created_or_dropped_is_seen_by_the_next_hint(db):
    db.c.insert_many([{"_id": i, "x": i} for i in range(3)])
    for _ in range(2):
        with pytest.raises(OperationFailure) as err:
            _reads(db.c, "x_1")
        assert err.value.code == 2
        db.c.create_index("x")
        assert _reads(db.c, "x_1") == ([0, 1, 2], [0, 1, 2])
        db.c.drop_index("x_1")


def test_a_view_created_between_requests_and_a_rename(db):
    db.a.insert_one({"_id": "a0", "x": 0})
    assert _reads(db.v) == ([], [])  # missing: resolved (and remembered) as missing
    db.command("create", "v", viewOn="a", pipeline=[])
    assert _reads(db.v) == (["a0"], ["a0"])
    db.a.rename("b")
    assert _reads(db.v) == ([], [])  # its viewOn is gone
    db.b.rename("a")
    assert _reads(db.v) == (["a0"], ["a0"])


def test_a_view_redefined_between_requests(db):
    db.a.insert_many([{"_id": i, "x": i} for i in range(4)])
    db.command("create", "v", viewOn="a", pipeline=[{"$match": {"x": {"$gte": 1}}}])
    assert _reads(db.v) == ([1, 2, 3], [1, 2, 3])
    db.command("collMod", "v", viewOn="a", pipeline=[{"$match": {"x": {"$gte": 3}}}])
    assert _reads(db.v) == ([3], [3])
    db.v.drop()
    assert _reads(db.v) == ([], [])


def test_a_time_series_collection_dropped_and_recreated(db):
    import datetime as dt

    for meta in ("m", "tag"):
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": meta})
        db.ts.insert_one({"t": dt.datetime(2024, 1, 1), meta: 1, "v": 1})
        assert [d[meta] for d in db.ts.aggregate([{"$match": {meta: 1}}])] == [1]
        db.ts.drop()


NAMES = ("a", "b", "v")
OPS = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(NAMES)),
    st.tuples(st.just("view"), st.sampled_from(NAMES), st.sampled_from(NAMES), st.integers(0, 3)),
    st.tuples(st.just("collMod"), st.sampled_from(NAMES), st.sampled_from(NAMES), st.integers(0, 3)),
    st.tuples(st.just("drop"), st.sampled_from(NAMES)),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
    st.tuples(st.just("index"), st.sampled_from(NAMES)),
    st.tuples(st.just("dropIndex"), st.sampled_from(NAMES)),
    st.tuples(st.just("read"), st.sampled_from(NAMES)),
)


def _model_read(model: dict, name: str, depth: int = 0) -> list:
    entry = model.get(name)
    if entry is None:
        return []
    if entry[0] == "coll":
        return sorted(doc_id for doc_id, _ in entry[1])
    _, on, k = entry
    base = model.get(on)
    if base is None:
        return []
    if base[0] == "view":
        rows = set(_model_read(model, on, depth + 1))
        return sorted(i for i in rows if _x_of(model, i) >= k)
    return sorted(doc_id for doc_id, x in base[1] if x >= k)


def _x_of(model: dict, doc_id: str) -> int:
    for entry in model.values():
        if entry[0] == "coll":
            for i, x in entry[1]:
                if i == doc_id:
                    return x
    raise AssertionError(doc_id)


def _refers_to(model: dict, target: str, start: str) -> bool:
    """``start`` is ``target`` or a view whose chain reaches it (a view on it would make a cycle)."""
    name = start
    for _ in range(len(NAMES) + 1):
        if name == target:
            return True
        entry = model.get(name)
        if entry is None or entry[0] != "view":
            return False
        name = entry[1]
    return True


def _check(db, model: dict, name: str, context) -> None:
    expected = _model_read(model, name)
    assert _reads(db[name]) == (expected, expected), context
    entry = model.get(name)
    if entry is not None and entry[0] == "coll":
        if entry[2]:
            assert _reads(db[name], "x_1") == (expected, expected), context
        else:
            with pytest.raises(OperationFailure) as err:
                _reads(db[name], "x_1")
            assert err.value.code == 2, context


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=1, max_size=25))
def test_ddl_interleaved_with_reads_matches_a_model(client, ops):
    db = client[f"nsgen_{next(_COUNTER)}"]
    model: dict[str, tuple] = {}  # name -> ("coll", [(id, x)], indexed) | ("view", viewOn, k)
    try:
        for op in ops:
            kind, name = op[0], op[1]
            entry = model.get(name)
            if kind == "insert" and (entry is None or entry[0] == "coll"):
                n = next(_COUNTER)
                db[name].insert_one({"_id": f"{name}{n}", "x": n % 4})
                docs = (entry[1] if entry else []) + [(f"{name}{n}", n % 4)]
                model[name] = ("coll", docs, entry[2] if entry else False)
            elif kind == "view" and entry is None and not _refers_to(model, name, op[2]):
                db.command("create", name, viewOn=op[2], pipeline=[{"$match": {"x": {"$gte": op[3]}}}])
                model[name] = ("view", op[2], op[3])
            elif kind == "collMod" and entry is not None and entry[0] == "view" \
                    and not _refers_to(model, name, op[2]):
                db.command("collMod", name, viewOn=op[2], pipeline=[{"$match": {"x": {"$gte": op[3]}}}])
                model[name] = ("view", op[2], op[3])
            elif kind == "drop":
                db.drop_collection(name)
                model.pop(name, None)
            elif kind == "rename" and entry is not None and entry[0] == "coll" and op[2] not in model:
                db[name].rename(op[2])
                model[op[2]] = model.pop(name)
            elif kind == "index" and entry is not None and entry[0] == "coll" and not entry[2]:
                db[name].create_index("x")
                model[name] = ("coll", entry[1], True)
            elif kind == "dropIndex" and entry is not None and entry[0] == "coll" and entry[2]:
                db[name].drop_index("x_1")
                model[name] = ("coll", entry[1], False)
            # every name read after every step: each resolution is remembered before the next DDL
            for read in NAMES if kind != "read" else (name,):
                _check(db, model, read, (op, model))
    finally:
        client.drop_database(db.name)
