"""Shared helpers, reasons and fixtures of the expression jstest ports (``tests/e2e/test_jstests_expressions_*.py``):
values compared with their BSON types, strict-xfail rows, module-scoped collections."""

from __future__ import annotations

import itertools
import uuid

import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from pymongo.errors import OperationFailure

from harness.jstests import MISSING, aggregate_fails, canon, raw

INF = float("inf")
NAN = float("nan")
FAILED_TO_PARSE = 9
# an invalid variable name: FailedToParse in let.js/map.js, 16867 in filter.js (16866-16871 are the
# variable-name checks of Variables/variableValidation)
VAR_NAME_CODES = (FAILED_TO_PARSE, 16866, 16867, 16868, 16869, 16870, 16871)
BAD_VALUE = 2
TYPE_MISMATCH = 14


def D(text: str) -> Decimal128:
    return Decimal128(text)


def L(value: int) -> Int64:
    return Int64(value)


# --------------------------------------------------------------------------------------------------
# comparison helpers


# Failures are reported with ``pytest.fail(..., pytrace=False)`` from helpers hidden from tracebacks
# (``__tracebackhide__``): the message says what differs, and pytest need not format source and
# pymongo frames for each of the many expected failures (strict xfails), which would cost it seconds.


def fail(message: str):
    __tracebackhide__ = True
    pytest.fail(message, pytrace=False)


def assert_same(actual, expected):
    __tracebackhide__ = True
    if canon(actual) != canon(expected):
        fail(f"got {actual!r}, expected {expected!r}")


def assert_close(actual, expected, places: int = 12):
    """The shell's ``assert.close``: equal to ``places`` digits, absolutely or relatively."""
    __tracebackhide__ = True
    if not isinstance(actual, float):
        fail(f"expected a double close to {expected!r}, got {actual!r}")
    err = abs(actual - expected)
    if round(err * 10**places) == 0:
        return
    if expected == 0 or round(err / abs(expected) * 10**places) != 0:
        fail(f"got {actual!r}, expected {expected!r} to {places} places")


def jsnum(value):
    """The value as the shell sends it: plain numbers (Python ints here) become doubles."""
    if isinstance(value, bool) or isinstance(value, Int64):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [jsnum(v) for v in value]
    if isinstance(value, dict):
        return {k: jsnum(v) for k, v in value.items()}
    return value


def run_agg(coll, pipeline, **kwargs) -> list:
    """The aggregation's documents; a server error fails the test with its code and message."""
    __tracebackhide__ = True
    try:
        return list(coll.aggregate(pipeline, **kwargs))
    except OperationFailure as exc:
        message = exc.details.get("errmsg") if exc.details else str(exc)
        fail(f"aggregate failed with code {exc.code}: {message}")


# (Known differences from MongoDB 7.0 get a reason here, one per cause, used by strict xfails: none left.)


# --------------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def xdb(client):
    """A database for this module's read-mostly collections (one aggregate per case keeps it fast)."""
    name = f"jst_expr_{uuid.uuid4().hex[:8]}"
    yield client[name]
    client.drop_database(name)


@pytest.fixture(scope="module")
def one(xdb):
    """A collection holding one empty document: constant expressions are evaluated over it."""
    coll = xdb["one"]
    coll.insert_one({"_id": 0})
    return coll


@pytest.fixture(scope="module")
def docs(xdb):
    """A collection each case adds its own document to (then selects it by ``_id``)."""
    return xdb["docs"]


_ids = itertools.count(1)


def value_of(coll, expr, field: str = "r"):
    """``expr`` evaluated by ``$project`` over the collection's single document."""
    __tracebackhide__ = True
    out = run_agg(coll, [{"$project": {"_id": 0, field: expr}}])
    assert len(out) == 1, out
    return out[0].get(field, MISSING)


def on_doc_many(coll, doc: dict, exprs: list) -> list:
    """``exprs`` evaluated over ``doc`` (inserted with a fresh ``_id``): the values sit in a document,
    so the expressions are evaluated at run time rather than constant-folded."""
    __tracebackhide__ = True
    _id = next(_ids)
    coll.insert_one(raw({"_id": _id, **doc}))
    project = {f"r{i}": e for i, e in enumerate(exprs)}
    out = run_agg(coll, [{"$match": {"_id": _id}}, {"$project": {"_id": 0, **project}}])
    assert len(out) == 1, out
    return [out[0].get(f"r{i}", MISSING) for i in range(len(exprs))]


def on_doc(coll, doc: dict, expr):
    __tracebackhide__ = True
    return on_doc_many(coll, doc, [expr])[0]


def fails_on_doc(coll, doc: dict, expr, *codes) -> OperationFailure:
    __tracebackhide__ = True
    _id = next(_ids)
    coll.insert_one(raw({"_id": _id, **doc}))
    return aggregate_fails(coll, [{"$match": {"_id": _id}}, {"$project": {"_id": 0, "r": expr}}], *codes)
