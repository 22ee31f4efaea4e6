"""``filters.shape_key`` stated as its rule over the family of parsed filters: a node's kind with its
children's keys (``$and``/``$or``/``$nor``), its child's (``$not``), path and operator (a comparison),
path (``$in``), path, value form and child's (``$elemMatch``), else kind, path and operator when it
has them — never a value. Its walk keys a conjunction's comparison and ``$in`` children without a call
of its own (issue 23: every time-series read keys its filter), so the family pins that those children
are keyed exactly as the rule keys them at any depth."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.query.match import parse_filter
from tidemark.query.match_ast import And, Cmp, ElemMatch, In, Nor, Not, Or
from tidemark.timeseries.filters import shape_key


def _rule(node: Any) -> tuple[Any, ...]:
    kind = type(node)
    if kind in (And, Or, Nor):
        return (kind, *[_rule(child) for child in node.children])
    if kind is Not:
        return (kind, _rule(node.child))
    if kind is Cmp:
        return (kind, node.path, node.op)
    if kind is In:
        return (kind, node.path, None)
    if kind is ElemMatch:
        return (kind, node.path, node.value_form, _rule(node.child))
    return (kind, getattr(node, "path", None), getattr(node, "op", None))


_VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"]), st.none())
_LEAVES = st.one_of(
    st.builds(lambda p, op, v: {p: {op: v}}, st.sampled_from(["t", "v", "m.a"]),
              st.sampled_from(["$eq", "$gt", "$lte", "$ne"]), _VALUES),
    st.builds(lambda p, vs: {p: {"$in": vs}}, st.sampled_from(["v", "m"]), st.lists(_VALUES, max_size=3)),
    st.builds(lambda p: {p: {"$exists": True}}, st.sampled_from(["v", "w"])),
    st.builds(lambda p, v: {p: {"$not": {"$gt": v}}}, st.sampled_from(["v", "m"]), st.integers(0, 3)),
    st.builds(lambda p, v: {p: {"$elemMatch": {"$gt": v}}}, st.sampled_from(["a"]), st.integers(0, 3)),
)
_FILTERS = st.recursive(
    _LEAVES,
    lambda inner: st.builds(lambda op, parts: {op: parts}, st.sampled_from(["$and", "$or", "$nor"]),
                            st.lists(inner, min_size=1, max_size=4)),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_FILTERS)
def test_shape_key_is_its_rule(flt: dict[str, Any]) -> None:
    node = parse_filter(flt)
    assert shape_key(node) == _rule(node)
