"""What writes report to the profiler (mongod's OpDebug write metrics, profile_insert.js,
profile_update.js, profile_delete.js, profile_count.js): keysExamined / docsExamined / planSummary of
the scan a write statement ran, keysInserted / keysDeleted of the index entries it wrote, nMatched /
nModified / nUpserted / ndeleted / ninserted, and one profile entry per statement of an update or
delete. The pure parts in process (key differences, which updates touch an index, the entries the
profiler makes); the family end to end: each write kind over small random collections without an
index, with a single, a multikey or a unique index, with no match and with an upsert."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.collections import _key_changes, key_count
from tidemark.commands.crud import _canonical_path, _indexed_paths, _touches_indexes
from tidemark.profiler import Profiler, ReadFacts
from tidemark.query.update import parse_update

# --------------------------------------------------------------------------------------------------
# pure parts


_KEYS = st.dictionaries(st.sampled_from(["_id_", "a_1", "b_1"]),
                        st.lists(st.binary(min_size=1, max_size=2), max_size=4, unique=True), max_size=3)


@given(_KEYS, _KEYS)
def test_a_replacement_writes_the_difference_of_its_keys(old, new):
    new = {**{name: [] for name in old}, **new}  # one index list for both documents
    old = {**{name: [] for name in new}, **old}
    removed, added = _key_changes(old, new)
    for name in new:
        assert set(removed.get(name, ())) == set(old[name]) - set(new[name])
        assert set(added.get(name, ())) == set(new[name]) - set(old[name])
    assert key_count(added) == sum(len(set(new[n]) - set(old[n])) for n in new)
    assert key_count(removed) == sum(len(set(old[n]) - set(new[n])) for n in new)


INDEXES = [{"name": "_id_", "key": {"_id": 1}}, {"name": "a.b_1", "key": {"a.b": 1}}]


@pytest.mark.parametrize("update, touches", [
    ({"$set": {"c": 1}}, False),
    ({"$set": {"a": 1}}, True),  # a prefix of an indexed path
    ({"$set": {"a.b.c": 1}}, True),  # under an indexed path
    ({"$set": {"a.c": 1}}, False),
    ({"$set": {"a.0.b": 1}}, True),  # array positions are not part of the comparison
    ({"$inc": {"_id": 0}, "$set": {"c": 1}}, True),
    ({"$unset": {"a.b": ""}}, True),
    ({"$rename": {"c": "a.b"}}, True),
    ({"c": 1}, True),  # a replacement rewrites every index
    ([{"$set": {"c": 1}}], True),  # a pipeline too
])
def test_an_update_touches_an_index_when_it_writes_an_indexed_path(update, touches):
    assert _touches_indexes(parse_update(update), INDEXES) is touches


def test_wildcard_and_text_indexes_hold_every_path():
    assert _indexed_paths([{"name": "w", "key": {"$**": 1}}]) is None
    assert _indexed_paths([{"name": "t", "key": {"_fts": "text", "_ftsx": 1}}]) is None
    assert _indexed_paths([{"name": "p", "key": {"x": 1}, "partialFilterExpression": {"$and": [{"y": 1}]}}]) == [
        ("x",), ("y",)]
    assert _canonical_path("a.$[i].0.b.$") == ("a", "b")


def _entries(name: str, cmd: dict, reply: dict, statements: list[ReadFacts]) -> list[dict]:
    conn = SimpleNamespace(peer="127.0.0.1:5000", client=None, principal=None)
    return Profiler(100).statement_entries(conn, "db", name, {**cmd, "$db": "db"}, reply, 5.0, statements)


def _statement(i: int, writes: dict, plan=None) -> ReadFacts:
    facts = ReadFacts.statement_facts(i)
    facts.plan = plan
    facts.writes = writes
    return facts


def test_each_statement_is_an_entry_with_its_own_counters_in_mongods_order():
    cmd = {"update": "c", "updates": [{"q": {"a": i}, "u": {"$set": {"b": 1}}} for i in range(3)], "comment": "x"}
    plan = SimpleNamespace(kind="COLLSCAN", stage="COLLSCAN", provides_sort=False)
    statements = [_statement(0, {"nMatched": 1, "nModified": 1, "nUpserted": 0, "keysInserted": 2, "keysDeleted": 1},
                             plan),
                  _statement(1, {"keysInserted": 0}, plan)]  # failed: no n counters
    reply = {"ok": 1.0, "n": 1, "nModified": 1, "writeErrors": [{"index": 1, "code": 2, "errmsg": "bad"}]}
    first, second = _entries("update", cmd, reply, statements)
    assert first["op"] == "update" and first["command"] == {"q": {"a": 0}, "u": {"$set": {"b": 1}}, "multi": False,
                                                            "upsert": False, "comment": "x"}
    fields = [k for k in first if k in {"keysExamined", "docsExamined", "nMatched", "nModified", "nUpserted",
                                        "keysInserted", "keysDeleted", "numYield", "planSummary"}]
    assert fields == ["keysExamined", "docsExamined", "nMatched", "nModified", "nUpserted", "keysInserted",
                      "keysDeleted", "numYield", "planSummary"]
    assert "ok" not in first and "nMatched" not in second
    # a statement is no command and has no reply of its own (mongod's nested CurOp)
    assert "responseLength" not in first and "protocol" not in first and first["millis"] == 0
    assert (second["ok"], second["errCode"], second["errName"], second["errMsg"]) == (0, 2, "BadValue", "bad")
    assert second["command"]["q"] == {"a": 1}


def test_an_insert_reports_no_examined_counters():
    conn = SimpleNamespace(peer="127.0.0.1:5000", client=None, principal=None)
    entry = Profiler(100).entry(conn, "db", "insert", {"insert": "c", "documents": [{}], "$db": "db"},
                                {"ok": 1.0, "n": 1}, 1.0, ReadFacts(writes={"ninserted": 1, "keysInserted": 1}))
    assert (entry["ninserted"], entry["keysInserted"]) == (1, 1)
    assert "keysExamined" not in entry and "docsExamined" not in entry and "planSummary" not in entry


# --------------------------------------------------------------------------------------------------
# the family, end to end


def _index_keys(doc: dict, indexed: bool) -> set:
    """The index entries of ``doc``: its _id, and one per distinct value of ``a`` under {a: 1}."""
    keys = {("_id", doc["_id"])}
    if indexed:
        values = doc.get("a")
        keys |= {("a", v) for v in (values if isinstance(values, list) else [values])}
    return keys


def _latest(db, op: str) -> dict:
    return next(db.system.profile.find({"op": op, "ns": f"{db.name}.c"}).sort("$natural", -1).limit(1))


def _scan_counts(docs: list[dict], threshold: int, indexed: bool) -> tuple[int, int, str]:
    """keysExamined, docsExamined and planSummary of a scan for {a: {$gte: threshold}}."""
    if not indexed:
        return 0, len(docs), "COLLSCAN"
    entries = [(d["_id"], v) for d in docs for v in set(_values(d)) if v >= threshold]
    return len(entries), len({i for i, _ in entries}), "IXSCAN { a: 1 }"


def _values(doc: dict) -> list:
    a = doc["a"]
    return a if isinstance(a, list) else [a]


@st.composite
def collections(draw):
    kind = draw(st.sampled_from(["none", "single", "multikey", "unique"]))
    n = draw(st.integers(0, 6))
    if kind == "unique":
        values: list = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n, unique=True))
    elif kind == "multikey":
        values = [draw(st.one_of(st.integers(0, 9), st.lists(st.integers(0, 9), min_size=1, max_size=3)))
                  for _ in range(n)]
    else:
        values = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    return kind, [{"_id": i, "a": v} for i, v in enumerate(values)]


def _setup(db, kind: str, docs: list[dict]) -> bool:
    db.c.drop()
    db.command("profile", 0)
    db.system.profile.drop()
    db.create_collection("c")
    if kind != "none":
        db.c.create_index("a", unique=kind == "unique")
    if docs:
        db.c.insert_many(docs)
    db.command("profile", 2)
    return kind != "none"


FAMILY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAMILY
@given(collections(), st.lists(st.one_of(st.integers(10, 19), st.lists(st.integers(10, 19), min_size=1, max_size=3)),
                               min_size=1, max_size=4))
def test_an_insert_reports_the_keys_it_inserted(db, coll, values):
    kind, docs = coll
    indexed = _setup(db, kind, docs)
    if kind == "unique":
        values = [10 + i for i in range(len(values))]
    new = [{"_id": 100 + i, "a": v} for i, v in enumerate(values)]
    db.c.insert_many(new)
    entry = _latest(db, "insert")
    assert entry["ninserted"] == len(new)
    assert entry["keysInserted"] == sum(len(_index_keys(d, indexed)) for d in new)
    assert "keysExamined" not in entry and "keysDeleted" not in entry


@FAMILY
@given(collections(), st.integers(0, 10))
def test_a_delete_reports_what_it_examined_and_deleted(db, coll, threshold):
    kind, docs = coll
    indexed = _setup(db, kind, docs)
    db.c.delete_many({"a": {"$gte": threshold}})
    entry = _latest(db, "remove")
    gone = [d for d in docs if any(v >= threshold for v in _values(d))]
    keys, examined, plan = _scan_counts(docs, threshold, indexed)
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (keys, examined, plan)
    assert entry["ndeleted"] == len(gone)
    assert entry.get("keysDeleted") == (sum(len(_index_keys(d, indexed)) for d in gone) if gone else None)


@FAMILY
@given(collections(), st.integers(0, 10), st.sampled_from(["unindexed", "indexed", "upsert"]))
def test_an_update_reports_what_it_examined_and_wrote(db, coll, threshold, how):
    kind, docs = coll
    indexed = _setup(db, kind, docs)
    scalar = all(not isinstance(d["a"], list) for d in docs)
    if how == "indexed" and not scalar:
        how = "unindexed"
    update = {"$inc": {"a": 100}} if how == "indexed" else {"$set": {"b": 1}}
    query = {"a": {"$gte": threshold}} if how != "upsert" else {"a": 1000}
    db.c.update_many(query, update, upsert=how == "upsert")
    entry = _latest(db, "update")
    matched = [d for d in docs if any(v >= threshold for v in _values(d))] if how != "upsert" else []
    assert (entry["nMatched"], entry["nModified"], entry["nUpserted"]) == (
        len(matched), len(matched), int(how == "upsert"))
    if how == "upsert":
        assert entry["keysInserted"] == (2 if indexed else 1) and "keysDeleted" not in entry
        return
    keys, examined, plan = _scan_counts(docs, threshold, indexed)
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (keys, examined, plan)
    if how == "indexed" and indexed and matched:  # every matched document's key moves
        assert (entry["keysInserted"], entry["keysDeleted"]) == (len(matched), len(matched))
    else:  # nothing written, or no indexed path written: mongod sets no key counts
        assert "keysInserted" not in entry and "keysDeleted" not in entry


@FAMILY
@given(collections(), st.integers(0, 10))
def test_a_count_reports_its_plan_and_what_it_examined(db, coll, threshold):
    kind, docs = coll
    indexed = _setup(db, kind, docs)
    assert db.command("count", "c", query={"a": {"$gte": threshold}})["n"] == len(
        [d for d in docs if any(v >= threshold for v in _values(d))])
    entry = _latest(db, "command")
    keys, examined, plan = _scan_counts(docs, threshold, indexed)
    if indexed:  # the index alone answers: mongod's COUNT_SCAN reads each entry and the interval's end
        keys, examined, plan = keys + 1, 0, "COUNT_SCAN { a: 1 }"
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (keys, examined, plan)
    db.command("count", "c")
    entry = _latest(db, "command")
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (0, 0, "RECORD_STORE_FAST_COUNT")


@FAMILY
@given(collections(), st.lists(st.tuples(st.integers(0, 10), st.booleans()), min_size=1, max_size=4),
       st.booleans())
def test_each_statement_is_profiled_with_its_own_counters(db, coll, statements, delete):
    kind, docs = coll
    indexed = _setup(db, kind, docs)
    if delete:
        db.command({"delete": "c", "deletes": [{"q": {"a": t}, "limit": 0} for t, _ in statements]})
    else:
        db.command({"update": "c", "updates": [
            {"q": {"a": t}, "u": {"$set": {"b": t}}, "upsert": up, "multi": True} for t, up in statements]})
    op = "remove" if delete else "update"
    entries = list(db.system.profile.find({"op": op, "ns": f"{db.name}.c"}).sort("$natural", 1))
    assert [e["command"]["q"] for e in entries] == [{"a": t} for t, _ in statements]
    live = [dict(d) for d in docs]
    for entry, (t, up) in zip(entries, statements, strict=True):
        hit = [d for d in live if t in _values(d)]
        if delete:
            assert entry["ndeleted"] == len(hit)
            live = [d for d in live if d not in hit]
            continue
        modified = [d for d in hit if d.get("b") != t]
        upserted = int(up and not hit)
        assert (entry["nMatched"], entry["nModified"], entry["nUpserted"]) == (len(hit), len(modified), upserted)
        for d in hit:
            d["b"] = t
        if upserted:
            assert entry["keysInserted"] == (2 if indexed else 1)
            live.append({"_id": None, "a": t, "b": t})


# --------------------------------------------------------------------------------------------------
# findAndModify (profile_findandmodify.js): one entry, op "command", with the scan's counters up to the
# match it stopped at and the write counters of what it did


def _first_match(docs: list[dict], threshold: int, indexed: bool) -> tuple[dict | None, int, int]:
    """The document a findAndModify for {a: {$gte: threshold}} takes, and the keys and documents its
    scan examined to reach it (an index scan: the first entry in bounds; a collection scan: the
    records up to it, or all of them)."""
    if indexed:
        entries = sorted((v, d["_id"]) for d in docs for v in set(_values(d)) if v >= threshold)
        if not entries:
            return None, 0, 0
        return next(d for d in docs if d["_id"] == entries[0][1]), 1, 1
    for position, d in enumerate(docs, 1):
        if any(v >= threshold for v in _values(d)):
            return d, 0, position
    return None, 0, len(docs)


@FAMILY
@given(collections(), st.integers(0, 10), st.sampled_from(["unindexed", "indexed", "remove", "upsert"]))
def test_a_find_and_modify_reports_what_it_examined_and_wrote(db, coll, threshold, how):
    kind, docs = coll
    indexed = _setup(db, kind, docs)
    if how == "indexed" and any(isinstance(d["a"], list) for d in docs):
        how = "unindexed"
    query = {"a": {"$gte": threshold}} if how != "upsert" else {"a": 1000}
    if how == "remove":
        db.c.find_one_and_delete(query)
    else:
        db.c.find_one_and_update(query, {"$inc": {"a": 100}} if how == "indexed" else {"$set": {"b": 1}},
                                 upsert=how == "upsert")
    entry = _latest(db, "command")
    assert entry["command"]["findAndModify"] == "c"
    found, keys, examined = _first_match(docs, threshold if how != "upsert" else 1000, indexed)
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"]) == (
        keys, examined, "IXSCAN { a: 1 }" if indexed else "COLLSCAN")
    if how == "remove":
        assert entry["ndeleted"] == int(found is not None) and "nMatched" not in entry
        assert entry.get("keysDeleted") == (len(_index_keys(found, indexed)) if found else None)
        return
    assert (entry["nMatched"], entry["nModified"], entry["nUpserted"]) == (
        int(found is not None), int(found is not None), int(how == "upsert"))
    if how == "upsert":
        assert entry["keysInserted"] == (2 if indexed else 1) and "keysDeleted" not in entry
    elif how == "indexed" and indexed and found is not None:  # the matched document's key moves
        assert (entry["keysInserted"], entry["keysDeleted"]) == (1, 1)
    else:  # nothing written, or no indexed path written: mongod sets no key counts
        assert "keysInserted" not in entry and "keysDeleted" not in entry


def test_a_find_and_modify_reports_its_sort_and_a_missing_collection(db):
    _setup(db, "none", [{"_id": i, "a": i} for i in range(3)])
    assert db.c.find_one_and_update({"a": {"$gte": 0}}, {"$inc": {"b": 1}}, sort=[("a", 1)])["_id"] == 0
    entry = _latest(db, "command")
    assert entry["hasSortStage"] is True and entry["docsExamined"] == 3
    db.c.find_one_and_update({"_id": 2}, {"$inc": {"b": 1}}, sort=[("_id", 1)])
    assert "hasSortStage" not in _latest(db, "command")  # the _id index gives the sort
    assert db.missing.find_one_and_delete({"a": 1}) is None
    entry = next(db.system.profile.find({"ns": f"{db.name}.missing"}).sort("$natural", -1).limit(1))
    assert (entry["keysExamined"], entry["docsExamined"], entry["planSummary"], entry["ndeleted"]) == (0, 0, "EOF", 0)
