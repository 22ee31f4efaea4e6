"""Hypothesis strategies for filters over the meta field of a time-series collection, and the
measurements they run on (issue 25 item 8): every kind of match expression node — comparisons,
``$in``/``$nin``, ``$exists``, ``$type``, ``$regex``, ``$mod``, ``$size``, ``$all``, ``$elemMatch`` (both
forms), bit tests, ``$not``, ``$nor``, ``$expr``, the geo predicates (``$geoWithin``/``$within`` with
``$box``/``$center``/``$centerSphere``/``$polygon``/``$geometry``, ``$geoIntersects``) — on meta
subfields, alone or combined with ``$and``/``$or``/``$nor`` and with measurement and time predicates.

``measurements()`` is fixed: metas of every shape (objects with sorted fields — a time-series
collection stores object metas normalized, like MongoDB —, scalars, null, missing; legacy and GeoJSON
points, arrays of scalars and of documents, nested documents, mixed types).
"""

from __future__ import annotations

import datetime as dt

from bson.regex import Regex
from hypothesis import strategies as st

T0 = dt.datetime(2024, 3, 1)
META = "m"

_LOCS = [[1, 1], [2, 3], [5, 5], [9, 0], [0.5, 7], {"type": "Point", "coordinates": [3, 3]},
         {"type": "Point", "coordinates": [8, 8]}, [[1, 2], [6, 6]], "not a point", None]
_AS = [0, 1, 2, 3, 4, 1.5, -2, "1", "b", None, [1, 3], [], True, {"k": 1}]
_SS = ["ab", "Ab", "xyz", "b\nc", "", "abc"]
_ARRS = [[0, 1], [2], [], [[1]], [{"x": 1}, {"x": 3}], [1, "a", None], [5, 6, 7]]


def _metas() -> list:
    metas: list = []
    for i in range(36):
        meta: dict = {}
        if i % 5 != 4:
            meta["a"] = _AS[i % len(_AS)]
        if i % 3 != 2:
            meta["arr"] = _ARRS[i % len(_ARRS)]
        if i % 4 != 3:
            meta["loc"] = _LOCS[i % len(_LOCS)]
        if i % 2 == 0:
            meta["s"] = _SS[i % len(_SS)]
        if i % 6 == 1:
            meta["sub"] = {"x": i % 4, "y": _SS[i % len(_SS)]}
        elif i % 6 == 3:
            meta["sub"] = [{"x": i % 3}, {"x": 7}]
        metas.append(dict(sorted(meta.items())))
    return metas + [5, "scalar", [1, 2], None, {}, "missing"]


def measurements() -> list[dict]:
    """Three measurements per meta (the last meta: no meta field at all)."""
    docs = []
    for k, meta in enumerate(_metas()):
        for j in range(3):
            doc = {"_id": k * 3 + j, "t": T0 + dt.timedelta(minutes=7 * k + j), "v": (k + j) % 7}
            if meta != "missing":
                doc[META] = meta
            docs.append(doc)
    return docs


PATHS = ["m", "m.a", "m.s", "m.arr", "m.arr.x", "m.loc", "m.sub", "m.sub.x", "m.nope"]
values = st.sampled_from([0, 1, 2, 3, 4, 1.5, -2, "1", "b", "ab", None, [1, 3], [], True, {"k": 1}, {"x": 1},
                          [2], 5, "scalar"])
small = st.integers(0, 9)
point = st.tuples(small, small).map(list)
regexes = st.builds(Regex, st.sampled_from(["^a", "b", "^A", "c$", ".", "^$", "^b$"]),
                    st.sampled_from(["", "i", "m", "s", "ms"]))


def _square(x: int, y: int, d: int) -> dict:
    ring = [[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]]
    return {"type": "Polygon", "coordinates": [ring]}


geo_conditions = st.one_of(
    st.builds(lambda op, a, b: {op: {"$box": [a, b]}}, st.sampled_from(["$geoWithin", "$within"]), point, point),
    st.builds(lambda op, c, r: {op: {"$center": [c, r]}}, st.sampled_from(["$geoWithin", "$within"]), point,
              st.integers(0, 6)),
    st.builds(lambda c, r: {"$geoWithin": {"$centerSphere": [c, r]}}, point, st.sampled_from([0.01, 0.05, 0.1])),
    st.builds(lambda a, b, c: {"$geoWithin": {"$polygon": [a, b, c]}}, point, point, point),
    st.builds(lambda x, y, d: {"$geoWithin": {"$geometry": _square(x, y, d)}}, small, small, st.integers(1, 6)),
    st.builds(lambda x, y, d: {"$geoIntersects": {"$geometry": _square(x, y, d)}}, small, small, st.integers(1, 6)),
    st.builds(lambda p: {"$geoIntersects": {"$geometry": {"type": "Point", "coordinates": p}}}, point),
)

_value_conditions = st.one_of(
    st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), values),
    st.builds(lambda op, vs: {op: vs}, st.sampled_from(["$in", "$nin"]),
              st.lists(st.one_of(values, regexes), max_size=3)),
    st.builds(lambda b: {"$exists": b}, st.booleans()),
    st.builds(lambda t: {"$type": t}, st.sampled_from(["int", "double", "string", "array", "object", "null", "number",
                                                       "bool", 16, 2, ["int", "string"]])),
    st.builds(lambda r: {"$regex": r.pattern, "$options": "".join(sorted(_letters(r)))}, regexes),
    st.builds(lambda d, r: {"$mod": [d, r]}, st.integers(1, 3), st.integers(0, 2)),
    st.builds(lambda n: {"$size": n}, st.integers(0, 3)),
    st.builds(lambda vs: {"$all": vs}, st.lists(st.one_of(values, regexes), min_size=1, max_size=2)),
    st.builds(lambda op, n: {op: n}, st.sampled_from(["$bitsAllSet", "$bitsAnySet", "$bitsAllClear",
                                                      "$bitsAnyClear"]), st.integers(0, 7)),
    geo_conditions,
)


def _letters(r: Regex) -> str:
    flags = {2: "i", 8: "m", 16: "s"}
    return "".join(ch for bit, ch in flags.items() if r.flags & bit)


def _merge(conds: list[dict]) -> dict:
    out: dict = {}
    for cond in conds:
        for op, arg in cond.items():
            out.setdefault(op, arg)
    return out


elem_match = st.one_of(
    st.builds(lambda cs: {"$elemMatch": _merge(cs)}, st.lists(_value_conditions, min_size=1, max_size=2)),
    st.builds(lambda c: {"$elemMatch": {"x": c}}, _value_conditions),
    st.builds(lambda c: {"$all": [{"$elemMatch": c}]}, st.builds(lambda v: {"$gte": v}, values)),
)
conditions = st.one_of(
    _value_conditions,
    elem_match,
    st.builds(lambda c: {"$not": c}, st.one_of(_value_conditions, elem_match)),
    st.builds(lambda r: {"$not": r}, regexes),
    st.builds(_merge, st.lists(_value_conditions, min_size=2, max_size=3)),
)

_exprs = st.one_of(
    st.builds(lambda op, p, v: {"$expr": {op: ["$" + p, {"$literal": v}]}},
              st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), st.sampled_from(PATHS), values),
    st.builds(lambda p, t: {"$expr": {"$eq": [{"$type": "$" + p}, t]}}, st.sampled_from(PATHS),
              st.sampled_from(["missing", "int", "string", "array", "object", "null"])),
)

meta_leaves = st.one_of(
    st.builds(lambda p, c: {p: c}, st.sampled_from(PATHS), conditions),
    st.builds(lambda p, v: {p: v}, st.sampled_from(PATHS), st.one_of(values, regexes)),
    _exprs,
)
other_leaves = st.one_of(
    st.builds(lambda op, n: {"v": {op: n}}, st.sampled_from(["$gt", "$lt", "$eq"]), st.integers(0, 6)),
    st.builds(lambda k: {"t": {"$gte": T0 + dt.timedelta(minutes=k)}}, st.integers(0, 260)),
)


def _combined(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(lambda op, cs: {op: cs}, st.sampled_from(["$and", "$or", "$nor"]),
                  st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda cs: _merge(cs), st.lists(children, min_size=2, max_size=3)),
    )


meta_filters = st.recursive(meta_leaves, _combined, max_leaves=5)
"""Filters naming only meta subfields (the time-series side evaluates them on the buckets' meta)."""

mixed_filters = st.recursive(st.one_of(meta_leaves, meta_leaves, other_leaves), _combined, max_leaves=5)
"""Meta predicates combined with measurement and time predicates."""
