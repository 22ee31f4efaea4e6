"""The per-request parse walks written without calls (``type(x) is dict`` before ``isinstance``, a
dict's first key without ``next(iter(...))``, no generator, no ABC check for a scalar) keep their
answers for every input of their family: sort specifications (``sort.parse_sort``), the near operators
anywhere in a filter (``pipeline.has_near``), the fields an expression reads
(``expressions.expression_fields``), ``$in`` lists (``match_parse``) and ``$group`` specifications
(``stage_group.parse_group``: fields in order, ``_id`` where it stands), and ``$$NOW``
(``expressions.now_ms``)."""

from __future__ import annotations

import collections
import datetime
import math
import re

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.regex import Regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.protocol.errors import MongoError
from tidemark.query import sort
from tidemark.query.expressions import evaluate, expression_fields, now_ms
from tidemark.query.match_ast import In
from tidemark.query.match_parse import parse_filter
from tidemark.query.pipeline import has_near, parse_pipeline


def _outcome(fn, *args, **kwargs):
    try:
        return ("ok", fn(*args, **kwargs))
    except MongoError as exc:
        return ("error", exc.code)


# ---------------------------------------------------------------------------------------------- $sort

_DIRECTIONS = [1, -1, 0, 2, 1.0, -1.0, 0.5, math.nan, math.inf, True, False, Int64(1), Int64(-1), Int64(3),
               Decimal128("1"), Decimal128("-1"), Decimal128("1.5"), "1", None]


def _sort_reference(spec: dict):
    """mongod 7.0's SortPattern order for numeric directions: the value (15974, 15975), then the path
    (40352 empty, 16410 a '$' first, 15998 an empty dotted part)."""
    out = []
    for path, d in spec.items():
        if type(d) not in (int, float, Int64, Decimal128):
            return ("error", 15974)
        value = float(d.to_decimal()) if type(d) is Decimal128 else float(d)
        if value not in (1.0, -1.0):
            return ("error", 15975)
        if path == "":
            return ("error", 40352)
        if path[0] == "$":
            return ("error", 16410)
        if "" in path.split("."):
            return ("error", 15998)
        out.append((path, int(value)))
    return ("ok", out)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(alphabet="ab.$", max_size=5), st.sampled_from(_DIRECTIONS), min_size=1, max_size=3))
def test_sort_spec_family(spec):
    got = _outcome(sort.parse_sort, spec)
    assert got == _sort_reference(spec)
    if got[0] == "ok":
        assert all(type(d) is int for _, d in got[1])  # (1, not Int64(1) nor True)


# ------------------------------------------------------------------------------------------ has_near

_NEAR = ("$near", "$nearSphere", "$geoNear")
_KEYS = st.sampled_from(["a", "b.c", "$in", "$and", "$eq", *_NEAR])
_SCALARS = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3), st.none(), st.booleans(),
                     st.just(datetime.datetime(2020, 1, 1)), st.just(Int64(5)), st.just(Decimal128("1")))


def _dicts(children):
    plain = st.dictionaries(_KEYS, children, max_size=3)
    return st.one_of(plain, plain.map(collections.OrderedDict))  # a dict subclass is walked too


_FILTER_VALUES = st.recursive(_SCALARS, lambda children: st.one_of(st.lists(children, max_size=3),
                                                                    _dicts(children), st.tuples(children)),
                              max_leaves=12)


def _near_reference(value) -> bool:
    if isinstance(value, dict):
        return any(k in _NEAR or _near_reference(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_near_reference(v) for v in value)
    return False  # (a tuple is no BSON value: not walked)


@settings(max_examples=400, deadline=None)
@given(_FILTER_VALUES)
def test_has_near_family(value):
    assert has_near(value) is _near_reference(value)


# --------------------------------------------------------------------------------- expression_fields

_PATHS = st.sampled_from(["$a", "$b", "$c.x", "$a.y.z", "$$CURRENT.b", "$$CURRENT.c.x", "$$x", "plain", "$"])
_EXPRS = st.recursive(
    st.one_of(_PATHS, st.integers(-3, 3)),
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda xs: {"$concatArrays": [[x] for x in xs]}),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: {"k": xs}),
        st.tuples(children, children).map(lambda xy: {"p": xy[0], "q": {"r": xy[1]}}),
        children.map(lambda x: {"$literal": x}),
    ),
    max_leaves=8,
)
_DOCS = st.fixed_dictionaries({}, optional={k: st.one_of(st.integers(-2, 2), st.fixed_dictionaries(
    {}, optional={"x": st.integers(), "y": st.fixed_dictionaries({}, optional={"z": st.integers()})}))
    for k in "abcd"})


@settings(max_examples=300, deadline=None)
@given(_EXPRS, _DOCS)
def test_expression_fields_are_all_it_reads(expr, doc):
    """An expression evaluated over only the fields ``expression_fields`` names answers as over the
    whole document (a field it missed would be missing)."""
    fields = expression_fields(expr)
    assert fields is not None
    variables = {"x": 7}
    whole = _outcome(evaluate, expr, doc, variables)
    part = _outcome(evaluate, expr, {k: v for k, v in doc.items() if k in fields}, variables)
    assert part == whole


@pytest.mark.parametrize("expr", ["$$ROOT", "$$CURRENT", {"a": ["$x", "$$ROOT"]}, {"$getField": "a"},
                                  {"$let": {"vars": {"CURRENT": "$a"}, "in": "$b"}}])
def test_expression_fields_whole_document(expr):
    assert expression_fields(expr) is None


def test_expression_fields_paths():
    assert expression_fields({"$add": ["$a.b", "$$CURRENT.c.d", "$$ROOT.e", "$$v.f", "g", "$", {"$literal": "$h"}]}) \
        == {"a", "c", "e"}


# ----------------------------------------------------------------------------------------------- $in

def test_in_list_members():
    node = parse_filter({"f": {"$in": ["s", 1, None, datetime.datetime(2020, 1, 1), Regex("^a"), re.compile("b"),
                                       {"$ref": "c", "$id": 1}, {"x": 1}]}})
    assert isinstance(node, In)
    assert len(node.regexes) == 2 and len(node.values) == 6
    for bad in ({"$gt": 1}, {"$ref": "c"}):
        with pytest.raises(MongoError) as err:
            parse_filter({"f": {"$in": [1, bad]}})
        assert (err.value.code, str(err.value)) == (2, "cannot nest $ under $in")


@pytest.mark.parametrize("value", [Regex("^a"), re.compile("a")])
def test_regex_operand_of_a_range_operator_is_refused(value):
    with pytest.raises(MongoError) as err:
        parse_filter({"f": {"$gt": value}})
    assert err.value.code == 2


# -------------------------------------------------------------------------------------------- $group

_GROUP_FIELDS = st.sampled_from([
    ("_id", None), ("_id", "$a"), ("_id", {"k": "$a"}), ("_id", {"": 1}), ("_id", {"k": 1}), ("_id", {"$add": [1]}),
    ("m", {"$max": "$a"}), ("n", {"$sum": 1}), ("bad", {"$nope": 1}), ("x.y", {"$sum": 1}), ("$z", {"$sum": 1}),
    ("two", {"$sum": 1, "$max": 1}), ("plain", 5), ("empty", {}), ("arr", {"$sum": [1]}), ("notop", {"a": 1}),
])


def _group_reference(fields: list) -> tuple:
    """The first bad field in order, ``_id`` where it stands, a missing ``_id`` last (15955)."""
    for name, value in fields:
        if name == "_id":
            if type(value) is dict and value and not next(iter(value)).startswith("$") \
                    and any(isinstance(v, int) for v in value.values()):
                return ("error", 17390)
            continue
        if type(value) is not dict or not next(iter(value), "").startswith("$"):
            return ("error", 40234)
        if "." in name:
            return ("error", 40235)
        if name.startswith("$"):
            return ("error", 40236)
        if len(value) != 1:
            return ("error", 40238)
        op, arg = next(iter(value.items()))
        if type(arg) is list:
            return ("error", 40237)
        if op == "$nope":
            return ("error", 15952)
    if "_id" not in dict(fields):
        return ("error", 15955)
    return ("ok",)


@settings(max_examples=300, deadline=None)
@given(st.lists(_GROUP_FIELDS, max_size=4, unique_by=lambda f: f[0]))
def test_group_spec_family(fields):
    got = _outcome(parse_pipeline, [{"$group": dict(fields)}])
    assert (got if got[0] == "error" else ("ok",)) == _group_reference(fields)


# ---------------------------------------------------------------------------------------------- $$NOW

def test_now_is_a_utc_instant_to_the_millisecond():
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    now = now_ms()
    after = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert now.tzinfo is None and now.microsecond % 1000 == 0
    assert before - datetime.timedelta(milliseconds=1) <= now <= after
