"""What each batch of a find examined (profile_getmore.js, mongod's per-operation keysExamined /
docsExamined): a batch reports the index keys and documents it consumed, not what the scan read ahead
(index and record streams read in chunks); a full batch stops at its last document, so what the scan
meets after it is the next batch's (an empty last batch's, when nothing more matches). End to end, over small random collections, index specs, filters, sorts and
batch sizes: the batches of a cursor add up to what one unbatched find examines, and under a model of
the scan (a collection scan in record order, an index scan in key order) each batch's counts are its
own."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FAMILY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_TAGS = itertools.count()

INDEXES = {"none": None, "a": [("a", 1)], "a_desc": [("a", -1)], "ab": [("a", 1), ("b", 1)], "b": [("b", 1)]}


@st.composite
def collections(draw):
    n = draw(st.integers(0, 12))
    multikey = draw(st.booleans())
    docs = []
    for i in range(n):
        a = draw(st.lists(st.integers(0, 9), min_size=1, max_size=3) if multikey and draw(st.booleans())
                 else st.integers(0, 9))
        docs.append({"_id": i, "a": a, "b": draw(st.integers(0, 2))})
    return docs


def _setup(db, docs: list[dict], index: str) -> None:
    db.command("profile", 0)
    db.c.drop()
    db.system.profile.drop()
    db.create_collection("c")
    if INDEXES[index] is not None:
        db.c.create_index(INDEXES[index])
    if docs:
        db.c.insert_many(docs)
    db.command("profile", 2)


def _batches(db, flt: dict, sort: list | None, batch_size: int) -> tuple[list, list[tuple[int, int, int]]]:
    """The documents of a find drawn ``batch_size`` at a time, and each batch's (nreturned, keysExamined,
    docsExamined) from its profile entry (the find's, then its getMores', in order)."""
    tag = f"batches-{next(_TAGS)}"
    cursor = db.c.find(flt).comment(tag).batch_size(batch_size)
    if sort:
        cursor = cursor.sort(sort)
    docs = list(cursor)
    entries = list(db.system.profile.find({"command.comment": tag}).sort("$natural", 1))
    assert [e["op"] for e in entries] == ["query"] + ["getmore"] * (len(entries) - 1)
    assert entries[-1].get("cursorExhausted") is True
    return docs, [(e["nreturned"], e["keysExamined"], e["docsExamined"]) for e in entries]


FILTERS = st.sampled_from([
    lambda t: {},
    lambda t: {"a": {"$gte": t}},
    lambda t: {"a": {"$gte": t}, "b": {"$lt": 2}},
    lambda t: {"b": t % 3},
    lambda t: {"a": {"$in": [t, t + 1, 9 - t]}},
    lambda t: {"$or": [{"a": t}, {"b": 1}]},
])


@FAMILY
@given(collections(), st.sampled_from(sorted(INDEXES)), FILTERS, st.integers(0, 9),
       st.sampled_from([None, [("a", 1)], [("_id", -1)]]), st.integers(1, 5))
def test_the_batches_of_a_cursor_add_up_to_one_unbatched_find(db, docs, index, make_filter, t, sort, batch_size):
    _setup(db, docs, index)
    flt = make_filter(t)
    whole, [(returned, keys, examined)] = _batches(db, flt, sort, 1000)
    drawn, batches = _batches(db, flt, sort, batch_size)
    assert drawn == whole and returned == len(whole)
    assert [n for n, _, _ in batches[:-1]] == [batch_size] * (len(batches) - 1)
    assert (sum(k for _, k, _ in batches), sum(d for _, _, d in batches)) == (keys, examined)


def _model(docs: list[dict], index: str, t: int, batch_size: int) -> list[tuple[int, int, int]]:
    """Each batch's (nreturned, keys, documents) of ``{a: {$gte: t}, b: {$lt: 2}}`` without a sort:
    a full batch ends at its last document (what follows is the next batch's, even when nothing more
    matches: mongod's scan learns its end only by drawing), the last batch at the end of the scan."""
    if index == "none":  # a collection scan: every record in order, one document examined each
        steps = [(0, 1, d["b"] < 2 and any(v >= t for v in _values(d))) for d in docs]
    else:  # the index's entries in bounds, in key order (then record order); a record fetched once
        entries = sorted(((v, d["_id"]) for d in docs for v in set(_values(d)) if v >= t),
                         key=lambda e: (-e[0] if index == "a_desc" else e[0], e[1]))
        seen: set[int] = set()
        steps = []
        for _, i in entries:
            fetched = i not in seen
            seen.add(i)
            steps.append((1, int(fetched), fetched and docs[i]["b"] < 2))
    batches, current = [], [0, 0, 0]
    for keys, fetched, returned in steps:
        current[0] += int(returned)
        current[1] += keys
        current[2] += fetched
        if returned and current[0] == batch_size:  # full: the batch ends
            batches.append(tuple(current))
            current = [0, 0, 0]
    batches.append(tuple(current))
    return batches


def _values(doc: dict) -> list:
    return doc["a"] if isinstance(doc["a"], list) else [doc["a"]]


@FAMILY
@given(collections(), st.sampled_from(["none", "a", "a_desc"]), st.integers(0, 10), st.integers(1, 5))
def test_each_batch_reports_what_it_consumed(db, docs, index, t, batch_size):
    _setup(db, docs, index)
    _, batches = _batches(db, {"a": {"$gte": t}, "b": {"$lt": 2}}, None, batch_size)
    assert batches == _model(docs, index, t, batch_size)


def test_a_batch_of_two_over_an_index_examines_two_keys_and_two_documents(db):
    _setup(db, [{"_id": i, "a": i, "b": 0} for i in range(10)], "a")
    _, batches = _batches(db, {"a": {"$gt": 0}}, [("a", 1)], 2)
    assert batches == [(2, 2, 2)] * 4 + [(1, 1, 1)]
