"""The fields a time-series read decodes (``view._fields_read``: the filter's remembered on its
``filters.FilterShape`` when the shape fixes them, ``filters.fields_fixed``) are those
``deps.needed_fields`` finds from scratch, for filters of one shape whose values differ — ``$expr`` and
``$jsonSchema`` name their fields in their values, so a shape holding one reads them from each filter."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import parse_filter
from tidemark.query.match_ast import And
from tidemark.timeseries import filters, view
from tidemark.timeseries.deps import needed_fields, pipeline_fields
from tidemark.timeseries.filters import shape_key, shape_of

T0 = dt.datetime(2024, 1, 1)
NAMES = ["a", "b", "c.d", "m", "m.x", "t"]
RESTS = [
    [{"$group": {"_id": None, "x": {"$max": "$v"}}}],
    [{"$project": {"_id": 0, "w": 1}}],
    [{"$count": "n"}],
    [{"$sort": {"t": 1}}, {"$limit": 2}],  # (every field)
]


@st.composite
def _conjunct(draw, kind: str) -> dict:
    name = draw(st.sampled_from(NAMES))
    if kind == "cmp":
        return {name: {"$gt": draw(st.integers(0, 9))}}
    if kind == "time":
        return {"t": {"$gte": T0 + dt.timedelta(minutes=draw(st.integers(0, 99)))}}
    if kind == "expr":
        return {"$expr": {"$gt": [f"${name}", draw(st.integers(0, 9))]}}
    if kind == "expr-root":  # (reads the whole document)
        return {"$expr": {"$gt": [{"$size": {"$objectToArray": "$$ROOT"}}, 2]}}
    if kind == "schema":
        return {"$jsonSchema": {"required": [name.split(".")[0]]}}
    if kind == "schema-any":
        return {"$jsonSchema": {"minProperties": 1}}
    if kind == "elem":
        return {name: {"$elemMatch": {"q": draw(st.integers(0, 9))}}}
    if kind == "or":
        return {"$or": [draw(_conjunct("cmp")), draw(_conjunct(draw(st.sampled_from(["expr", "schema"]))))]}
    return {"$nor": [draw(_conjunct("cmp"))]}


KINDS = st.lists(st.sampled_from(["cmp", "time", "expr", "expr-root", "schema", "schema-any", "elem", "or", "nor"]),
                 min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(kinds=KINDS, data=st.data(), rest=st.sampled_from(RESTS), stages=st.integers(1, 2))
def test_fields_read_are_those_found_from_scratch(kinds, data, rest, stages):
    # two reads of the same kinds of conjuncts (the same shape when their names agree), one after the
    # other with the memo warm: the second's fields are its own
    filters._SHAPES.clear()
    for _ in range(2):
        conjuncts = [data.draw(_conjunct(kind)) for kind in kinds]
        docs = [{"$and": conjuncts}] if stages == 1 else [{"$and": conjuncts[:1]}, {"$and": conjuncts[1:] or [{}]}]
        nodes = [parse_filter(doc) for doc in docs]
        node = nodes[0] if len(nodes) == 1 else And(tuple(nodes))
        tail = pipeline_fields(rest)
        want = needed_fields(rest, nodes)
        got = None if tail is None else view._fields_read(shape_of(node, "t", "m"), nodes, frozenset(tail))
        assert got == want, (docs, rest)


def test_a_shape_with_an_expr_reads_each_filter_s_fields():
    filters._SHAPES.clear()
    for name in ("a", "b", "a"):
        nodes = [parse_filter({"t": {"$gte": T0}, "$expr": {"$gt": [f"${name}", 1]}})]
        assert shape_key(nodes[0]) == shape_key(parse_filter({"t": {"$gte": T0}, "$expr": {"$lt": ["$z", 0]}}))
        assert view._fields_read(shape_of(nodes[0], "t", "m"), nodes, frozenset({"v"})) == {"t", name, "v"}
    assert len(filters._SHAPES) == 1
