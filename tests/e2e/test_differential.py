"""Randomized differential test: random documents and random find queries (filters, sorts, projections)
answered by the server — first by collection scans, then again with indexes on the queried fields — and
by a small, straightforward Python evaluator of the same operators written here.

The evaluator covers a deliberately plain slice of MongoDB's semantics: numbers (int/float), strings,
null, missing fields and arrays of those; comparisons stay within a type bracket; a field holding an
array matches when any element matches; ``{f: null}`` matches null or missing; sorts order null/missing
< numbers < strings < arrays-by-their-min/max element, with ``_id`` breaking ties.
"""

from __future__ import annotations

import random

import pytest

FIELDS = ("a", "b", "c.d")
SEED = 20240521


def rand_scalar(rng: random.Random):
    r = rng.random()
    if r < 0.45:
        return rng.randint(-5, 5)
    if r < 0.6:
        return rng.choice([0.5, -1.5, 2.0, 3.25])
    if r < 0.85:
        return rng.choice(["x", "y", "z", "xy", ""])
    return None


def rand_value(rng: random.Random):
    if rng.random() < 0.2:
        return [rand_scalar(rng) for _ in range(rng.randint(1, 3))]
    return rand_scalar(rng)


def rand_doc(rng: random.Random, i: int) -> dict:
    doc: dict = {"_id": i}
    if rng.random() < 0.85:
        doc["a"] = rand_value(rng)
    if rng.random() < 0.85:
        doc["b"] = rand_scalar(rng)
    if rng.random() < 0.8:
        doc["c"] = {"d": rand_value(rng)} if rng.random() < 0.9 else rand_scalar(rng)
    return doc


# ---------------------------------------------------------------------------- the reference evaluator

MISSING = object()


def get(doc, path):
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return MISSING
    return cur


def bracket(v):
    if v is None or v is MISSING:
        return 0
    if isinstance(v, (int, float)):
        return 1
    if isinstance(v, str):
        return 2
    return 3


def cmp_scalar(op, v, q):
    if bracket(v) != bracket(q):
        return False
    if bracket(v) == 0:
        return op in ("$eq", "$gte", "$lte")
    return {"$eq": v == q, "$gt": v > q, "$gte": v >= q, "$lt": v < q, "$lte": v <= q}[op]


def field_matches(value, op, q):
    candidates = value if isinstance(value, list) else [value]
    if op == "$exists":
        return (value is not MISSING) == q
    if op == "$in":
        return any(field_matches(value, "$eq", x) for x in q)
    if op == "$nin":
        return not field_matches(value, "$in", q)
    if op == "$ne":
        return not field_matches(value, "$eq", q)
    if q is None and op in ("$eq", "$gte", "$lte"):
        return value is MISSING or value is None or (isinstance(value, list) and None in value)
    return any(cmp_scalar(op, v, q) for v in candidates if v is not MISSING)


def evaluate(doc, flt) -> bool:
    for key, cond in flt.items():
        if key == "$and":
            if not all(evaluate(doc, f) for f in cond):
                return False
        elif key == "$or":
            if not any(evaluate(doc, f) for f in cond):
                return False
        elif isinstance(cond, dict):
            if not all(field_matches(get(doc, key), op, q) for op, q in cond.items()):
                return False
        elif not field_matches(get(doc, key), "$eq", cond):
            return False
    return True


def sort_value(v, direction):
    if v is MISSING:
        v = None
    if isinstance(v, list):
        keys = [sort_value(x, direction) for x in v]
        return min(keys) if direction == 1 else max(keys)
    return (bracket(v), v if v is not None else 0)


def reference(docs, flt, sort, projection, skip, limit):
    out = [d for d in docs if evaluate(d, flt)]
    out.sort(key=lambda d: d["_id"])
    for path, direction in reversed(sort):
        out.sort(key=lambda d: sort_value(get(d, path), direction), reverse=direction == -1)
    out = out[skip:skip + limit if limit else None]
    if projection:
        out = [{k: d[k] for k in ("_id", *projection) if k in d} for d in out]
    return out


# ---------------------------------------------------------------------------- random queries


def rand_predicate(rng):
    path = rng.choice(FIELDS)
    op = rng.choice(["eq", "$gt", "$gte", "$lt", "$lte", "$ne", "$in", "$nin", "$exists", "range"])
    if op == "range":  # both sides on one path: each side may be met by a different array element
        lo, hi = sorted((rng.randint(-5, 5), rng.randint(-5, 5)))
        return {path: {"$gt": lo, "$lt": hi}}
    if op == "eq":
        return {path: rand_scalar(rng)}
    if op in ("$in", "$nin"):
        return {path: {op: [rand_scalar(rng) for _ in range(rng.randint(1, 3))]}}
    if op == "$exists":
        return {path: {op: rng.random() < 0.5}}
    q = rand_scalar(rng)
    if q is None and op in ("$gt", "$lt"):
        q = 0
    return {path: {op: q}}


def rand_filter(rng):
    preds = [rand_predicate(rng) for _ in range(rng.randint(0, 3))]
    if len(preds) >= 2 and rng.random() < 0.3:
        return {"$or": preds}
    merged: dict = {}
    for p in preds:
        (k, v), = p.items()
        if k in merged:
            return {"$and": preds}
        merged[k] = v
    return merged


def rand_sort(rng):
    fields = rng.sample(["a", "b"], rng.randint(0, 2))
    return [(f, rng.choice([1, -1])) for f in fields]


def run_queries(coll, docs, rng, n):
    mismatches = []
    for _ in range(n):
        flt, sort = rand_filter(rng), rand_sort(rng)
        projection = rng.choice([None, ["a"], ["b", "c"]])
        skip, limit = rng.choice([0, 0, 3]), rng.choice([0, 0, 5, 20])
        expected = reference(docs, flt, sort, projection, skip, limit)
        cursor = coll.find(flt, {p: 1 for p in projection} if projection else None)
        cursor = cursor.sort([*sort, ("_id", 1)]).skip(skip).limit(limit)
        got = list(cursor)
        if got != expected:
            mismatches.append((flt, sort, projection, skip, limit, got[:5], expected[:5]))
    return mismatches


@pytest.mark.slow
@pytest.mark.commands("find", "createIndexes")
def test_random_queries_agree_with_reference_evaluator_with_and_without_indexes(db):
    rng = random.Random(SEED)
    docs = [rand_doc(rng, i) for i in range(400)]
    db.c.insert_many(docs)
    assert run_queries(db.c, docs, random.Random(SEED + 1), 300) == []
    db.c.create_index("a")
    db.c.create_index([("b", -1), ("a", 1)])
    db.c.create_index("c.d")
    assert run_queries(db.c, docs, random.Random(SEED + 1), 300) == []
