"""An inclusion projection with computed fields below an array path: mongod 7.0's projection_node.cpp
projects first (a scalar array element becomes missing, keeping its place), then sets the computed fields
(a non-document in a computed field's subtree becomes a document of the computed values; other missing
elements vanish). Checked against a small model of those two passes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tidemark.query.project import compile_projection
from tidemark.query.values import MISSING

_VALUES = st.recursive(
    st.one_of(st.integers(0, 3), st.none()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("bcdef"), inner, max_size=3),
    max_leaves=10,
)


def _tree(spec: dict) -> dict:
    root: dict = {}
    for path, value in spec.items():
        *parents, last = path.split(".")
        node = root
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = ("lit", value["$literal"]) if isinstance(value, dict) else ("inc", None)
    return root


def _has_computed(node: dict) -> bool:
    return any(_has_computed(v) if isinstance(v, dict) else v[0] == "lit" for v in node.values())


def _project(value, node: dict):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            child = node.get(k)
            if isinstance(child, tuple) and child[0] == "inc":
                out[k] = v
            elif isinstance(child, dict):
                out[k] = _project(v, child)
        return out
    if isinstance(value, list):
        return [_project(v, node) for v in value]
    return MISSING


def _compute(value, node: dict):
    if isinstance(value, dict):
        out = dict(value)
        for k, child in node.items():
            if isinstance(child, dict):
                out[k] = _compute(out.get(k, MISSING), child)
            elif child[0] == "lit":
                out[k] = child[1]
        return out
    if isinstance(value, list):
        return [_compute(v, node) for v in value]
    return _compute({}, node) if _has_computed(node) else MISSING


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v is not MISSING}
    if isinstance(value, list):
        return [_strip(v) for v in value if v is not MISSING]
    return value


def model(spec: dict, doc: dict) -> dict:
    tree = _tree(spec)
    return _strip(_compute(_project(doc, tree), tree))


@given(a=_VALUES, included=st.sets(st.sampled_from(["a.b", "a.c.d"])),
       computed=st.sets(st.sampled_from(["a.e", "a.c.f", "x"]), min_size=1))
def test_inclusion_with_computed_fields_matches_mongod_two_passes(a, included, computed):
    spec: dict = {"_id": 0, **{p: 1 for p in sorted(included)}, **{p: {"$literal": p} for p in sorted(computed)}}
    doc = {"_id": 1, "a": a}
    spec_without_id = {k: v for k, v in spec.items() if k != "_id"}
    assert compile_projection(spec)(doc) == model(spec_without_id, {"a": a})


def test_add_fields_adds_to_missing_fields_jstest():
    """addFields/add_fields_adds_to_missing_fields.js queryProjectWithExpression."""
    project = compile_projection({"_id": 0, "array.m1": 1, "array.m2": "what?"})
    assert project({"array": [1, 2, {"m1": "str"}]}) == {"array": [{"m2": "what?"}, {"m2": "what?"},
                                                                   {"m1": "str", "m2": "what?"}]}
