"""Shared helpers, reasons and fixtures of the expression jstest ports (``tests/e2e/test_jstests_expressions_*.py``):
values compared with their BSON types, strict-xfail rows, module-scoped collections."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import uuid

import bson
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.min_key import MinKey
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Marker("MISSING")  # a field absent from a document
UNDEFINED = _Marker("UNDEFINED")  # stands for BSON undefined (type 6), which pymongo cannot encode
INF = float("inf")
NAN = float("nan")
EPOCH = dt.datetime(1970, 1, 1)

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


def ms(n: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=n)


# --------------------------------------------------------------------------------------------------
# comparison helpers


def canon(value):
    """A comparable form of a BSON value keeping the numeric type (decimals by exact string), NaN
    equal to NaN, and document field order."""
    if value is MISSING:
        return ("missing",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, Int64):
        return ("long", int(value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("double", "nan") if math.isnan(value) else ("double", value)
    if isinstance(value, Decimal128):
        return ("decimal", str(value))
    if isinstance(value, dict):
        return ("doc", tuple((k, canon(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(canon(v) for v in value))
    if value is None:
        return ("null",)
    return (type(value).__name__, value)


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


def encode(doc: dict) -> RawBSONDocument:
    """The document as BSON with every ``UNDEFINED`` (also inside arrays) turned into BSON undefined.
    MinKey stands in while encoding: like undefined it has no value bytes, so lengths stay right."""
    names: list[str] = []

    def swap(value, name):
        if value is UNDEFINED:
            names.append(name)
            return MinKey()
        if isinstance(value, dict):
            return {k: swap(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v, str(i)) for i, v in enumerate(value)]
        return value

    raw = bson.encode({k: swap(v, k) for k, v in doc.items()})
    for name in set(names):
        element = b"\xff" + name.encode() + b"\x00"
        raw = raw.replace(element, b"\x06" + name.encode() + b"\x00")
    return RawBSONDocument(raw)


def run_agg(coll, pipeline, **kwargs) -> list:
    """The aggregation's documents; a server error fails the test with its code and message."""
    __tracebackhide__ = True
    try:
        return list(coll.aggregate(pipeline, **kwargs))
    except OperationFailure as exc:
        message = exc.details.get("errmsg") if exc.details else str(exc)
        fail(f"aggregate failed with code {exc.code}: {message}")


def assert_fails(coll, pipeline, *codes, **kwargs) -> OperationFailure:
    """The aggregation fails; with ``codes``, with one of them."""
    __tracebackhide__ = True
    try:
        out = list(coll.aggregate(pipeline, **kwargs))
    except OperationFailure as exc:
        if codes and exc.code not in codes:
            message = exc.details.get("errmsg") if exc.details else str(exc)
            fail(f"failed with code {exc.code} ({message}), expected one of {codes}")
        return exc
    fail(f"did not fail (expected one of {codes or 'any code'}); returned {out!r}"[:2000])


def xf(reason: str, *values, id: str | None = None):
    """A table row Tidemark is known to answer differently from MongoDB 7.0 (a strict xfail)."""
    return pytest.param(*values, marks=pytest.mark.xfail(strict=True, reason=reason), id=id)


def rows(table) -> list:
    """The plain values of a table's rows (``pytest.param`` rows unwrapped), to build test ids."""
    return [r.values if hasattr(r, "marks") and hasattr(r, "values") else r for r in table]


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
    coll.insert_one(encode({"_id": _id, **doc}))
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
    coll.insert_one(encode({"_id": _id, **doc}))
    return assert_fails(coll, [{"$match": {"_id": _id}}, {"$project": {"_id": 0, "r": expr}}], *codes)
