"""MongoDB's projection jstests ported to pymongo against a real Tidemark server: the documents a
find (and an aggregation ``$project``) returns for inclusion, exclusion, computed, positional,
``$elemMatch``, ``$slice`` and ``$meta`` projections, and the error codes of malformed ones.

Ported from mongodb/mongo with MongoDB 7.0's behaviour as the reference:

- ``jstests/core/query/project/``: ``coalesce.js``, ``computed_projections.js``,
  ``id_partial_projection.js``, ``positional_projection.js``,
  ``positional_projection_multiple_array_fields.js``, ``proj_key1.js``, ``project_with_collation.js``,
  ``projection_conflicts.js``, ``projection_dotted_paths.js`` (results, not covered-plan checks),
  ``projection_expr_mod.js``, ``projection_meta_index_key.js`` (results only),
  ``projection_semantics.js`` (find, aggregate and a time-series collection), ``projection_with_hashed_index.js``
  (results only), ``slice1.js``;
- ``jstests/core/query/elemmatch/elemmatch_projection.js``, ``jstests/core/query/find_projection_meta_errors.js``;
- ``jstests/aggregation/sources/project/``: ``error_project_subfield_with_existing_expr.js``,
  ``exclusion_projection_does_not_affect_field_order.js``, ``handle_missing_subpath.js``,
  ``id_meta_projection.js``, ``inclusion_accepts_all_numeric_types.js``,
  ``match_on_meta_exclusion_projection.js``, ``nested_dotted_common_prefix.js``, ``project_id.js``.

Explain shapes, covered-plan checks, plan-cache checks and SBE-only checks are left out. Where the
jstest's data allows (no positional / ``$elemMatch`` / find ``$slice``, which mongod refuses on views),
the same find also runs on a time-series collection holding the same documents (plus its time field,
removed before comparing). A Hypothesis property checks inclusion and exclusion of dotted paths over
nested documents and arrays against a reference model of projection_semantics.js's rules.
"""

from __future__ import annotations

import datetime as dt
import math

import pytest
from bson import DBRef, Decimal128, Int64
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

from tidemark.query.values import compare  # BSON order: the reference the sort keys must follow

pytestmark = pytest.mark.commands("insert", "find", "aggregate", "getMore", "createIndexes", "findAndModify",
                                  "create", "drop")

BAD_VALUE = 2
QUERY_FEATURE_NOT_ALLOWED = 224
T0 = dt.datetime(2024, 1, 1)

# Known differences from MongoDB 7.0, one reason per cause (each used by strict xfails below).


HYPOTHESIS = settings(max_examples=40, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def find(coll, filter=None, projection=None, **kw) -> list:
    """The documents of a ``find`` (all batches), in natural order unless ``sort`` is given."""
    return list(coll.find(filter or {}, projection, **kw))


def find_fails(coll, filter, projection, *codes, **kw) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        find(coll, filter, projection, **kw)
    if codes:
        assert info.value.code in codes, f"{projection}: {info.value.code} ({info.value}), expected {codes}"
    return info.value


def agg(coll, pipeline, **kw) -> list:
    return coll.database.command("aggregate", coll.name, pipeline=pipeline, cursor={}, **kw)["cursor"]["firstBatch"]


def agg_fails(coll, pipeline, *codes) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        agg(coll, pipeline)
    if codes:
        assert info.value.code in codes, f"{pipeline}: {info.value.code} ({info.value}), expected {codes}"
    return info.value


def ordered(value):
    """A form of a document whose equality also checks field order (Python dicts ignore it)."""
    if isinstance(value, dict):
        return [(k, ordered(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def make_ts(db, docs, name="ts"):
    """A time-series collection holding ``docs`` (each with the time field ``t`` added)."""
    db.create_collection(name, timeseries={"timeField": "t"})
    if docs:
        db[name].insert_many([{**d, "t": T0} for d in docs])
    return db[name]


def without_t(docs: list) -> list:
    return [{k: v for k, v in d.items() if k != "t"} for d in docs]


def single(db, query, projection, doc, *, ts=True):
    """positional_projection.js / slice1.js ``testSingleDocument``: insert one document, find it with
    ``projection`` and return the result without ``_id`` (also from a time-series collection when
    ``ts``: the answers must agree)."""
    db.drop_collection("c")
    db.c.insert_one(dict(doc))
    out = db.c.find_one(query, projection)
    out.pop("_id", None)
    if ts:
        db.drop_collection("ts")
        ts_out = make_ts(db, [doc]).find_one(query, projection)
        ts_out.pop("_id", None)
        ts_out.pop("t", None)
        assert ts_out == out, f"time-series {ts_out} != regular {out}"
    return out


# --------------------------------------------------------------------------------------------------
# projection_semantics.js: a table of (projection, input, expected), run by find, by aggregate and on a
# time-series collection. ``_id`` is added to input and expected (unless the projection drops it).
# --------------------------------------------------------------------------------------------------

SEMANTICS = [
    # top-level inclusion
    ({"a": 1}, {"a": "demo", "b": "other", "x": "extra"}, {"a": "demo"}),
    ({"a": 1}, {"a": "demo", "aWSuffix": "other"}, {"a": "demo"}),
    ({"a": 1}, {"a": None, "b": "other"}, {"a": None}),
    ({"a": 1}, {"b": "other", "x": "extra"}, {}),
    ({"a": 1}, {}, {}),
    *[({"a": 1}, {"a": v}, {"a": v}) for v in (
        None, {}, [], {"x": 1, "b": "scalar"}, "scalar", {"b": {}}, [None], ["scalar"], [[]], [{}], [1, {}, 2],
        [[1, 2], [{}], 2], [{"b": "scalar"}])],
    ({"a": 1, "_id": 0}, {"a": "demo", "b": "other"}, {"a": "demo"}),
    ({"a": 1, "_id": 0}, {"b": "other"}, {}),
    ({"a": 1, "_id": 0}, {"a": [{"b": "scalar"}]}, {"a": [{"b": "scalar"}]}),
    # one level of nesting
    ({"a.b": 1}, {"a": {"b": "demo", "y": "extra"}, "x": "extra"}, {"a": {"b": "demo"}}),
    ({"a.b": 1}, {"a": {"b": "demo", "_id": "extra"}}, {"a": {"b": "demo"}}),
    ({"a.b": 1}, {"a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}], "x": "extra"}, {"a": [{"b": 1}, {"b": 2}]}),
    ({"a.b": 1}, {"a": [{"b": 1, "c": 1}, {"c": 2}], "x": "extra"}, {"a": [{"b": 1}, {}]}),
    ({"a.b": 1}, {"b": "other", "x": "extra"}, {}),
    ({"a.b": 1}, {"a": {}}, {"a": {}}),
    ({"a.b": 1}, {"a": "scalar"}, {}),
    ({"a.b": 1, "_id": 0}, {"a": [], "x": "extra"}, {"a": []}),
    ({"a.b": 1, "_id": 0}, {"a": [{}, {}]}, {"a": [{}, {}]}),
    ({"a.b": 1, "_id": 0}, {"a": ["scalar", "scalar"]}, {"a": []}),
    ({"a.b": 1, "_id": 0}, {"a": [None]}, {"a": []}),
    ({"a.b": 1, "_id": 0}, {"a": ["scalar", {}, "scalar", {"c": 1}]}, {"a": [{}, {}]}),
    ({"a.b": 1, "_id": 0}, {"a": [[]]}, {"a": [[]]}),
    ({"a.b": 1, "_id": 0}, {"a": [[1, 2, 3]]}, {"a": [[]]}),
    ({"a.b": 1, "_id": 0}, {"a": [[1, {"b": 1}, {"b": 2, "c": 2}, "scalar"]]}, {"a": [[{"b": 1}, {"b": 2}]]}),
    ({"a.b": 1, "_id": 0},
     {"a": [["x", {"b": 1}, {"b": 2, "c": 2}, "x"], [[{"b": 1}]], [{"b": 1}, [{"b": 2}], [[{"b": [2]}]]]]},
     {"a": [[{"b": 1}, {"b": 2}], [[{"b": 1}]], [{"b": 1}, [{"b": 2}], [[{"b": [2]}]]]]}),
    ({"a.b": 1, "_id": 0}, {"a": [[], [[], [], [1], [{"c": 1}]], {"b": 1}]},
     {"a": [[], [[], [], [], [{}]], {"b": 1}]}),
    ({"a.b": 1, "a.c": 1, "_id": 0}, {"a": {"b": "scalar", "c": "scalar", "d": "extra"}},
     {"a": {"b": "scalar", "c": "scalar"}}),
    ({"a.b": 1, "a.c": 1, "_id": 0}, {"a": [{"b": 1, "c": 2}, {"b": 3, "d": 4}]}, {"a": [{"b": 1, "c": 2}, {"b": 3}]}),
    ({"a.b": 1, "a.c": 1, "_id": 0}, {"a": [{"b": 1, "c": 2}, "extra", {"b": 3, "c": 4}]},
     {"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}]}),
    ({"a.b": 1, "a.c": 1, "_id": 0}, {"a": {"d": "extra"}}, {"a": {}}),
    # several levels of nesting
    ({"a.b.c": 1, "_id": 0}, {"a": {"b": {"c": "demo", "z": "extra"}, "y": "extra"}, "x": "extra"},
     {"a": {"b": {"c": "demo"}}}),
    ({"a.b.c": 1, "_id": 0}, {"a": [{"b": [{"c": 1, "d": 1}, {"c": 2, "d": 2}]}, {"b": [{"c": 3, "d": 3}]}]},
     {"a": [{"b": [{"c": 1}, {"c": 2}]}, {"b": [{"c": 3}]}]}),
    ({"a.b.c": 1, "_id": 0},
     {"a": [{"bPrime": [{"c": "x"}]}, {"b": [{"cPrime": "x", "d": 1}]}, {"b": [{"c": 3, "d": 3}, {"cPrime": "x"}, {"c": 5}]},
            {"bPrime": {"x": 1}}]},
     {"a": [{}, {"b": [{}]}, {"b": [{"c": 3}, {}, {"c": 5}]}, {}]}),
    ({"a.b.c": 1, "_id": 0}, {"a": "scalar"}, {}),
    ({"a.b.c": 1, "_id": 0}, {"a": None}, {}),
    ({"a.b.c": 1, "_id": 0}, {"a": {"bPrime": {"c": 1}}}, {"a": {}}),
    ({"a.b.c": 1, "_id": 0}, {"a": {"b": "scalar"}}, {"a": {}}),
    ({"a.b.c": 1, "_id": 0}, {"a": {"b": {"x": 1, "y": 1}}}, {"a": {"b": {}}}),
    ({"a.b.c": 1, "_id": 0}, {"a": {"b": ["scalar"]}}, {"a": {"b": []}}),
    ({"a.b.c": 1, "_id": 0}, {"a": [{"b": "scalar"}]}, {"a": [{}]}),
    ({"a.b.c": 1, "_id": 0}, {"a": [1, {"b": [[1, 2], [{}], 2]}, 2]}, {"a": [{"b": [[], [{}]]}]}),
    ({"a.b.c": 1, "_id": 0}, {"a": [[1, 2], [{"b": [[1, 2], [{"c": [[1, 2], [{}], 2]}], 2]}], 2]},
     {"a": [[], [{"b": [[], [{"c": [[1, 2], [{}], 2]}]]}]]}),
    ({"a.b.c": 1, "_id": 0}, {"a": [[], [[], [], [1], [{"x": 1}]], {"b": 1}]}, {"a": [[], [[], [], [], [{}]], {}]}),
    ({"a.b.c": 1, "_id": 0}, {"a": {"x": 1, "b": [[1, 2], [{"c": [[1, 2], [{}], 2]}], 2]}},
     {"a": {"b": [[], [{"c": [[1, 2], [{}], 2]}]]}}),
    # exclusion
    ({"a": 0}, {"a": 1, "b": 1, "c": 1}, {"b": 1, "c": 1}),
    ({"a": 0, "b": 0}, {"a": 1, "b": 1, "c": 1}, {"c": 1}),
    ({"a.b": 0}, {"a": {"b": 1, "c": 1, "d": 1}, "x": {"y": 1, "z": 1}}, {"a": {"c": 1, "d": 1}, "x": {"y": 1, "z": 1}}),
    ({"a.b": 0}, {"a": ["scalar", {"b": 1, "c": 1, "d": 1}, {"b": 2, "c": 2}, {"b": 3}]},
     {"a": ["scalar", {"c": 1, "d": 1}, {"c": 2}, {}]}),
    ({"a.b": 0, "a.c": 0}, {"a": [{"b": 1, "c": 1, "d": 1}, {"b": 2, "c": 2}, {"b": 3}]}, {"a": [{"d": 1}, {}, {}]}),
    ({"a.b": 0}, {"a": []}, {"a": []}),
    ({"a.b.c": 0}, {"a": [[], [{"b": [[1, 2], {"c": 1, "d": 1}]}]]}, {"a": [[], [{"b": [[1, 2], {"d": 1}]}]]}),
    # computed fields
    ({"a": {"$literal": 0}}, {"a": 1, "b": 1, "c": 1}, {"a": 0}),
    ({"a": {"$literal": 0}, "b": "string"}, {"a": 1, "b": 1, "c": 1}, {"a": 0, "b": "string"}),
    ({"a.b": "new value"}, {"a": {"b": 1, "c": 1, "d": 1}, "x": {"y": 1}}, {"a": {"b": "new value"}}),
    ({"a.b": "new value"}, {"a": ["scalar", {"b": 1, "c": 1, "d": 1}, {"b": 2, "c": 2}, {"b": 3}]},
     {"a": [{"b": "new value"}] * 4}),
    ({"a.b": "new value", "a.c": "new C"}, {"a": [{"b": 1, "c": 1, "d": 1}, {"b": 2, "c": 2}, {"b": 3}]},
     {"a": [{"b": "new value", "c": "new C"}] * 3}),
    ({"a.b": "new value"}, {"a": []}, {"a": []}),
    ({"a.b.c": "new value"}, {"a": [[], [{"b": [[1, 2], {"c": 1, "d": 1}]}]]},
     {"a": [[], [{"b": [[{"c": "new value"}, {"c": "new value"}], {"c": "new value"}]}]]}),
    # a numeric path component names a field, never an array index
    ({"_id": 0, "a.2": 1}, {"a": {"2": 99}, "b": 1}, {"a": {"2": 99}}),
    ({"_id": 0, "a.2": 1}, {"a": [0, 1, 2, 3, 4]}, {"a": []}),
    ({"_id": 0, "a.2": 1}, {"a": [{"x": 1}, {"y": 1}, {"z": 1}]}, {"a": [{}, {}, {}]}),
    ({"_id": 0, "a.2": 1}, {"a": [0, 1, 2, 3, 4, {"obj": 123}, {"2": 123}]}, {"a": [{}, {"2": 123}]}),
    # _id alone
    ({"_id": 1}, {}, {}),
    ({"_id": 0}, {}, {}),
    ({"_id": 0}, {"a": 1, "b": 1}, {"a": 1, "b": 1}),
]


@pytest.fixture(scope="module")
def semantics(client):
    """One regular and one time-series collection holding every SEMANTICS input (``_id`` = row)."""
    database = client["t_jstests_projection_semantics"]
    client.drop_database(database.name)
    docs = [{"_id": i, **row[1]} for i, row in enumerate(SEMANTICS)]
    database.c.insert_many(docs)
    make_ts(database, docs)
    yield database
    client.drop_database(database.name)


def _expected(i: int, projection: dict, expected: dict) -> dict:
    return expected if projection.get("_id") == 0 else {"_id": i, **expected}


@pytest.mark.parametrize("i", range(len(SEMANTICS)), ids=lambda i: f"{i}-{SEMANTICS[i][0]}")
def test_projection_semantics_find(semantics, i):
    projection, _, expected = SEMANTICS[i]
    want = _expected(i, projection, expected)
    assert ordered(semantics.c.find_one({"_id": i}, projection)) == ordered(want)


@pytest.mark.parametrize("i", range(len(SEMANTICS)), ids=lambda i: f"{i}-{SEMANTICS[i][0]}")
def test_projection_semantics_aggregate(semantics, i):
    projection, _, expected = SEMANTICS[i]
    assert agg(semantics.c, [{"$match": {"_id": i}}, {"$project": projection}]) == [_expected(i, projection, expected)]


@pytest.mark.parametrize("i", range(len(SEMANTICS)), ids=lambda i: f"{i}-{SEMANTICS[i][0]}")
def test_projection_semantics_time_series(semantics, i):
    projection, _, expected = SEMANTICS[i]
    assert without_t(find(semantics.ts, {"_id": i}, projection)) == [_expected(i, projection, expected)]


# --------------------------------------------------------------------------------------------------
# projection_semantics.js as a property: inclusion / exclusion of dotted paths over nested documents
# and arrays, against a reference model of the rules the jstest states.
# --------------------------------------------------------------------------------------------------

_FIELDS = ("a", "b", "c")
_scalars = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["x", "y"]))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(_FIELDS), inner, max_size=3)),
    max_leaves=10)
_docs = st.dictionaries(st.sampled_from(_FIELDS), _values, max_size=3)
_paths = st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=3).map(".".join)


def _no_collisions(paths: list[str]) -> bool:
    return not any(p == q or q.startswith(p + ".") for p in paths for q in paths if p is not q)


def _tree(paths: list[str]) -> dict:
    root: dict = {}
    for path in paths:
        node = root
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = True
    return root


def model_include(doc: dict, tree: dict) -> dict:
    """Inclusion: keep the named paths; through an array, documents are projected, arrays recursed
    and scalars dropped; a non-document on the way is dropped."""
    out = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is True:
            out[key] = value
        elif node is not None:
            if isinstance(value, dict):
                out[key] = model_include(value, node)
            elif isinstance(value, list):
                out[key] = _model_include_array(value, node)
    return out


def _model_include_array(arr: list, tree: dict) -> list:
    return [model_include(v, tree) if isinstance(v, dict) else _model_include_array(v, tree)
            for v in arr if isinstance(v, (dict, list))]


def model_exclude(doc: dict, tree: dict) -> dict:
    """Exclusion: drop the named paths; everything else (scalars in arrays too) stays where it was."""
    out = {}
    for key, value in doc.items():
        node = tree.get(key)
        if node is True:
            continue
        if node is None:
            out[key] = value
        elif isinstance(value, dict):
            out[key] = model_exclude(value, node)
        elif isinstance(value, list):
            out[key] = _model_exclude_array(value, node)
        else:
            out[key] = value
    return out


def _model_exclude_array(arr: list, tree: dict) -> list:
    return [model_exclude(v, tree) if isinstance(v, dict)
            else _model_exclude_array(v, tree) if isinstance(v, list) else v for v in arr]


@HYPOTHESIS
@given(doc=_docs, paths=st.lists(_paths, min_size=1, max_size=3, unique=True).filter(_no_collisions),
       include=st.booleans(), keep_id=st.booleans())
def test_projection_semantics_reference_model(db, doc, paths, include, keep_id):
    """projection_semantics.js's rules, checked over generated documents: find and $project agree
    with the model (field order included)."""
    db.drop_collection("c")
    db.c.insert_one({"_id": 1, **doc})
    projection: dict = {p: int(include) for p in paths}
    if not keep_id:
        projection["_id"] = 0
    tree = _tree(paths)
    projected = model_include(doc, tree) if include else model_exclude(doc, tree)
    want = {"_id": 1, **projected} if keep_id else projected
    assert ordered(db.c.find_one({}, projection)) == ordered(want)
    assert ordered(agg(db.c, [{"$project": projection}])[0]) == ordered(want)


# --------------------------------------------------------------------------------------------------
# positional_projection.js, positional_projection_multiple_array_fields.js
# --------------------------------------------------------------------------------------------------

X = [{"a": 1, "b": 2}, {"a": 2, "c": 3}, {"a": 1, "d": 5}]
Y = [{"aa": 1, "bb": 2}, {"aa": 2, "cc": 3}, {"aa": 1, "dd": 5}]

POSITIONAL = [
    ({"x.a": 2}, {"x.$": 1}, {"x": X, "y": Y}, {"x": [{"a": 2, "c": 3}]}),
    ({"x.a": 1}, {"x.$": 1}, {"x": X, "y": Y}, {"x": [{"a": 1, "b": 2}]}),
    ({"x.a": 1}, {"x.$": 1}, {"x": [{"a": 1, "b": 3}, {"a": -6, "c": 3}]}, {"x": [{"a": 1, "b": 3}]}),
    ({"y.dd": 5}, {"y.$": 1}, {"x": X, "y": Y}, {"y": [{"aa": 1, "dd": 5}]}),
    ({"x.y.a": 1}, {"x.y.$": 1}, {"x": {"y": [{"a": 1, "b": 1}, {"a": 1, "b": 2}]}}, {"x": {"y": [{"a": 1, "b": 1}]}}),
    ({}, {"g.$": 1}, {"x": X, "y": Y}, {}),
    ({"a.b": 1}, {"g.$": 1}, {"a": {"b": 1}}, {}),
    ({"x": 1}, {"a.$": 1}, {"x": 1}, {}),
    ({"x": {"$gt": 0}}, {"a.b.c.$": 1}, {"x": [-1, 1, 2], "a": {"b": {"d": [1, 2, 3], "f": 456}, "e": 123}},
     {"a": {"b": {}}}),
    ({"x": 1}, {"a.b.c.$": 1}, {"x": [1], "a": [{"b": [[[{"c": 1, "d": 2}]]]}]}, {"a": [{"b": [[[{"c": 1}]]]}]}),
    ({"x": {"$gt": 0}}, {"a.b.c.$": 1}, {"x": [-1, 1, 2], "a": {"b": {"c": {"d": {"e": 1}}}}},
     {"a": {"b": {"c": {"d": {"e": 1}}}}}),
    ({"x": {"$gt": 0}}, {"a.b.c.$": 1}, {"x": [-1, 1, 2], "a": {"b": {"c": 123}}}, {"a": {"b": {"c": 123}}}),
    ({"x.y.z": 1}, {"a.b.c.$": 1},
     {"x": {"y": {"z": [0, 1, 2]}}, "a": [{"b": {"c": [1, 2, 3]}}, {"b": {"c": [4, 5, 6]}}, {"b": {"c": [7, 8, 9]}}]},
     {"a": [{"b": {"c": [4, 5, 6]}}]}),
    ({"x.y.z": 1}, {"a.b.c.$": 1},
     {"x": {"y": {"z": [0, 1, 2]}}, "a": {"b": [{"c": [1, 2, 3]}, {"c": [4, 5, 6]}, {"c": [7, 8, 9]}]}},
     {"a": {"b": [{"c": [4, 5, 6]}]}}),
    ({"x.y.z": 1}, {"a.b.c.$": 1}, {"x": {"y": {"z": [0, 1, 2]}}, "a": {"b": {"c": [1, 2, 3]}}}, {"a": {"b": {"c": [2]}}}),
    ({"x": {"$elemMatch": {"$gt": 1, "$lt": 3}}}, {"x.$": 1}, {"x": [1, 2, 3]}, {"x": [2]}),
    ({"x": {"$elemMatch": {"y": {"$gt": 1}}}}, {"x.$": 1}, {"x": [{"y": 1}, {"y": 2}, {"y": 3}]}, {"x": [{"y": 2}]}),
    ({"x": {"$elemMatch": {"a": 1, "b": 2}}}, {"x.$": 1}, {"x": X}, {"x": [{"a": 1, "b": 2}]}),
    ({"a": {"$elemMatch": {"$elemMatch": {"$eq": 3}}}}, {"b.$": 1},
     {"a": [[1, 2], [3, 4]], "b": [[5, 6], [7, 8]]}, {"b": [[7, 8]]}),
    ({"a": {"$elemMatch": {"p": {"$elemMatch": {"$eq": 2}}}}}, {"b.$": 1},
     {"a": [{"p": [1, 2], "q": [3, 4]}, {"p": [5, 6], "q": [7, 8]}], "b": [11, 12]}, {"b": [11]}),
    ({"a": {"$elemMatch": {"p": {"$elemMatch": {"$eq": 6}}}}}, {"b.$": 1},
     {"a": [{"p": [1, 2], "q": [3, 4]}, {"p": [5, 6], "q": [7, 8]}], "b": [11, 12]}, {"b": [12]}),
    ({"a": {"$elemMatch": {"q": {"$elemMatch": {"$eq": 7}}}}}, {"b.$": 1},
     {"a": [{"p": [1, 2], "q": [3, 4]}, {"p": [5, 6], "q": [7, 8]}], "b": [11, 12]}, {"b": [12]}),
    ({"$and": [{"a": 1}, {"a": 2}, {"a": 3}]}, {"b.$": 1}, {"a": [1, 2, 3], "b": [4, 5, 6]}, {"b": [6]}),
    ({"$and": [{"a": 3}, {"a": 2}, {"a": 1}]}, {"b.$": 1}, {"a": [1, 2, 3], "b": [4, 5, 6]}, {"b": [4]}),
    ({"a": {"$in": [2, 3]}}, {"b.$": 1}, {"a": [1, 2, 3], "b": [4, 5, 6]}, {"b": [5]}),
    ({"$or": [{"a": 2}, {"a": 3}]}, {"b.$": 1}, {"a": [1, 2, 3], "b": [4, 5, 6]}, {"b": [5]}),
    ({"a": {"$elemMatch": {"y": {"$exists": True}}}}, {"a.$": 1}, {"a": [{"y": 1}, {"y": 2}]}, {"a": [{"y": 1}]}),
    ({"a": {"$elemMatch": {"y": {"$type": ["array"]}}}}, {"a.$": 1}, {"a": [{"y": 1}, {"y": []}]}, {"a": [{"y": []}]}),
    ({"a": {"$elemMatch": {"y": {"$type": ["array", "double"]}}}}, {"a.$": 1}, {"a": [{"y": 1.0}, {"y": []}]},
     {"a": [{"y": 1.0}]}),
    # positional_projection_multiple_array_fields.js
    ({"z": 13}, {"a": {"$slice": 2}}, {"a": [1, 2, 3], "z": [11, 12, 13]}, {"a": [1, 2], "z": [11, 12, 13]}),
    ({"z": 13}, {"a": {"$slice": 2}, "z.$": 1}, {"a": [1, 2, 3], "z": [11, 12, 13]}, {"a": [1, 2], "z": [13]}),
    ({"importing.foo": "b"}, {"jobs": {"$slice": 2}, "importing.$": 1},
     {"importing": [{"foo": "a"}, {"foo": "b"}], "jobs": [{"num": 1}, {"num": 2}, {"num": 3}]},
     {"importing": [{"foo": "b"}], "jobs": [{"num": 1}, {"num": 2}]}),
    ({"importing.foo": "b"}, {"jobs": {"$slice": -1}, "importing.$": 1},
     {"importing": [{"foo": "a"}, {"foo": "b"}], "jobs": [{"num": 1}, {"num": 2}, {"num": 3}]},
     {"importing": [{"foo": "b"}], "jobs": [{"num": 3}]}),
    ({"z": 12}, {"a.b": 1}, {"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}], "z": [11, 12, 13]}, {"a": [{"b": 1}, {"b": 3}]}),
    ({"z": 12}, {"a.b": 1, "z.$": 1}, {"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}], "z": [11, 12, 13]},
     {"a": [{"b": 1}, {"b": 3}], "z": [12]}),
    ({"a": 2}, {"b.$": 1}, {"a": [1, 2, 3], "b": ["one", "two", "three"]}, {"b": ["two"]}),
    ({"a.b": 2}, {"c.d.$": 1}, {"a": {"b": [1, 2, 3]}, "c": {"d": ["one", "two", "three"]}}, {"c": {"d": ["two"]}}),
]


@pytest.mark.parametrize("query, projection, doc, expected", POSITIONAL)
def test_positional_projection(db, query, projection, doc, expected):
    # mongod refuses positional and find $slice projections on views: regular collection only
    assert single(db, query, projection, doc, ts=False) == expected


def test_positional_projection_with_indexes_and_batches(db):
    """positional_projection.js: the same answers through an index and across getMore batches."""
    db.c.create_index("y.d")
    db.c.insert_one({"_id": 0, "x": X, "y": [{"c": 1, "d": 2}, {"c": 3, "d": 4}]})
    assert find(db.c, {"y.d": 4}, {"y.$": 1}) == [{"_id": 0, "y": [{"c": 3, "d": 4}]}]
    db.c.drop()
    db.c.insert_many([{"_id": 0, "group": 3, "x": X, "y": Y},
                      {"_id": 1, "group": 3, "x": [{"a": 1, "b": 3}, {"a": -6, "c": 3}]}])
    out = find(db.c, {"x.b": 2}, {"x.$": 1}, sort=[("_id", 1)], batch_size=1)
    assert [d["x"][0]["b"] for d in out] == [2]
    # several arrays in the filter: no error (the answer is unspecified)
    db.c.drop()
    db.c.insert_one({"a": [1, 2, 3], "b": [4, 5, 6], "c": [7, 8, 9]})
    find(db.c, {"a": 2, "b": 5}, {"c.$": 1})


@pytest.mark.parametrize("query, projection, code", [
    ({"x": 1}, {"x.$": {"$slice": 1}}, 31271),
    ({"x.a": 2}, {"x.$": 1, "y": 0}, 31254),
    ({"x.a": 1, "y.aa": 1}, {"x.$": 1, "y.$": 1}, 31276),
    ({}, {"x.$": 1}, 51246),
    ({}, {".$": 1}, 5392900),
    ({"z": 11}, {"z.$": 1, "a": {"$elemMatch": {"b": 1}}}, 31255),
    ({"a.b": 1}, {"a.$": 1, "a.b": 1}, 31249),
    ({"a.b": 1}, {"z.$": 1, "a.$": 1}, 31276),
    ({"x": 1}, {"x.$": "literal"}, 31308),
])
def test_positional_projection_errors(db, query, projection, code):
    db.c.insert_one({"x": X, "y": [{"aa": 1}], "z": [11], "a": [{"b": 1}]})
    find_fails(db.c, query, projection, code)


@pytest.mark.parametrize("query, projection", [
    ({"b": [4, 5, 6]}, {"c.$": 1}),
    ({"$or": [{"a": 1}, {"b": 5}]}, {"a.$": 1}),
    ({"$or": [{"a": 0}, {"b": 5}]}, {"a.$": 1}),
    ({"$nor": [{"a": -1}, {"a": -2}]}, {"a.$": 1}),
    ({"a": {"$not": {"$elemMatch": {"$eq": 100}}}}, {"a.$": 1}),
])
def test_positional_projection_without_recorded_position_fails(db, query, projection):
    """positional_projection.js: no array position comes out of these filters (51246)."""
    db.c.insert_one({"a": [1, 2, 3], "b": [4, 5, 6], "c": [7, 8, 9]})
    find_fails(db.c, query, projection, 51246)


def test_positional_projection_on_shorter_parallel_array_fails(db):
    """positional_projection_multiple_array_fields.js: the matched position lies past the projected array."""
    db.c.insert_one({"_id": 3, "a": [4, 5, 6], "b": ["four", "five"]})
    find_fails(db.c, {"a": 6}, {"b.$": 1}, 51247)


def test_positional_projection_refused_on_time_series(db):
    """positional_projection.js is tagged incompatible_with_views: a view's find becomes a $project,
    where a positional projection is 31324."""
    ts = make_ts(db, [{"_id": 1, "x": [1, 2]}])
    find_fails(ts, {"x": 2}, {"x.$": 1}, 31324)
    agg_fails(db.c, [{"$project": {"x.$": 1}}], 31324)


# --------------------------------------------------------------------------------------------------
# elemmatch_projection.js
# --------------------------------------------------------------------------------------------------

D = dt.datetime(2020, 5, 17, 1, 2, 3)

ELEM_MATCH = [
    ({"x": {"$elemMatch": {"a": -6}}}, {"x": [{"a": 1, "b": 4}, {"a": -6, "c": 3}]}, {"x": [{"a": -6, "c": 3}]}),
    ({"x": {"$elemMatch": {"a": -6, "c": 3}}}, {"x": [{"a": 1, "b": 4}, {"a": -6, "c": 3}]}, {"x": [{"a": -6, "c": 3}]}),
    ({"x": {"$elemMatch": {"a": {"$lt": 1}}}}, {"x": [{"a": 1, "b": 4}, {"a": -6, "c": 3}]}, {"x": [{"a": -6, "c": 3}]}),
    ({"x": {"$elemMatch": {"a": {"$gt": 0, "$lt": 2}}}}, {"x": [{"a": 1, "b": 1}, {"a": 1, "b": 2}]},
     {"x": [{"a": 1, "b": 1}]}),
    ({"x": {"$elemMatch": {"$in": [100, 4, -123]}}}, {"x": [1, 2, 3, 4, 5]}, {"x": [4]}),
    ({"x": {"$elemMatch": {"a": {"$in": [1]}}}}, {"x": X}, {"x": [{"a": 1, "b": 2}]}),
    ({"x": {"$elemMatch": {"$nin": [4, 5, 6]}}}, {"x": [1, 2, 3, 4, 5]}, {"x": [1]}),
    ({"x": {"$elemMatch": {"$all": [1]}}}, {"x": [1, 2, 3, 4, 5]}, {"x": [1]}),
    ({"x": {"$elemMatch": {}}}, {"x": ["string", 123, [1, 2, 3], {"a": 1}]}, {"x": [[1, 2, 3]]}),
    ({"x": {"$elemMatch": {}}}, {"x": ["string", 123, {"a": 1}]}, {"x": [{"a": 1}]}),
    ({"x": {"$elemMatch": {"$elemMatch": {"$gt": 5, "$lt": 7}}}}, {"x": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]},
     {"x": [[4, 5, 6]]}),
    ({"x": {"$elemMatch": {"a": "string"}}}, {"x": [{"a": "string", "b": D}, {"a": 5, "b": 1.2}, {"a": "string2"}]},
     {"x": [{"a": "string", "b": D}]}),
    ({"x": {"$elemMatch": {"a": {"$regex": "ring2"}}}}, {"x": [{"a": "string"}, {"a": 5}, {"a": "string2", "b": D}]},
     {"x": [{"a": "string2", "b": D}]}),
    ({"x": {"$elemMatch": {"a": {"$type": 2}}}}, {"x": [{"a": 5}, {"a": "string", "b": D}]}, {"x": [{"a": "string", "b": D}]}),
    ({"x": {"$elemMatch": {"a": {"$ne": 1}}}}, {"x": X}, {"x": [{"a": 2, "c": 3}]}),
    ({"x": {"$elemMatch": {"d": {"$exists": True}}}}, {"x": X, "y": Y}, {"x": [{"a": 1, "d": 5}]}),
    ({"x": {"$elemMatch": {"a": {"$mod": [2, 0]}}}}, {"x": X, "y": Y}, {"x": [{"a": 2, "c": 3}]}),
    ({"_id": 0, "x": {"$elemMatch": {"a": 1}}, "y": {"$elemMatch": {"c": 3}}},
     {"x": [{"a": 1, "b": 2}, {"a": 3, "b": 4}], "y": [{"c": 1, "d": 2}, {"c": 3, "d": 4}]},
     {"x": [{"a": 1, "b": 2}], "y": [{"c": 3, "d": 4}]}),
    ({"x": {"$elemMatch": {"$gt": 2, "$lt": 4}}}, {"x": [1, 2, 4, 3, 5]}, {"x": [3]}),
    ({"x": {"$elemMatch": {"$or": [{"a": {"$eq": 4}}, {"$and": [{"a": {"$mod": [12, 0]}}, {"a": {"$mod": [15, 0]}}]}]}}},
     {"x": [{"a": 1}, {"a": 180}, {"a": 4}]}, {"x": [{"a": 180}]}),
    # (pymongo decodes the {$ref, $id} elements it gets back as DBRefs)
    ({"x": {"$elemMatch": {"$id": "id0"}}},
     {"x": [{"$ref": "o", "$id": "id0"}, {"$ref": "o", "$id": "id1"}]}, {"x": [DBRef("o", "id0")]}),
    ({"x": {"$elemMatch": {"$ref": "o2"}}},
     {"x": [{"$ref": "o", "$id": "id0"}, {"$ref": "o2", "$id": "id2"}]}, {"x": [DBRef("o2", "id2")]}),
    ({"x": {"$elemMatch": {"$gt": 2}}}, {"x": {"a": 123}, "d": 456}, {}),
    ({"x": {"$elemMatch": {"$gt": 2}}, "d": 1}, {"x": {"a": 123}, "d": 456}, {"d": 456}),
    ({"x": {"$elemMatch": {"$gt": 2}}, "d": 0}, {"x": {"a": 123}, "d": 456}, {}),
    ({"x": {"$elemMatch": {"$or": [{}, {}]}}}, {"x": ["string", 123, {"b": 123}]}, {"x": [{"b": 123}]}),
    ({"x": {"$elemMatch": {"$or": [{}, {}]}}}, {"x": ["string", 123, [1, 2, 3]]}, {"x": [[1, 2, 3]]}),
    ({"x": {"$elemMatch": {"$lt": 0}}}, {"x": [1, 2, 3]}, {}),
]


@pytest.mark.parametrize("projection, doc, expected", ELEM_MATCH)
def test_elem_match_projection(db, projection, doc, expected):
    assert single(db, {}, projection, doc, ts=False) == expected


def test_elem_match_projection_across_batches(db):
    db.c.insert_many([{"_id": 0, "x": X, "y": Y}, {"_id": 1, "x": [{"a": 1, "b": 3}, {"a": -6, "c": 3}]}])
    out = find(db.c, {}, {"x": {"$elemMatch": {"a": 1}}}, sort=[("_id", 1)], batch_size=1)
    assert [d["x"][0]["a"] for d in out] == [1, 1]


@pytest.mark.parametrize("projection, code", [
    ({"a.b": {"$elemMatch": {"x": 1}}}, 31275),
    ({"a": {"$elemMatch": 1}}, 31274),
    ({"a": {"$elemMatch": {"$jsonSchema": {}}}}, QUERY_FEATURE_NOT_ALLOWED),
    ({"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 5]}}}}, QUERY_FEATURE_NOT_ALLOWED),
    ({"a": {"$elemMatch": {"$where": "true"}}}, BAD_VALUE),
    ({"a": {"$elemMatch": {"$text": {"$search": "x"}}}}, BAD_VALUE),
])
def test_elem_match_projection_errors(db, projection, code):
    """The $elemMatch projection's argument is a filter with no special features ($expr, $jsonSchema,
    $where, $text: mongod's kBanAllSpecialFeatures), on a top-level field, given as an object."""
    db.c.insert_one({"a": [{"b": 5}]})
    find_fails(db.c, {}, projection, code)


def test_elem_match_refused_in_aggregation_project(db):
    db.c.insert_one({"a": [{"b": 5}]})
    agg_fails(db.c, [{"$project": {"a": {"$elemMatch": {"b": 5}}}}], 168)


# --------------------------------------------------------------------------------------------------
# slice1.js
# --------------------------------------------------------------------------------------------------

A11 = [0, 1, 2, 3, 4, 5, -5, -4, -3, -2, -1]


@pytest.mark.parametrize("arg, expected", [
    (3, [0, 1, 2]), (-3, [-3, -2, -1]), ([2, 3], [2, 3, 4]), ([-5, 4], [-5, -4, -3, -2]), ([-5, 10], [-5, -4, -3, -2, -1]),
    (0, []), (100, A11), (-100, A11), ([20, 2], []), ([-20, 2], [0, 1]),
])
def test_slice_projection(db, arg, expected):
    db.c.insert_one({"_id": 1, "a": A11, "b": 1, "c": 1})
    assert db.c.find_one({}, {"a": {"$slice": arg}}) == {"_id": 1, "a": expected, "b": 1, "c": 1}


def test_slice_with_inclusion_and_exclusion(db):
    db.c.insert_one({"_id": 1, "a": A11, "b": 1, "c": 1})
    assert db.c.find_one({}, {"a": {"$slice": 3}, "b": True}) == {"_id": 1, "a": [0, 1, 2], "b": 1}
    assert db.c.find_one({}, {"a": {"$slice": 3}, "b": False}) == {"_id": 1, "a": [0, 1, 2], "c": 1}
    db.c.drop()
    comments = [{"id": i, "text": t} for i, t in enumerate("abcd")]
    db.c.insert_one({"_id": 1, "comments": comments, "title": "foo"})
    assert db.c.find_one({}, {"comments": {"$slice": 2}, "irrelevantField": 1}) == {"_id": 1, "comments": comments[:2]}
    assert db.c.find_one({}, {"comments": {"$slice": 2}}) == {"_id": 1, "comments": comments[:2], "title": "foo"}
    assert db.c.find_one({}, {"comments": {"$slice": 2}, "title": 0}) == {"_id": 1, "comments": comments[:2]}
    # {_id: 1} with a find $slice makes an inclusion, {_id: 0} an exclusion
    db.c.drop()
    db.c.insert_one({"_id": 123, "a": [1, 2, 3], "b": 4})
    assert db.c.find_one({}, {"_id": 1, "a": {"$slice": [1, 1]}}) == {"_id": 123, "a": [2]}
    assert db.c.find_one({}, {"_id": 0, "a": {"$slice": [1, 1]}}) == {"a": [2], "b": 4}


def test_slice_nested_arrays_and_depth(db):
    db.c.insert_one({"_id": 1, "a": [[1, 1, 1], [2, 2, 2], [3, 3, 3]]})
    assert db.c.find_one({}, {"a": {"$slice": 1}})["a"] == [[1, 1, 1]]
    assert db.c.find_one({}, {"a": {"$slice": -1}})["a"] == [[3, 3, 3]]
    assert db.c.find_one({}, {"a": {"$slice": [0, 2]}})["a"] == [[1, 1, 1], [2, 2, 2]]
    db.c.drop()
    db.c.insert_many([{"_id": 1, "a": {"b": [1, 2, 3]}}, {"_id": 2, "a": [{"b": [1, 2, 3]}]},
                      {"_id": 3, "a": [[{"b": [1, 2, 3]}]]},
                      {"_id": 4, "a": [[{"b": [1, 2, 3]}], {"b": [1, 2, 3]}, 1, None, {}]}])
    assert find(db.c, {}, {"a": {"b": {"$slice": [1, 1]}}}, sort=[("_id", 1)]) == [
        {"_id": 1, "a": {"b": [2]}}, {"_id": 2, "a": [{"b": [2]}]}, {"_id": 3, "a": [[{"b": [1, 2, 3]}]]},
        {"_id": 4, "a": [[{"b": [1, 2, 3]}], {"b": [2]}, 1, None, {}]}]


DEEP = [{"b": {"c": [1, 2, 3], "d": 123}}, [{"b": {"c": [1, 2, 3], "d": 123}}, {"b": {"c": [4, 5, 6], "d": 456}}],
        {"b": [{"c": [1, 2, 3], "d": 123}, {"c": [4, 5, 6], "d": 456}]},
        {"b": [[{"c": [1, 2, 3], "d": 123}], [{"c": [4, 5, 6], "d": 456}]]}]


@pytest.mark.parametrize("projection, doc, expected", [
    ({"a.b.c.d.e": {"$slice": [1, 1]}}, {"a": [{"b": [{"c": [{"d": [{"e": [1, 2, 3]}]}]}]}]},
     {"a": [{"b": [{"c": [{"d": [{"e": [2]}]}]}]}]}),
    ({"a": {"b": {"c": {"$slice": [1, 1]}, "d": 1}}}, {"a": DEEP},
     {"a": [{"b": {"c": [2], "d": 123}}, DEEP[1], {"b": [{"c": [2], "d": 123}, {"c": [5], "d": 456}]}, DEEP[3]]}),
    ({"a": {"b": {"c": {"$slice": [1, 1]}, "d": 0}}}, {"a": DEEP},
     {"a": [{"b": {"c": [2]}}, [{"b": {"c": [1, 2, 3]}}, {"b": {"c": [4, 5, 6]}}], {"b": [{"c": [2]}, {"c": [5]}]},
            {"b": [[{"c": [1, 2, 3]}], [{"c": [4, 5, 6]}]]}]}),
    ({"a": {"b": {"c": {"$slice": [1, 1]}, "d": {"$add": [1, 2, 3]}}}}, {"a": DEEP},
     {"a": [{"b": {"c": [2], "d": 6}}, [{"b": {"c": [1, 2, 3], "d": 6}}, {"b": {"c": [4, 5, 6], "d": 6}}],
            {"b": [{"c": [2], "d": 6}, {"c": [5], "d": 6}]},
            {"b": [[{"c": [1, 2, 3], "d": 6}], [{"c": [4, 5, 6], "d": 6}]]}]}),
    ({"a": {"b": {"$slice": [1, 1]}}, "c": {"d": {"$slice": -1}}},
     {"a": [{"b": [1, 2, 3]}, [{"b": [1, 2, 3]}, {"b": [4, 5, 6]}], {"b": [[1, 2, 3], [4, 5, 6]]}],
      "c": [{"d": [1, 2, 3]}, [{"d": [1, 2, 3]}], {"d": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]}]},
     {"a": [{"b": [2]}, [{"b": [1, 2, 3]}, {"b": [4, 5, 6]}], {"b": [[4, 5, 6]]}],
      "c": [{"d": [3]}, [{"d": [1, 2, 3]}], {"d": [[7, 8, 9]]}]}),
    ({"a": {"$slice": 1}}, {"a": {"c": 123}}, {"a": {"c": 123}}),
    ({"a": {"$slice": 1}, "d": 1}, {"a": {"c": 123}, "d": 456}, {"a": {"c": 123}, "d": 456}),
    ({"a": {"$slice": 1}, "d": 0}, {"a": {"c": 123}, "d": 456}, {"a": {"c": 123}}),
    ({"a": {"$slice": 1}}, {"b": {"e": 123}}, {"b": {"e": 123}}),
    ({"a": {"$slice": 1}, "d": 1}, {"b": {"e": 123}, "d": 456}, {"d": 456}),
    ({"a": {"$slice": 1}, "d": 0}, {"b": {"e": 123}, "d": 456}, {"b": {"e": 123}}),
    ({"a.b.c": {"$slice": 1}}, {"a": [[[{"b": [[[{"c": [1, 2, 3]}]]]}]]]}, {"a": [[[{"b": [[[{"c": [1, 2, 3]}]]]}]]]}),
    ({"a.b.c": {"$slice": 1}, "d": 1}, {"a": [[[{"b": [[[{"c": [1, 2, 3]}]]]}]]], "d": 456},
     {"a": [[[{"b": [[[{"c": [1, 2, 3]}]]]}]]], "d": 456}),
    ({"a.b.c": {"$slice": 1}, "d": 0}, {"a": [[[{"b": [[[{"c": [1, 2, 3]}]]]}]]], "d": 456},
     {"a": [[[{"b": [[[{"c": [1, 2, 3]}]]]}]]]}),
    ({"e": 1, "a.b": {"$slice": 1}}, {"e": 123, "a": [[[{"b": [1, 2, 3], "d": 4, "f": 5}]]]},
     {"e": 123, "a": [[[{"b": [1, 2, 3]}]]]}),
])
def test_slice_through_nested_paths(db, projection, doc, expected):
    """slice1.js: $slice applies through one level of arrays of documents; deeper arrays are kept whole
    (their documents still filtered by an inclusion)."""
    assert single(db, {}, projection, doc, ts=False) == expected


@pytest.mark.parametrize("arg, code", [
    ("x", 28667), ([1], 28667), ([1, 2, 3], 28724), ([1, 0], 28724), ([1, -1], 28724), (["a", 1], 28724),
])
def test_slice_projection_bad_arguments(db, arg, code):
    """A find $slice that is no [skip, positive limit] pair falls back to the $slice expression
    (projection_parser.cpp), which then fails as that expression fails."""
    db.c.insert_one({"a": [1, 2, 3]})
    find_fails(db.c, {}, {"a": {"$slice": arg}}, code)


# --------------------------------------------------------------------------------------------------
# projection_conflicts.js, error_project_subfield_with_existing_expr.js, nested_dotted_common_prefix.js
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("projection", [
    {"a.b": 1, "a": {"b": "$$REMOVE"}},
    {"a.b": 1, "a": {"b": {"c": 1}}}, {"a": {"b": {"c": 1}}, "a.b": 1},
    {"a": 1, "a.b": 1}, {"a.b": 1, "a": 1}, {"a.b": 1, "a.b.c": 1},
    {"a.b": 0, "a": {"b": {"c": 0}}}, {"a": {"b": {"c": 0}}, "a.b": 0},
    {"a": 0, "a.b": 0}, {"a.b": 0, "a": 0}, {"a.b": 0, "a.b.c": 0},
], ids=str)
def test_projection_path_collisions(db, projection):
    db.c.insert_one({"a": {"b": 1}})
    find_fails(db.c, {}, projection, 31249, 31250)
    agg_fails(db.c, [{"$project": projection}], 31249, 31250)


@pytest.mark.parametrize("projection, code", [
    ({"x": {"$add": [1]}, "x.b": 1}, 31249),
    ({"x.b": 1, "x": {"$add": [1]}}, 31250),
    ({"x": {"b": 1}, "x.b": 1}, 31250),
    ({"x.b": 1, "x": {"b": 1}}, 31250),
])
def test_project_subfield_of_existing_expression(db, projection, code):
    db.c.insert_one({})
    agg_fails(db.c, [{"$project": projection}], code)
    find_fails(db.c, {}, projection, code)


def test_nested_and_dotted_fields_with_common_prefix(db):
    db.c.insert_one({"a": "missing", "b": {"c": "bar", "a": "baz", "z": "not there"}})
    for projection in ({"_id": 0, "b": {"a": 1}, "b.c": 1}, {"_id": 0, "b.c": 1, "b": {"a": 1}}):
        assert agg(db.c, [{"$project": projection}]) == [{"b": {"c": "bar", "a": "baz"}}]
        assert find(db.c, {}, projection) == [{"b": {"c": "bar", "a": "baz"}}]
    one = {"$add": [1]}
    out = agg(db.c, [{"$project": {"_id": 0, "A.Z": one, "A": {"Y": one, "A": one}, "A.B": one}}])
    assert ordered(out) == ordered([{"A": {"Z": 1, "Y": 1, "A": 1, "B": 1}}])


# --------------------------------------------------------------------------------------------------
# computed_projections.js, projection_expr_mod.js, projection_dotted_paths.js, handle_missing_subpath.js
# --------------------------------------------------------------------------------------------------

COMPUTED_DOCS = [
    {"_id": 0, "a": 1, "b": "x", "c": 10, "zero": 0},
    {"_id": 3, "x": {"y": 1}},
    {"_id": 5, "x": {"y": [1, 2, 3]}, "v": {"w": [4, 5, 6]}},
    {"_id": 7, "x": [{"y": 1}], "v": [{"w": 1}]},
    {"_id": 9, "x": [{"y": 1}, {"y": [1, 2, 3]}], "v": [{"w": 4}, {"w": [4, 5, 6]}]},
    {"_id": 17, "x": {"y": [{"z": 1}, {"z": 2}]}},
    {"_id": 18, "x": [[{"y": 1}, {"y": 2}], {"y": 3}, {"y": 4}, [[[{"y": 5}]]], {"y": 6}]},
    {"_id": 21, "x": [[{"y": {"z": 1}}, {"y": 2}], {"y": 3}, {"y": {"z": 2}}, [[[{"y": 5}, {"y": {"z": 3}}]]], {"y": 6}]},
    {"_id": 22, "tf": [True, False], "t": True, "f": False, "n": None, "a": 1, "b": 0},
    {"_id": 23, "i1": 1, "i2": -1, "i3": -2147483648},
    {"_id": 24, "l1": Int64(12345678900), "l2": Int64(-12345678900)},
    {"_id": 25, "s": "string", "l": Int64(-9223372036854775808), "n": None},
    {"_id": 26, "d1": 4.6, "d2": -4.6, "dec1": Decimal128("4.6"), "dec2": Decimal128("-4.6")},
]


@pytest.mark.parametrize("query, projection, expected", [
    ({"_id": {"$in": [0, 3, 22]}}, {"foo": "$a"}, [{"_id": 0, "foo": 1}, {"_id": 3}, {"_id": 22, "foo": 1}]),
    ({"_id": {"$in": [0, 3]}}, {"_id": 0, "foo": "$a"}, [{"foo": 1}, {}]),
    ({"_id": {"$in": [0, 22]}}, {"a": 1, "foo": "$b"}, [{"_id": 0, "a": 1, "foo": "x"}, {"_id": 22, "a": 1, "foo": 0}]),
    ({"_id": {"$in": [0, 3]}}, {"foo": {"$add": ["$a", "$c"]}}, [{"_id": 0, "foo": 11}, {"_id": 3, "foo": None}]),
    ({"_id": {"$in": [3, 5, 7, 9, 17, 18, 21]}}, {"_id": 0, "foo": "$x.y"},
     [{"foo": 1}, {"foo": [1, 2, 3]}, {"foo": [1]}, {"foo": [1, [1, 2, 3]]}, {"foo": [{"z": 1}, {"z": 2}]},
      {"foo": [3, 4, 6]}, {"foo": [3, {"z": 2}, 6]}]),
    ({"_id": {"$in": [5, 7, 9]}}, {"foo": "$x.y", "bar": "$v.w"},
     [{"_id": 5, "foo": [1, 2, 3], "bar": [4, 5, 6]}, {"_id": 7, "foo": [1], "bar": [1]},
      {"_id": 9, "foo": [1, [1, 2, 3]], "bar": [4, [4, 5, 6]]}]),
    ({"_id": {"$in": [3, 7]}}, {"x.y": 1, "foo": "$v.w"}, [{"_id": 3, "x": {"y": 1}}, {"_id": 7, "x": [{"y": 1}], "foo": [1]}]),
    ({"_id": 23}, {"abs_i1": {"$abs": "$i1"}, "abs_i2": {"$abs": "$i2"}, "abs_i3": {"$abs": "$i3"}},
     [{"_id": 23, "abs_i1": 1, "abs_i2": 1, "abs_i3": Int64(2147483648)}]),
    ({"_id": 24}, {"abs_l1": {"$abs": "$l1"}, "abs_l2": {"$abs": "$l2"}},
     [{"_id": 24, "abs_l1": Int64(12345678900), "abs_l2": Int64(12345678900)}]),
    ({"_id": 26}, {"d1": {"$abs": "$d1"}, "d2": {"$abs": "$d2"}, "dec1": {"$abs": "$dec1"}, "dec2": {"$abs": "$dec2"}},
     [{"_id": 26, "d1": 4.6, "d2": 4.6, "dec1": Decimal128("4.6"), "dec2": Decimal128("4.6")}]),
    ({"_id": 25}, {"abs_n": {"$abs": "$n"}, "abs_ne": {"$abs": "$non_existent"}}, [{"_id": 25, "abs_n": None, "abs_ne": None}]),
    ({"_id": {"$in": [0, 3]}}, {"foo": {"$and": ["$a"]}, "bar": {"$or": ["$a"]}},
     [{"_id": 0, "foo": True, "bar": True}, {"_id": 3, "foo": False, "bar": False}]),
    ({"_id": 22}, {"foo": {"$and": ["$n"]}, "bar": {"$or": ["$nonexistent"]}}, [{"_id": 22, "foo": False, "bar": False}]),
    ({"_id": 22}, {"foo": {"$and": []}, "bar": {"$and": ["$tf", "$t", "$a"]}}, [{"_id": 22, "foo": True, "bar": True}]),
    ({"_id": 22}, {"foo": {"$or": []}, "bar": {"$or": ["$f", "$n", "$nonexistent"]}},
     [{"_id": 22, "foo": False, "bar": False}]),
    ({"_id": 22}, {"foo": {"$and": ["$a", "$b"]}, "bar": {"$and": ["$a", "$f"]}, "baz": {"$and": ["$a", "$n"]}},
     [{"_id": 22, "foo": False, "bar": False, "baz": False}]),
])
def test_computed_projections(db, query, projection, expected):
    db.c.insert_many(COMPUTED_DOCS)
    assert find(db.c, query, projection, sort=[("_id", 1)]) == expected
    ts = make_ts(db, COMPUTED_DOCS)
    assert without_t(find(ts, query, projection, sort=[("_id", 1)])) == expected


@pytest.mark.parametrize("query, projection, code", [
    ({"s": "string"}, {"abs_s": {"$abs": "$s"}}, 28765),
    ({"s": "string"}, {"abs_l": {"$abs": "$l"}}, 28680),
])
def test_computed_projection_errors(db, query, projection, code):
    db.c.insert_many(COMPUTED_DOCS)
    find_fails(db.c, query, projection, code)


@pytest.mark.parametrize("v, m, f", [
    (138.5, 3.0, 0.5), (138.5, Int64(3), 0.5), (138.5, 3, 0.5), (8, 3.25, 1.5), (8, 3, 2), (8, Int64(3), Int64(2)),
    (Int64(8), 3.25, 1.5), (Int64(8), 3, Int64(2)), (Int64(8), Int64(3), Int64(2)),
    (Int64(800000000000), Int64(300000000000), Int64(200000000000)),
    # an int32-integral double divisor gives the integer remainder: mongod 7.0's ExpressionMod (rhs.integral())
    # and projection_expr_mod.js / expression_mod.js ("int % double int": 2, "long % double int": NumberLong(2))
    (8, 3.0, 2), (Int64(8), 3.0, Int64(2)),
    (Int64(500000000000), 450000000000.0, 50000000000.0),
], ids=repr)
def test_projection_expr_mod_types(db, v, m, f):
    """projection_expr_mod.js: $mod's result type follows its operands (a double operand: a double)."""
    db.c.insert_one({"v": v, "m": m})
    out = db.c.find_one({}, {"f": {"$mod": ["$v", "$m"]}, "_id": 0})["f"]
    assert (out, type(out)) == (f, type(f))
    ts = make_ts(db, [{"v": v, "m": m}])
    out = ts.find_one({}, {"f": {"$mod": ["$v", "$m"]}, "_id": 0})["f"]
    assert (out, type(out)) == (f, type(f))


def test_projection_expr_mod_errors_and_special_values(db):
    for a, zero in ((10.0, 0.0), (10, 0), (Int64(10), Int64(0))):
        db.c.drop()
        db.c.insert_one({"a": a})
        find_fails(db.c, {}, {"f": {"$mod": ["$a", zero]}, "_id": 0, "n": 1}, 16610)
    db.c.drop()
    db.c.insert_one({"a": 10.0})
    nan, inf = float("nan"), float("inf")
    assert math.isnan(db.c.find_one({}, {"f": {"$mod": ["$a", nan]}, "_id": 0})["f"])
    assert db.c.find_one({}, {"f": {"$mod": ["$a", inf]}, "_id": 0}) == {"f": 10.0}
    assert db.c.find_one({}, {"f": {"$mod": ["$a", -inf]}, "_id": 0}) == {"f": 10.0}
    for first in (inf, -inf, nan):
        assert math.isnan(db.c.find_one({}, {"f": {"$mod": [first, "$a"]}, "_id": 0})["f"])


def test_projection_dotted_paths(db):
    """projection_dotted_paths.js (results; the covered-plan checks are left out)."""
    db.c.create_index([("a", 1), ("b.c", 1), ("b.d", 1), ("c", 1)])
    db.c.insert_one({"_id": 1, "a": 1, "b": {"c": 1, "d": 1, "e": 1}, "c": 1, "e": 1})
    assert db.c.find_one({"a": 1}, {"_id": 0, "a": 1, "b.c": 1, "b.d": 1, "c": 1}) == {"a": 1, "b": {"c": 1, "d": 1}, "c": 1}
    assert db.c.find_one({"a": 1}, {"_id": 0, "b.c": 1, "c": 1}) == {"b": {"c": 1}, "c": 1}
    assert db.c.find_one({"a": 1}, {"_id": 1, "a": 1, "b.c": 1, "b.d": 1, "c": 1}) == {
        "_id": 1, "a": 1, "b": {"c": 1, "d": 1}, "c": 1}
    assert db.c.find_one({"a": 1}, {"_id": 0, "b.c": 1, "b.e": 1, "c": 1}) == {"b": {"c": 1, "e": 1}, "c": 1}
    assert db.c.find_one({"a": 1}, {"_id": 0, "b.c": 1, "b.z": 1, "c": 1}) == {"b": {"c": 1}, "c": 1}
    assert db.c.find_one({"_id": 1}, {"_id": 0, "b.c": 1, "b.e": 1, "c": 1}) == {"b": {"c": 1, "e": 1}, "c": 1}
    db.c.insert_one({"a": 2, "b": {"c": 1, "d": [1, 2, 3]}})
    assert db.c.find_one({"a": 2}, {"_id": 0, "b.c": 1, "b.d": 1}) == {"b": {"c": 1, "d": [1, 2, 3]}}
    assert db.c.find_one({"a": 2}, {"_id": 0, "b.c": 1}) == {"b": {"c": 1}}
    db.c.create_index([("a", 1), ("x.y.y", 1), ("x.y.z", 1), ("x.z", 1)])
    db.c.insert_one({"a": 3, "x": {"y": {"y": 1, "f": 1, "z": 1}, "f": 1, "z": 1}})
    assert db.c.find_one({"a": 3}, {"_id": 0, "x.y.y": 1, "x.y.z": 1, "x.z": 1}) == {"x": {"y": {"y": 1, "z": 1}, "z": 1}}
    db.c.create_index([("a.b.c", 1), ("a.b", 1)])
    db.c.insert_one({"a": {"b": {"c": 1, "d": 1}}})
    assert db.c.find_one({"a.b.c": 1}, {"_id": 0, "a.b": 1}) == {"a": {"b": {"c": 1, "d": 1}}}
    db.c.drop()
    db.c.insert_one({"a": {"x": 1, "b": {"x": 2}}, "b": {"c": 3}})
    assert find(db.c, {}, {"_id": 0, "a": "$p", "b.c": "$q"}) == [{"b": {}}]
    assert find(db.c, {}, {"_id": 0, "a.x": "$a.x", "a.b.x": "$a.x"}) == [{"a": {"x": 1, "b": {"x": 1}}}]


def test_handle_missing_subpath(db):
    db.c.insert_many([{"_id": 0, "a": 1}, {"_id": 1, "foo": 2}, {"_id": 2, "foo": {"bar": 3}}])
    projection = {"_id": 0, "foo.bar": 1, "field": "$foo", "path": "$foo.bar"}
    expected = [{}, {"field": 2}, {"foo": {"bar": 3}, "field": {"bar": 3}, "path": 3}]
    assert agg(db.c, [{"$sort": {"_id": 1}}, {"$project": projection}]) == expected
    assert find(db.c, {}, projection, sort=[("_id", 1)]) == expected


# --------------------------------------------------------------------------------------------------
# id_partial_projection.js, proj_key1.js, projection_with_hashed_index.js, coalesce.js and the
# small aggregation $project jstests
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("projection, expected", [
    ({"_id": 1}, [{"_id": {"a": 1, "b": 1}}, {"_id": 3}]),
    ({"_id.a": 1}, [{"_id": {"a": 1}}, {}]),
    ({"_id.b": 1}, [{"_id": {"b": 1}}, {}]),
    ({"_id.a": 0}, [{"_id": {"b": 1}, "sortKey": 1}, {"_id": 3, "sortKey": 2}]),
    ({"_id": 0}, [{"sortKey": 1}, {"sortKey": 2}]),
], ids=str)
def test_id_partial_projection(db, projection, expected):
    docs = [{"_id": {"a": 1, "b": 1}, "sortKey": 1}, {"_id": 3, "sortKey": 2}]
    db.c.insert_many(docs)
    assert find(db.c, {}, projection, sort=[("sortKey", 1)]) == expected
    ts = make_ts(db, docs)
    assert without_t(find(ts, {}, projection, sort=[("sortKey", 1)])) == expected


def test_proj_key1_index_and_batches(db):
    db.c.insert_many([{"a": i, "b": i} for i in range(10)])
    db.c.create_index("a")
    want = [{"a": i} for i in range(10)]
    assert find(db.c, {"a": {"$gte": 0}}, {"a": 1, "_id": 0}, sort=[("a", 1)]) == want
    assert find(db.c, {"a": {"$gte": 0}}, {"a": 1, "_id": 0}, sort=[("a", 1)], batch_size=2) == want


def test_projection_with_hashed_index(db):
    db.c.insert_many([{"_id": 1, "a": {"b": 5}}, {"_id": 2, "a": {"b": 2, "c": 1}}, {"_id": 3, "a": {"b": 0}}])
    before = find(db.c, {}, {"_id": 0, "a.b": 1}, sort=[("a.b", 1)])
    assert before == [{"a": {"b": 0}}, {"a": {"b": 2}}, {"a": {"b": 5}}]
    db.c.create_index([("a.b", 1), ("a", "hashed")])
    assert find(db.c, {}, {"_id": 0, "a.b": 1}, sort=[("a.b", 1)]) == before


def test_coalesced_exclusions_equal_single_projection(db):
    db.c.insert_one({"_id": 1, "a": 1, "b": 1, "c": 1})
    db.c.insert_one({"_id": 2, "a": {"a2": 1}, "b": 1, "c": 1})
    for one, two in (({"a": 0, "b": 0}, [{"$project": {"a": 0}}, {"$project": {"b": 0}}]),
                     ({"a.a2": 0, "b": 0}, [{"$project": {"a.a2": 0}}, {"$project": {"b": 0}}]),
                     ({"a.a2": 0, "b": 0}, [{"$project": {"b": 0}}, {"$project": {"a.a2": 0}}])):
        assert agg(db.c, [{"$project": one}]) == agg(db.c, two)


def test_exclusion_does_not_affect_field_order(db):
    db.c.insert_many([{"_id": 1}, {"_id": 2, "c": 1}, {"_id": 3, "y": 1, "z": 1}])
    out = agg(db.c, [{"$project": {"b": 0, "c": 0}}, {"$addFields": {"x": 3, "y": 4, "b": 5, "c": 6, "a": 7}},
                     {"$sort": {"_id": 1}}])
    assert ordered(out) == ordered([{"_id": 1, "x": 3, "y": 4, "b": 5, "c": 6, "a": 7},
                                    {"_id": 2, "x": 3, "y": 4, "b": 5, "c": 6, "a": 7},
                                    {"_id": 3, "y": 4, "z": 1, "x": 3, "b": 5, "c": 6, "a": 7}])
    db.c.insert_one({"_id": 4, "c": {"y": 11, "z": 22, "a": 33}, "a": 1})
    out = agg(db.c, [{"$project": {"c.z": 0}}, {"$sort": {"_id": 1}}])
    assert ordered(out) == ordered([{"_id": 1}, {"_id": 2, "c": 1}, {"_id": 3, "y": 1, "z": 1},
                                    {"_id": 4, "c": {"y": 11, "a": 33}, "a": 1}])


def test_inclusion_accepts_all_numeric_types(db):
    db.c.insert_one({"key": 4, "v": 3, "x": 2, "d": 1})
    spec = {"_id": 0, "key": Int64(1), "v": 1.0, "x": 1, "d": Decimal128("1")}
    assert agg(db.c, [{"$project": spec}]) == [{"key": 4, "v": 3, "x": 2, "d": 1}]
    assert find(db.c, {}, spec) == [{"key": 4, "v": 3, "x": 2, "d": 1}]


def test_project_id_expression(db):
    db.c.insert_one({"a": 2})
    assert agg(db.c, [{"$project": {"_id": "$a"}}]) == [{"_id": 2}]
    assert agg(db.c, [{"$project": {"_id": {"$add": [1, "$a"]}}}]) == [{"_id": 3}]


# --------------------------------------------------------------------------------------------------
# $meta: find_projection_meta_errors.js, match_on_meta_exclusion_projection.js, the projection type of
# a $meta-only projection (projection_meta_index_key.js's rule, projection_parser.cpp), id_meta_projection.js
# --------------------------------------------------------------------------------------------------

def test_meta_projection_unknown_argument(db):
    """find_projection_meta_errors.js dates from 4.2 (BadValue); since 4.4 the $meta argument is read by
    the expression parser, whose answer is 17308 'Unsupported argument to $meta: ...'."""
    db.c.insert_many([{"a": 1}, {"a": 2}])
    with pytest.raises(OperationFailure) as info:
        db.command("find", "c", projection={"score": {"$meta": "some garbage"}})
    assert info.value.code == 17308


TEXT_DOCS = [
    {"_id": 1, "content": "This morning I had a cup of coffee.", "about": "beverage", "keywords": ["coffee"]},
    {"_id": 2, "content": "Who likes chocolate ice cream for dessert?", "about": "food", "keywords": ["poll"]},
    {"_id": 3, "content": "My favorite flavors are strawberry and coffee", "about": "ice cream",
     "keywords": ["food", "dessert"]},
]
TEXT = {"$text": {"$search": "java coffee shop"}}
SCORE = {"$meta": "textScore"}


def test_match_on_meta_after_exclusion_and_inclusion_project(db):
    db.c.insert_many(TEXT_DOCS)
    db.c.create_index([("content", "text")])
    out = agg(db.c, [{"$match": TEXT}, {"$project": {"about": 0, "score": SCORE}}, {"$match": {"score": {"$gt": 0.65}}}])
    assert out == [{"_id": 1, "content": TEXT_DOCS[0]["content"], "keywords": ["coffee"], "score": 0.6666666666666666}]
    out = agg(db.c, [{"$match": TEXT}, {"$project": {"score": SCORE}}, {"$match": {"score": {"$gt": 0.65}}}])
    assert out == [{"_id": 1, "score": 0.6666666666666666}]


@pytest.mark.parametrize("projection, find_keeps, agg_keeps", [
    # alone (or beside {_id: 0}) a $meta field makes an exclusion in find, an inclusion in aggregate
    ({"score": SCORE}, ["_id", "content", "about", "keywords", "score"], ["_id", "score"]),
    ({"_id": 0, "score": SCORE}, ["content", "about", "keywords", "score"], ["score"]),
    ({"_id": 1, "score": SCORE}, ["_id", "score"], ["_id", "score"]),
    ({"about": 0, "score": SCORE}, ["_id", "content", "keywords", "score"], ["_id", "content", "keywords", "score"]),
    ({"about": 1, "score": SCORE}, ["_id", "about", "score"], ["_id", "about", "score"]),
], ids=str)
def test_meta_only_projection_type(db, projection, find_keeps, agg_keeps):
    db.c.insert_many(TEXT_DOCS)
    db.c.create_index([("content", "text")])
    [found] = find(db.c, {**TEXT, "_id": 1}, projection)
    assert sorted(found) == sorted(find_keeps)
    [aggregated] = agg(db.c, [{"$match": {**TEXT, "_id": 1}}, {"$project": projection}])
    assert sorted(aggregated) == sorted(agg_keeps)
    assert found["score"] == aggregated["score"] == 0.6666666666666666


def test_meta_index_key_without_index_is_omitted(db):
    """projection_meta_index_key.js without an index: no index key metadata, so the field is left out."""
    db.c.insert_many([{"_id": 1, "a": 10, "b": "x"}, {"_id": 2, "a": 20, "b": "y"}, {"_id": 3, "a": 30, "b": "z"}])
    key = {"$meta": "indexKey"}
    assert find(db.c, {"a": {"$gt": 20}}, {"_id": 0, "a": 1, "c": key}) == [{"a": 30}]
    assert find(db.c, {"a": {"$gt": 20}}, {"_id": 0, "a": 0, "c": key}) == [{"b": "z"}]
    assert find(db.c, {"a": {"$gt": 20}}, {"_id": 0, "c": key}) == [{"a": 30, "b": "z"}]
    assert agg(db.c, [{"$match": {"a": {"$gt": 20}}}, {"$project": {"_id": 0, "c": key}}]) == [{}]
    assert agg(db.c, [{"$match": {"a": {"$gt": 20}}}, {"$project": {"c": key}}]) == [{"_id": 3}]


def test_meta_index_key_from_index_scan(db):
    """projection_meta_index_key.js with a hinted {a: 1, b: 1} index: the key is the index entry."""
    db.c.insert_many([{"_id": 1, "a": 10, "b": "x"}, {"_id": 2, "a": 20, "b": "y"}, {"_id": 3, "a": 30, "b": "z"}])
    db.c.create_index([("a", 1), ("b", 1)])
    out = find(db.c, {"a": {"$gt": 20}}, {"_id": 0, "a": 1, "c": {"$meta": "indexKey"}}, hint=[("a", 1), ("b", 1)])
    assert out == [{"a": 30, "c": {"a": 30, "b": "z"}}]


def test_meta_sort_key_projection(db):
    """id_meta_projection.js: {$meta: 'sortKey'} after a $sort."""
    db.c.insert_one({"_id": 0, "a": 1, "b": 1})
    assert agg(db.c, [{"$sort": {"a": 1}}, {"$project": {"_id": 0, "metaField": {"$meta": "sortKey"}}}]) == [
        {"metaField": [1]}]
    # ... and where the $project cannot be pushed down (the metadata rides through $unwind)
    assert agg(db.c, [{"$sort": {"a": 1}}, {"$unwind": {"path": "$b", "preserveNullAndEmptyArrays": True}},
                      {"$project": {"_id": 0, "metaField": {"$meta": "sortKey"}}}]) == [{"metaField": [1]}]


def test_meta_sort_key_after_a_sort_an_index_answers(db):
    """An aggregate's $sort that an index answers (the stage is dropped, the scan gives the order) still
    shows each document's sort key, as without the index."""
    db.c.insert_many([{"_id": i, "a": a, "b": b} for i, (a, b) in enumerate([(3, [2, 9]), (1, 5), (2, [7])])])
    pipeline = [{"$sort": {"a": -1}}, {"$project": {"_id": 1, "k": {"$meta": "sortKey"}}}]
    expected = [{"_id": 0, "k": [3]}, {"_id": 2, "k": [2]}, {"_id": 1, "k": [1]}]
    assert agg(db.c, pipeline) == expected
    db.c.create_index([("a", 1)])
    assert agg(db.c, pipeline) == expected
    assert agg(db.c, [{"$match": {"a": {"$gte": 2}}}, *pipeline]) == expected[:2]


INDEX_KEY_CASES = [  # projection_meta_index_key.js: (projection, find's result, aggregate's result) with {a: 1, b: 1}
    ({"_id": 0, "a": 1}, [{"a": 30, "c": {"a": 30, "b": "z"}}], None),
    ({"_id": 0, "a": 0}, [{"b": "z", "c": {"a": 30, "b": "z"}}], None),
    ({"_id": 1}, [{"_id": 3, "c": {"a": 30, "b": "z"}}], None),
    ({"_id": 0}, [{"a": 30, "b": "z", "c": {"a": 30, "b": "z"}}], [{"c": {"a": 30, "b": "z"}}]),
    ({}, [{"_id": 3, "a": 30, "b": "z", "c": {"a": 30, "b": "z"}}], [{"_id": 3, "c": {"a": 30, "b": "z"}}]),
]


@pytest.mark.parametrize("projection, found, aggregated", INDEX_KEY_CASES, ids=str)
def test_meta_index_key_find_and_aggregate(db, projection, found, aggregated):
    """projection_meta_index_key.js with the index: find and aggregate both read the scanned entry."""
    db.c.insert_many([{"_id": 1, "a": 10, "b": "x"}, {"_id": 2, "a": 20, "b": "y"}, {"_id": 3, "a": 30, "b": "z"}])
    db.c.create_index([("a", 1), ("b", 1)])
    proj = {**projection, "c": {"$meta": "indexKey"}}
    assert find(db.c, {"a": {"$gt": 20}}, proj, hint=[("a", 1), ("b", 1)]) == found
    assert agg(db.c, [{"$match": {"a": {"$gt": 20}}}, {"$project": proj}], hint={"a": 1, "b": 1}) == \
        (aggregated or found)
    # a sort the index gives: still the index's keys
    assert find(db.c, {}, {"_id": 1, "c": {"$meta": "indexKey"}}, sort=[("a", 1)], hint=[("a", 1), ("b", 1)]) == [
        {"_id": i, "c": {"a": 10 * i, "b": "xyz"[i - 1]}} for i in (1, 2, 3)]


def test_meta_index_key_shows_collation_keys_and_types(db):
    """Values as the index holds them: the document's own number types; under the index's collation
    the comparison keys, as returnKey shows them."""
    db.c.insert_many([{"_id": 1, "a": 1.5, "s": "Ab"}, {"_id": 2, "a": Int64(7), "s": "ab"}])
    db.c.create_index([("a", -1)])
    out = find(db.c, {"a": {"$gt": 0}}, {"k": {"$meta": "indexKey"}, "_id": 0, "s": 0}, hint=[("a", -1)])
    assert out == [{"a": Int64(7), "k": {"a": Int64(7)}}, {"a": 1.5, "k": {"a": 1.5}}]
    assert isinstance(out[0]["k"]["a"], Int64)
    ci = {"locale": "en", "strength": 2}
    db.c.create_index([("s", 1)], collation=ci)
    keys = find(db.c, {"s": {"$gt": ""}}, {"k": {"$meta": "indexKey"}}, hint=[("s", 1)], collation=ci)
    returned = list(db.c.find({"s": {"$gt": ""}}, hint=[("s", 1)], collation=ci, return_key=True))
    assert [d["k"] for d in keys] == returned
    assert keys[0]["k"] == keys[1]["k"] != {"s": "ab"}


def test_meta_sort_key_shapes_in_find(db):
    """sortl.js and friends: one value per sort field, arrays by their min (ascending) / max (descending),
    missing and empty arrays null, a $meta textScore sort field its score; without a sort: 2."""
    db.c.insert_many([{"_id": 1, "a": [3, 1, 2], "b": "x"}, {"_id": 2, "b": "y"}, {"_id": 3, "a": 2, "b": None},
                      {"_id": 4, "a": [], "b": "z"}])
    sk = {"_id": 1, "sk": {"$meta": "sortKey"}}
    assert find(db.c, {}, sk, sort=[("a", 1), ("b", -1)]) == [
        {"_id": 4, "sk": [None, "z"]}, {"_id": 2, "sk": [None, "y"]}, {"_id": 1, "sk": [1, "x"]},
        {"_id": 3, "sk": [2, None]}]
    assert find(db.c, {}, sk, sort=[("a", -1)]) == [
        {"_id": 1, "sk": [3]}, {"_id": 3, "sk": [2]}, {"_id": 2, "sk": [None]}, {"_id": 4, "sk": [None]}]
    # an index giving the order (no sort runs): the same keys
    db.c.create_index([("b", 1)])
    assert find(db.c, {"b": {"$type": "string"}}, sk, sort=[("b", 1)], hint=[("b", 1)]) == [
        {"_id": 1, "sk": ["x"]}, {"_id": 2, "sk": ["y"]}, {"_id": 4, "sk": ["z"]}]
    err = find_fails(db.c, {}, sk, BAD_VALUE)
    assert err.details["errmsg"] == "cannot use sortKey $meta projection without a sort"
    db.t.create_index([("t", "text")])
    db.t.insert_many([{"_id": 1, "t": "one"}, {"_id": 2, "t": "one one two"}])
    out = find(db.t, {"$text": {"$search": "one"}}, {"_id": 1, "sk": {"$meta": "sortKey"}},
               sort=[("s", {"$meta": "textScore"}), ("_id", 1)])
    assert [d["_id"] for d in out] == [2, 1]
    assert [d["sk"][1] for d in out] == [2, 1] and out[0]["sk"][0] > out[1]["sk"][0]


def test_find_and_modify_refuses_sort_key_meta_message(db):
    """mongod's message, after the positional check; with or without a sort."""
    db.c.insert_one({"_id": 1, "a": [2]})
    for extra in ({"sort": {"a": 1}}, {}):
        with pytest.raises(OperationFailure) as info:
            db.command({"findAndModify": "c", "query": {"a": 2}, "remove": True, "fields": {"k": {"$meta": "sortKey"}},
                        **extra})
        assert (info.value.code, info.value.details["errmsg"]) == (
            BAD_VALUE, "Cannot use a $meta sortKey projection in findAndModify commands.")
    with pytest.raises(OperationFailure) as info:
        db.command({"findAndModify": "c", "query": {"a": 2}, "update": {"$set": {"b": 1}}, "new": True,
                    "fields": {"a.$": 1, "k": {"$meta": "sortKey"}}})
    assert info.value.details["errmsg"] == "cannot use a positional projection and return the new document"


META_VALUES = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["p", "Q", "q"]), st.floats(-2, 2, allow_nan=False))
META_DOCS = st.lists(st.fixed_dictionaries({}, optional={
    "a": st.one_of(META_VALUES, st.lists(META_VALUES, max_size=3)),  # only a holds arrays: no parallel arrays
    "b": META_VALUES,
    "c": st.one_of(META_VALUES, st.fixed_dictionaries({}, optional={"d": META_VALUES})),
}), min_size=1, max_size=8)
META_FIELDS = st.lists(st.tuples(st.sampled_from(["a", "b", "c.d"]), st.sampled_from([1, -1])), min_size=1,
                       max_size=2, unique_by=lambda t: t[0])


def _sorted_by_keys(keys: list[list], directions: list[int]) -> bool:
    """The sort keys shown order the documents as returned (an empty array's undefined is shown as null:
    two nulls end the comparison, undefined < null being invisible in a reply)."""
    for left, right in zip(keys, keys[1:], strict=False):
        for lv, rv, d in zip(left, right, directions, strict=True):
            if lv is None and rv is None:
                break
            c = compare(lv, rv) * d
            if c:
                if c > 0:
                    return False
                break
    return True


@HYPOTHESIS
@given(docs=META_DOCS, index=META_FIELDS, sort=META_FIELDS, hinted=st.booleans())
def test_meta_index_key_and_sort_key_property(db, docs, index, sort, hinted):
    """Random documents, index and sort: indexKey is the key the index holds for the entry scanned (the
    same as returnKey's) on an index scan and absent on a collection scan; sortKey orders the documents
    as returned."""
    db.c.drop()
    db.c.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
    db.c.create_index(index)
    kw = {"hint": index} if hinted else {"hint": [("$natural", 1)]}
    proj = {"ik": {"$meta": "indexKey"}, "sk": {"$meta": "sortKey"}}
    out = find(db.c, {}, proj, sort=sort, **kw)
    assert sorted(d["_id"] for d in out) == list(range(len(docs)))
    assert _sorted_by_keys([d["sk"] for d in out], [di for _, di in sort])
    assert all(len(d["sk"]) == len(sort) for d in out)
    if hinted:
        assert [d["ik"] for d in out] == list(db.c.find({}, sort=sort, return_key=True, **kw))
    else:
        assert all("ik" not in d for d in out)


# --------------------------------------------------------------------------------------------------
# project_with_collation.js
# --------------------------------------------------------------------------------------------------

CI = {"locale": "en_US", "strength": 2}


def _collation_docs(coll):
    coll.insert_many([{"_id": 0, "str": "a", "array": [{"str": "b"}, {"str": "A"}, {"str": "B"}, {"str": "a"}]},
                      {"_id": 1, "str": "a", "elemMatch": [{"str": "A"}, "ignored"]},
                      {"_id": 2, "str": "A", "elemMatch": ["ignored", {"str": "a"}]},
                      {"_id": 3, "str": "B"}])


@pytest.mark.parametrize("coll_collation, query_collation", [({"locale": "en_US"}, CI), (None, CI), (CI, None)])
def test_projection_uses_query_or_collection_collation(db, coll_collation, query_collation):
    if coll_collation:
        db.create_collection("c", collation=coll_collation)
    _collation_docs(db.c)
    kw = {"collation": query_collation} if query_collation else {}
    out = find(db.c, {"str": "A", "elemMatch": {"$elemMatch": {"str": "a"}}}, {"_id": 1, "elemMatch.$": 1},
               sort=[("_id", 1)], **kw)
    assert out == [{"_id": 1, "elemMatch": [{"str": "A"}]}, {"_id": 2, "elemMatch": [{"str": "a"}]}]
    out = find(db.c, {"str": "A"}, {"sortedArray": {"$sortArray": {"input": "$array", "sortBy": {"str": 1}}}},
               sort=[("_id", 1)], **kw)
    assert out == [{"_id": 0, "sortedArray": [{"str": "A"}, {"str": "a"}, {"str": "b"}, {"str": "B"}]},
                   {"_id": 1, "sortedArray": None}, {"_id": 2, "sortedArray": None}]
    res = db.command("findAndModify", "c", query={"_id": 1, "str": "A", "elemMatch": {"$elemMatch": {"str": "a"}}},
                     fields={"_id": 1, "elemMatch.$": 1, "updated": 1}, update={"$set": {"updated": True}},
                     collation=query_collation or {})
    assert res["value"] == {"_id": 1, "elemMatch": [{"str": "A"}]}
    res = db.command("findAndModify", "c", query={"_id": 0, "str": "A"},
                     fields={"_id": 1, "str": 1, "sortedArray": {"$sortArray": {"input": "$array", "sortBy": {"str": 1}}}},
                     update={"$set": {"updated": True}}, collation=query_collation or {}, new=True)
    assert res["value"] == {"_id": 0, "str": "a", "sortedArray": [{"str": "A"}, {"str": "a"}, {"str": "b"}, {"str": "B"}]}
    res = db.command("findAndModify", "c", query={"_id": 1, "str": "A", "elemMatch": {"$elemMatch": {"str": "a"}}},
                     fields={"_id": 1, "elemMatch.$": 1, "updated": 1}, remove=True, collation=query_collation or {})
    assert res["value"] == {"_id": 1, "elemMatch": [{"str": "A"}], "updated": True}


@pytest.mark.parametrize("coll_collation", [None, CI])
def test_projection_with_simple_collation(db, coll_collation):
    if coll_collation:
        db.create_collection("c", collation=coll_collation)
    _collation_docs(db.c)
    simple = {"locale": "simple"}
    out = find(db.c, {"str": "A", "elemMatch": {"$elemMatch": {"str": "a"}}}, {"_id": 1, "elemMatch.$": 1},
               collation=simple)
    assert out == [{"_id": 2, "elemMatch": [{"str": "a"}]}]
    out = find(db.c, {"str": "a"}, {"sortedArray": {"$sortArray": {"input": "$array", "sortBy": {"str": 1}}}},
               collation=simple, sort=[("_id", 1)])
    assert out == [{"_id": 0, "sortedArray": [{"str": "A"}, {"str": "B"}, {"str": "a"}, {"str": "b"}]},
                   {"_id": 1, "sortedArray": None}]


def test_projection_on_view_with_collation(db):
    db.create_collection("c", collation=CI)
    _collation_docs(db.c)
    db.command("create", "v", viewOn="c", pipeline=[], collation=CI)
    out = find(db.v, {"str": "A"}, {"sortedArray": {"$sortArray": {"input": "$array", "sortBy": {"str": 1}}}},
               sort=[("_id", 1)])
    assert out == [{"_id": 0, "sortedArray": [{"str": "A"}, {"str": "a"}, {"str": "b"}, {"str": "B"}]},
                   {"_id": 1, "sortedArray": None}, {"_id": 2, "sortedArray": None}]


def test_find_only_operators_refused_on_time_series(db):
    """positional_projection_multiple_array_fields.js / elemmatch_projection.js are tagged
    exclude_from_timeseries_crud_passthrough: a time-series find runs its projection as an aggregation
    $project, where $elemMatch is 168 and {$slice: n} the $slice expression (28667)."""
    ts = make_ts(db, [{"_id": 1, "x": [1, 2, 3]}])
    find_fails(ts, {}, {"x": {"$elemMatch": {"$gt": 1}}}, 168)
    find_fails(ts, {}, {"x": {"$slice": 1}}, 28667)
    # the aggregation $slice expression is fine there
    assert without_t(find(ts, {}, {"y": {"$slice": ["$x", 2]}})) == [{"_id": 1, "y": [1, 2]}]
