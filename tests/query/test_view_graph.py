"""The view graph checked when a view is created or changed (``tidemark.core.namespace.check_view_graph``,
mongod's ViewGraph::insertAndValidate) and the namespaces a pipeline reads (``involved_namespaces``)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.core.namespace import MAX_VIEW_DEPTH, check_view_graph, involved_namespaces
from tidemark.protocol.errors import MongoError


def view(view_on: str, pipeline: list | None = None, collation: dict | None = None) -> dict:
    doc = {"viewOn": view_on, "pipeline": pipeline or []}
    if collation is not None:
        doc["collation"] = collation
    return doc


def lookup(src) -> dict:
    return {"$lookup": {"from": src, "as": "x", "localField": "a", "foreignField": "b"}}


def error(views: dict, name: str, definition: dict) -> MongoError | None:
    try:
        check_view_graph("db", views, name, definition["viewOn"], definition["pipeline"], definition.get("collation"))
    except MongoError as e:
        return e
    return None


def test_involved_namespaces_reads_every_stage_that_reads_a_collection():
    pipeline = [
        lookup("l"),
        {"$graphLookup": {"from": "g"}},
        {"$unionWith": "u"},
        {"$unionWith": {"coll": "u2", "pipeline": [{"$lookup": {"from": "nested", "pipeline": [{"$unionWith": "deep"}],
                                                                "as": "x"}}]}},
        {"$facet": {"f": [lookup("in_facet")]}},
        {"$lookup": {"from": {"db": "other", "coll": "elsewhere"}, "as": "x", "pipeline": []}},
        {"$lookup": {"from": {"coll": "same_db"}, "as": "x", "pipeline": []}},
        {"$match": {"from": "not_a_stage_reading"}},
        "malformed",
    ]
    assert sorted(involved_namespaces(pipeline)) == sorted(["l", "g", "u", "u2", "nested", "deep", "in_facet",
                                                           "same_db"])


def test_involved_namespaces_survives_deep_nesting():
    pipeline: list = [{"$unionWith": "bottom"}]
    for _ in range(5000):  # iterative: no recursion limit to hit
        pipeline = [{"$facet": {"f": pipeline}}]
    assert involved_namespaces(pipeline) == ["bottom"]


def _reads(pipeline) -> list[str]:
    """The oracle: every same-database name a pipeline reads, stage by stage (a stage's own name before
    the names of its sub-pipeline's)."""
    found: list[str] = []
    if not isinstance(pipeline, list):
        return found
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            continue
        (op, spec), = stage.items()
        if op in ("$lookup", "$graphLookup") and isinstance(spec, dict):
            target = spec.get("from")
            found += [target] if type(target) is str else [target["coll"]] if isinstance(target, dict) \
                and "db" not in target and type(target.get("coll")) is str else []
            if op == "$lookup":
                found += _reads(spec.get("pipeline"))
        elif op == "$unionWith":
            if isinstance(spec, dict):
                found += [spec["coll"]] if type(spec.get("coll")) is str else []
                found += _reads(spec.get("pipeline"))
            elif type(spec) is str:
                found.append(spec)
        elif op == "$facet" and isinstance(spec, dict):
            for sub in spec.values():
                found += _reads(sub)
    return found


_NAMES = st.sampled_from(["a", "b", "c"])
_PIPELINES = st.recursive(
    st.lists(st.one_of(st.just({"$match": {"x": 1}}), st.just({}), st.just({"$sort": {"a": 1}, "$limit": 1}),
                       st.just("bad"), _NAMES.map(lambda n: {"$unionWith": n}),
                       _NAMES.map(lambda n: {"$graphLookup": {"from": n}}),
                       _NAMES.map(lambda n: {"$lookup": {"from": {"db": "other", "coll": n}}})), max_size=4),
    lambda inner: st.lists(st.one_of(
        st.tuples(_NAMES, inner).map(lambda t: {"$lookup": {"from": t[0], "pipeline": t[1]}}),
        st.tuples(_NAMES, inner).map(lambda t: {"$unionWith": {"coll": t[0], "pipeline": t[1]}}),
        st.dictionaries(_NAMES, inner, max_size=2).map(lambda f: {"$facet": f})), max_size=3),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIPELINES, max_size=3))
def test_involved_namespaces_of_pipelines_are_each_pipelines_in_turn(pipelines):
    # (the set of names is the oracle's; malformed stages — no field, several, not an object — read nothing)
    together = involved_namespaces(*pipelines)
    assert together == [n for p in pipelines for n in involved_namespaces(p)]
    assert sorted(together) == sorted(n for p in pipelines for n in _reads(p))


@pytest.mark.parametrize("views, name, definition", [
    ({}, "a", view("a")),
    ({"a": view("b")}, "b", view("a")),
    ({"a": view("b"), "b": view("c")}, "c", view("a")),
    ({}, "a", view("b", [lookup("a")])),
    ({"a": view("b")}, "b", view("c", [{"$unionWith": {"coll": "x", "pipeline": [{"$unionWith": "a"}]}}])),
])
def test_cycles_are_refused_with_5(views, name, definition):
    err = error(views, name, definition)
    assert err is not None and err.code == 5
    assert err.message.startswith(f"View cycle detected: db.{name} => db.{name} => ")


def test_cycle_message_lists_the_path_back_from_the_new_view():
    err = error({"a": view("b"), "b": view("c")}, "c", view("a"))
    assert err is not None and err.message == "View cycle detected: db.c => db.c => db.b => db.a => db.c"


def _chain(n: int) -> dict:
    """v1 -> v2 -> ... -> vn -> v(n+1) (not a view)."""
    return {f"v{i}": view(f"v{i + 1}") for i in range(1, n + 1)}


def test_a_chain_of_20_views_is_allowed_and_21_is_not():
    views = _chain(MAX_VIEW_DEPTH - 1)
    assert error(views, f"v{MAX_VIEW_DEPTH}", view(f"v{MAX_VIEW_DEPTH + 1}")) is None
    views = _chain(MAX_VIEW_DEPTH)
    for name, definition in ((f"v{MAX_VIEW_DEPTH + 1}", view("end")), ("v0", view("v1")),
                             ("v0", view("ok", [lookup("v1")]))):
        err = error(views, name, definition)
        assert err is not None and err.code == 165, name
        assert err.message == "View depth limit exceeded; maximum depth is 20"


def test_a_wide_tree_is_validated_in_linear_time():
    views = {f"v{i}": view(f"v{i + 1}", [lookup(f"v{i + 1}"), {"$unionWith": f"v{i + 1}"},
                                         {"$facet": {"f": [lookup(f"v{i + 1}")]}}])
             for i in range(2, MAX_VIEW_DEPTH + 1)}
    start = time.perf_counter()
    assert error(views, "v1", view("v2", [lookup("v2")] * 4)) is None
    assert time.perf_counter() - start < 1.0  # 4**20 paths, each view visited once


@pytest.mark.parametrize("views, name, definition", [
    ({"fil": view("coll", collation={"locale": "fil"})}, "zh", view("fil", collation={"locale": "zh"})),
    ({"fil": view("coll", collation={"locale": "fil"})}, "zh", view("coll", [lookup("fil")], {"locale": "zh"})),
    ({"fil": view("coll", collation={"locale": "fil"})}, "simple", view("fil")),
    ({"A": view("B", collation={"locale": "hsb"})}, "B", view("other", collation={"locale": "wae"})),
    ({"A": view("B", collation={"locale": "hsb"})}, "B", view("other")),
])
def test_views_of_different_collations_cannot_read_each_other(views, name, definition):
    err = error(views, name, definition)
    assert err is not None and err.code == 167
    assert "has a collation that does not match the collation of view" in err.message


def test_an_explicit_simple_collation_is_the_simple_one():
    assert error({"a": view("coll")}, "b", view("a", collation={"locale": "simple"})) is None


def test_a_collation_conflict_with_an_older_view_is_found_before_a_self_reference():
    """mongod walks children in the order its graph met them: the stored view before the new one."""
    views = {"fil": view("coll", collation={"locale": "fil"})}
    pipeline = [{"$lookup": {"from": "zh", "pipeline": [lookup("fil")], "as": "r"}}]
    err = error(views, "zh", view("coll", pipeline, {"locale": "zh"}))
    assert err is not None and err.code == 167


NAMES = ["a", "b", "c", "d", "e"]


def _reaches(edges: dict, start: str, goal: str) -> bool:
    stack, seen = list(edges.get(start, ())), set()
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges.get(node, ()))
    return False


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES + ["coll"]), min_size=1, max_size=3),
                       max_size=4),
       st.sampled_from(NAMES), st.lists(st.sampled_from(NAMES + ["coll"]), min_size=1, max_size=3))
def test_property_refused_exactly_when_a_cycle_closes(existing, name, targets):
    """Against a reference model over acyclic stored graphs of at most 5 views (never too deep):
    the new view is refused (5) exactly when one of the names it reads leads back to it."""
    existing.pop(name, None)
    if any(_reaches(existing, n, n) for n in existing):
        return  # the stored graph itself must be acyclic (create never lets a cycle in)
    views = {n: view(t[0], [lookup(x) for x in t[1:]]) for n, t in existing.items()}
    edges = {**existing, name: targets}
    err = error(views, name, view(targets[0], [lookup(x) for x in targets[1:]]))
    if _reaches(edges, name, name):
        assert err is not None and err.code == 5
    else:
        assert err is None
