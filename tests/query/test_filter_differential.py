"""Randomized differential test: compiled filters and sorts vs. a small, independent reference evaluator.

The reference below is written from MongoDB's documented semantics in the plainest possible style
(no shared code with tidemark.query beyond the API under test): its own BSON comparison for the
generated types, its own path traversal, its own operator definitions. Thousands of random documents
with mixed types and nested arrays are checked against hundreds of random filters and sorts.
"""

from __future__ import annotations

import functools
import random

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.match import compile_filter
from tidemark.query.sort import sort_documents

SEED = 20240501
N_DOCS = 1500
N_FILTERS = 250
N_SORTS = 60

ABSENT = object()  # the reference's own "missing"
# How the reference orders two strings: None = by code point; the collation tests set str.lower,
# which is what ICU's "en" at strength 2 gives for the generated ASCII strings (case ignored).
STRING_KEY = None


# --- reference BSON order for null, numbers, strings, objects, arrays, bools ------------------------
def rank(v):
    if v is None or v is ABSENT:
        return 1
    if isinstance(v, bool):
        return 6
    if isinstance(v, (int, float)):
        return 2
    if isinstance(v, str):
        return 3
    if isinstance(v, dict):
        return 4
    if isinstance(v, list):
        return 5
    raise AssertionError(v)


def ref_cmp(a, b):
    ra, rb = rank(a), rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra == 1:
        return 0
    if ra == 4:
        ia, ib = list(a.items()), list(b.items())
        for (ka, va), (kb, vb) in zip(ia, ib, strict=False):
            if rank(va) != rank(vb):
                return -1 if rank(va) < rank(vb) else 1
            if ka != kb:
                return -1 if ka < kb else 1
            c = ref_cmp(va, vb)
            if c:
                return c
        return (len(ia) > len(ib)) - (len(ia) < len(ib))
    if ra == 5:
        for x, y in zip(a, b, strict=False):
            c = ref_cmp(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ra == 3 and STRING_KEY is not None:
        a, b = STRING_KEY(a), STRING_KEY(b)
    return (a > b) - (a < b)


# --- reference path traversal ----------------------------------------------------------------------
class Positional:
    """A value the path's last (numeric) part reached by position in an array: an array reached so is
    one value to a comparison, not traversed (match_numeric_components.js: {"a.0": 42} does not match
    {a: [[42]]}); other operators ($size, $elemMatch, $exists) see the value itself."""

    def __init__(self, value):
        self.value = value


def plain(v):
    return v.value if isinstance(v, Positional) else v


def ref_values(doc, parts):
    """Values at a dotted path: documents continue, arrays of documents are traversed implicitly,
    numeric parts also index arrays (the last one's value wrapped in ``Positional``); an absent field
    gives ABSENT."""
    if not isinstance(doc, dict):
        return [ABSENT]
    if parts[0] not in doc:
        return [ABSENT]
    v = doc[parts[0]]
    if len(parts) == 1:
        return [v]
    rest = parts[1:]
    if isinstance(v, list):
        out = []
        if rest[0].isdigit():
            i = int(rest[0])
            if i < len(v):
                if len(rest) == 1:
                    out.append(Positional(v[i]))
                elif isinstance(v[i], list):
                    pass  # not generated: arrays of arrays under numeric paths
                else:
                    out.extend(ref_values(v[i], rest[1:]))
        for e in v:
            if isinstance(e, dict):
                # a document element lacking the numeric field gives ABSENT too (mongod 7.0's
                # BSONElementIterator, matcher/path.cpp: {b: [{}, -1]} matches {"b.1": {$lte: null}})
                out.extend(ref_values(e, rest))
        return out
    return ref_values(v, rest)


def leaf_candidates(vals):
    out = []
    for v in vals:
        if isinstance(v, Positional):
            out.append(v.value)
            continue
        out.append(v)
        if isinstance(v, list):
            out.extend(v)
    return out


def ref_leaf(op, arg, v):
    if op == "$eq":
        if arg is None:
            return v is None or v is ABSENT
        return v is not ABSENT and rank(v) == rank(arg) and ref_cmp(v, arg) == 0
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if arg is None:
            return op in ("$gte", "$lte") and (v is None or v is ABSENT)
        if v is ABSENT or rank(v) != rank(arg):
            return False
        c = ref_cmp(v, arg)
        return {"$gt": c > 0, "$gte": c >= 0, "$lt": c < 0, "$lte": c <= 0}[op]
    if op == "$in":
        return any(ref_leaf("$eq", a, v) for a in arg)
    if op == "$type":
        names = {1: "null", 2: "number", 3: "string", 4: "object", 5: "array", 6: "bool"}
        return v is not ABSENT and names[rank(v)] == arg
    raise AssertionError(op)


def ref_match(flt, doc):
    for key, cond in flt.items():
        if key == "$and":
            ok = all(ref_match(f, doc) for f in cond)
        elif key == "$or":
            ok = any(ref_match(f, doc) for f in cond)
        elif key == "$nor":
            ok = not any(ref_match(f, doc) for f in cond)
        else:
            ok = ref_path(key, cond, doc)
        if not ok:
            return False
    return True


def ref_path(path, cond, doc):
    parts = path.split(".")
    positioned = ref_values(doc, parts)
    vals = [plain(v) for v in positioned]
    if not (isinstance(cond, dict) and cond and next(iter(cond)).startswith("$")):
        return any(ref_leaf("$eq", cond, v) for v in leaf_candidates(positioned))
    for op, arg in cond.items():
        if op in ("$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$type"):
            ok = any(ref_leaf(op, arg, v) for v in leaf_candidates(positioned))
        elif op == "$ne":
            ok = not any(ref_leaf("$eq", arg, v) for v in leaf_candidates(positioned))
        elif op == "$nin":
            ok = not any(ref_leaf("$in", arg, v) for v in leaf_candidates(positioned))
        elif op == "$exists":
            ok = any(v is not ABSENT for v in vals) == arg
        elif op == "$size":
            ok = any(isinstance(v, list) and len(v) == arg for v in vals)
        elif op == "$not":
            ok = not ref_path(path, arg, doc)
        elif op == "$elemMatch":
            ok = any(
                isinstance(v, list) and any(all(ref_leaf(o, a, e) for o, a in arg.items()) for e in v)
                for v in vals
            )
        else:
            raise AssertionError(op)
        if not ok:
            return False
    return True


# --- random data -----------------------------------------------------------------------------------
SCALARS = [None, 0, 1, 2, -1, 1.5, 2.0, "a", "b", "ab", "", True, False]


def rand_value(rng, depth=0):
    r = rng.random()
    if depth < 2 and r < 0.15:
        return [rand_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if depth < 2 and r < 0.3:
        return {k: rand_value(rng, depth + 1) for k in rng.sample(["b", "c", "d"], rng.randrange(0, 3))}
    return rng.choice(SCALARS)


def rand_doc(rng, i):
    doc = {"_id": i}
    for name in ("a", "b", "c"):
        if rng.random() < 0.85:
            doc[name] = rand_value(rng)
    return doc


CASED_SCALARS = [None, 0, 1, 1.5, "a", "A", "b", "B", "ab", "aB", "Ab", "ba", "", True]


PATHS = ["a", "b", "c", "a.b", "a.c", "c.d", "a.0", "b.1"]


def rand_cond(rng):
    op = rng.choice(
        [
            "eq",
            "$eq",
            "$gt",
            "$gte",
            "$lt",
            "$lte",
            "$ne",
            "$in",
            "$nin",
            "$exists",
            "$size",
            "$type",
            "$not",
            "$elemMatch",
            "range",
        ]
    )
    v = rand_value(rng, 1)
    if op == "eq":
        return v
    if op == "range":  # two bounds on one path: may be met by different array elements
        lo = rng.choice([-1, 0, 1, 1.5, "a"])
        return {rng.choice(["$gt", "$gte"]): lo, rng.choice(["$lt", "$lte"]): rng.choice([1, 2, 2.0, "b"])}
    if op in ("$in", "$nin"):
        return {op: [rand_value(rng, 2) for _ in range(rng.randrange(1, 4))]}
    if op == "$exists":
        return {op: rng.random() < 0.5}
    if op == "$size":
        return {op: rng.randrange(0, 4)}
    if op == "$type":
        return {op: rng.choice(["null", "number", "string", "object", "array", "bool"])}
    if op == "$not":
        return {op: {rng.choice(["$gt", "$lt", "$eq"]): rng.choice(SCALARS)}}
    if op == "$elemMatch":
        return {op: {"$gte": rng.choice([0, 1, "a"]), "$lte": rng.choice([2, "b"])}}
    return {op: v}


def rand_filter(rng, depth=0):
    r = rng.random()
    if depth == 0 and r < 0.25:
        return {
            rng.choice(["$and", "$or", "$nor"]): [rand_filter(rng, 1) for _ in range(rng.randrange(1, 4))]
        }
    return {p: rand_cond(rng) for p in rng.sample(PATHS, rng.randrange(1, 3))}


@pytest.mark.slow
def test_compiled_filters_agree_with_reference_evaluator():
    rng = random.Random(SEED)
    docs = [rand_doc(rng, i) for i in range(N_DOCS)]
    disagreements = []
    for _ in range(N_FILTERS):
        flt = rand_filter(rng)
        pred = compile_filter(flt)
        for doc in docs:
            got = bool(pred(doc))
            want = ref_match(flt, doc)
            if got != want:
                disagreements.append((flt, doc, got, want))
                break
    assert not disagreements, disagreements[:3]


# --- sorts -----------------------------------------------------------------------------------------
EMPTY = object()  # an empty leaf array: sorts below null


def ref_sort_key_value(doc, path, direction):
    """Ascending: the smallest value the path reaches; descending: the largest (arrays expanded)."""
    cands = []
    for v in map(plain, ref_values(doc, path.split("."))):
        if isinstance(v, list):
            cands.extend(v if v else [EMPTY])
        else:
            cands.append(v)
    if not cands:
        return None
    best = cands[0]
    for c in cands[1:]:
        order = ref_key_cmp(c, best)
        if (order < 0) if direction == 1 else (order > 0):
            best = c
    return best


def ref_array_paths(doc, parts, prefix=()):
    """The arrays a (non-numeric) path expands in ``doc``, each named by the components leading to it."""
    if not isinstance(doc, dict) or parts[0] not in doc:
        return set()
    v, here = doc[parts[0]], prefix + (parts[0],)
    if isinstance(v, list):
        out = {here}
        for e in v if len(parts) > 1 else ():
            out |= ref_array_paths(e, parts[1:], here)
        return out
    return ref_array_paths(v, parts[1:], here) if len(parts) > 1 else set()


def ref_parallel(doc, paths):
    """mongod 7.0's sort key generator (sort_key_generator.cpp) fails 2 'cannot sort with keys that are
    parallel arrays' when two sort paths each expand an array the other does not."""
    found = [ref_array_paths(doc, p.split(".")) for p in paths]
    return any(x - y and y - x for i, x in enumerate(found) for y in found[i + 1:])


def sortable(docs, spec):
    """The documents mongod can sort by ``spec``; when some cannot, sorting them all must fail 2."""
    ok = [d for d in docs if not ref_parallel(d, list(spec))]
    if len(ok) < len(docs):
        with pytest.raises(MongoError) as info:
            list(sort_documents(docs, spec))
        assert info.value.code == 2
    return ok


def ref_key_cmp(a, b):
    if a is EMPTY or b is EMPTY:
        return (a is not EMPTY) - (b is not EMPTY)
    return ref_cmp(None if a is ABSENT else a, None if b is ABSENT else b)


def ref_sort_tuples(obj, rest, fixed):
    """mongod 7.0's sort keys (sort_key_generator.cpp -> BtreeKeyGenerator) for non-positional paths
    (``rest``: each path's parts still to read, None when done): one array expanded at a time, paths
    through the same array read the same element, a path stopping at an empty array or a non-document
    mid-path gives null, a leaf empty array EMPTY (undefined)."""
    fixed, rest, arr, on = list(fixed), list(rest), None, []
    for i, parts in enumerate(rest):
        if parts is None:
            continue
        v, k = obj, 0
        while True:
            if not isinstance(v, dict) or parts[k] not in v:
                v, k = None, len(parts)
                break
            v, k = v[parts[k]], k + 1
            if isinstance(v, list) or k == len(parts):
                break
        if isinstance(v, list):
            on.append(i)
            rest[i], arr = parts[k:], v
        else:
            fixed[i], rest[i] = v, None
    if arr is None:
        return [tuple(fixed)]
    out = []
    for e in arr or [EMPTY]:
        f2, r2 = list(fixed), list(rest)
        for i in on:
            if not rest[i]:
                f2[i], r2[i] = e, None
        out += ref_sort_tuples(e if isinstance(e, dict) else None, r2, f2)
    return out


def ref_tuple_cmp(x, y, spec):
    for a, b, direction in zip(x, y, spec.values(), strict=True):
        c = ref_key_cmp(a, b)
        if c:
            return c * direction
    return 0


def ref_best_tuple(doc, spec):
    """The document's sort key: its first key tuple in the sort's order (mongod 7.0, as above)."""
    tuples = ref_sort_tuples(doc, [p.split(".") for p in spec], [None] * len(spec))
    return min(tuples, key=functools.cmp_to_key(lambda x, y: ref_tuple_cmp(x, y, spec)))


@pytest.mark.slow
def test_sorts_agree_with_reference_evaluator():
    rng = random.Random(SEED + 1)
    docs = [rand_doc(rng, i) for i in range(N_DOCS)]
    for _ in range(N_SORTS):
        fields = rng.sample(["a", "b", "a.b", "c.d", "c"], rng.randrange(1, 3))
        spec = {f: rng.choice([1, -1]) for f in fields}

        def compare_docs(x, y, spec=spec):
            return ref_tuple_cmp(ref_best_tuple(x, spec), ref_best_tuple(y, spec), spec)

        ok = sortable(docs, spec)
        want = [d["_id"] for d in sorted(ok, key=functools.cmp_to_key(compare_docs))]
        got = [d["_id"] for d in sort_documents(ok, spec)]
        assert got == want, spec
        limit = rng.randrange(1, 50)
        assert [d["_id"] for d in sort_documents(ok, spec, limit=limit)] == want[:limit], (spec, limit)


# --- collation and let -------------------------------------------------------------------------------
CASE_INSENSITIVE = {"locale": "en", "strength": 2}


def _with_scalars(scalars, fn):
    global SCALARS
    saved, SCALARS = SCALARS, scalars
    try:
        return fn()
    finally:
        SCALARS = saved


def _with_string_key(key, fn):
    global STRING_KEY
    saved, STRING_KEY = STRING_KEY, key
    try:
        return fn()
    finally:
        STRING_KEY = saved


@pytest.mark.slow
def test_collated_filters_and_sorts_agree_with_reference_evaluator():
    """Case-insensitive collation (ICU en, strength 2): filters, $in, ranges, $elemMatch and sorts
    over mixed-case strings agree with the reference comparing lower-cased strings."""
    from tidemark.query.collation import parse_collation

    collation = parse_collation(CASE_INSENSITIVE)
    rng = random.Random(SEED + 2)

    def run():
        docs = [rand_doc(rng, i) for i in range(N_DOCS // 2)]
        for _ in range(N_FILTERS):
            flt = rand_filter(rng)
            pred = compile_filter(flt, collation=collation)
            for doc in docs:
                assert bool(pred(doc)) == ref_match(flt, doc), (flt, doc)
        for _ in range(N_SORTS // 2):
            fields = rng.sample(["a", "b", "a.b", "c"], rng.randrange(1, 3))
            spec = {f: rng.choice([1, -1]) for f in fields}

            def compare_docs(x, y, spec=spec):
                return ref_tuple_cmp(ref_best_tuple(x, spec), ref_best_tuple(y, spec), spec)

            ok = sortable(docs, spec)
            want = [d["_id"] for d in sorted(ok, key=functools.cmp_to_key(compare_docs))]
            assert [d["_id"] for d in sort_documents(ok, spec, collation=collation)] == want, spec

    _with_scalars(CASED_SCALARS, lambda: _with_string_key(str.lower, run))


def ref_expr_cmp(a, b):
    """$expr comparison: whole values (no array traversal), missing below null."""
    if a is ABSENT or b is ABSENT:
        return (a is not ABSENT) - (b is not ABSENT)
    return ref_cmp(a, b)


def test_let_variables_in_expr_filters_agree_with_reference_evaluator():
    """Filters comparing fields with ``let`` variables (evaluated once, as a command does), with and
    without a case-insensitive collation."""
    from tidemark.query.collation import parse_collation
    from tidemark.query.expressions import evaluate_let

    ops = {"$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0, "$gte": lambda c: c >= 0,
           "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0}
    rng = random.Random(SEED + 3)

    def run(collation):
        docs = [rand_doc(rng, i) for i in range(N_DOCS // 3)]
        for _ in range(N_FILTERS // 2):
            value = rand_value(rng, 1)
            # the variable is an expression: $literal of the value, or arithmetic for numbers
            expr = {"$add": [value, 0]} if type(value) in (int, float) else {"$literal": value}
            variables = evaluate_let({"v": expr})
            field, op = rng.choice(["a", "b", "c"]), rng.choice(list(ops))
            flt = {"$expr": {op: [f"${field}", "$$v"]}}
            if rng.random() < 0.3:
                flt = {"$and": [flt, {"$expr": {"$ne": ["$$NOW", None]}}]}
            pred = compile_filter(flt, variables=variables, collation=collation)
            for doc in docs:
                want = ops[op](ref_expr_cmp(doc.get(field, ABSENT), value))
                assert bool(pred(doc)) == want, (flt, value, doc)

    _with_scalars(CASED_SCALARS, lambda: run(None))
    _with_scalars(CASED_SCALARS, lambda: _with_string_key(str.lower, lambda: run(
        parse_collation(CASE_INSENSITIVE))))
