"""What every port of MongoDB's jstests (``tests/e2e/test_jstests_*.py``) shares: the shell's values
(``ISODate``, ``new Date(n)``, BSON undefined, regexes with any flags), type-exact comparison of results
(the shell's ``assert.eq`` / ``docEq`` / ``sameMembers`` / ``arrayEq``), strict-xfail table rows and the
"this fails with one of these codes" check.

One definition each: the ports used to carry their own copies, which drifted (field order kept in
some and ignored in others, NaN equal to itself in some)."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import bson
import bson.errors
import pytest
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument
from pymongo.errors import OperationFailure

EPOCH = dt.datetime(1970, 1, 1)


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    # a singleton: copies (copy.deepcopy of a test's documents) are the marker itself
    def __copy__(self) -> _Marker:
        return self

    def __deepcopy__(self, memo: dict) -> _Marker:
        return self


MISSING = _Marker("MISSING")  # a field absent from a document
UNDEFINED = _Marker("UNDEFINED")  # BSON undefined (type 6), which pymongo cannot encode: see ``raw``


class RawRegex(NamedTuple):
    """A BSON regex with option letters as given (pymongo's Regex keeps only the flags Python knows)."""

    pattern: str
    flags: str = ""


# --------------------------------------------------------------------------------------------------
# the shell's values


def ms(n: int) -> dt.datetime:
    """``new Date(n)``: ``n`` milliseconds after the epoch (naive UTC, as pymongo decodes dates)."""
    return EPOCH + dt.timedelta(milliseconds=n)


def iso(text: str) -> dt.datetime:
    """``ISODate(text)`` / ``new Date(text)``: naive UTC; a text without an offset is UTC."""
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value


def _element(key: str, value: Any) -> bytes:
    name = key.encode() + b"\x00"
    if value is UNDEFINED:
        return b"\x06" + name
    if isinstance(value, RawRegex):
        return b"\x0b" + name + value.pattern.encode() + b"\x00" + value.flags.encode() + b"\x00"
    if isinstance(value, dict):
        return b"\x03" + name + _document(value.items())
    if isinstance(value, list):
        return b"\x04" + name + _document((str(i), v) for i, v in enumerate(value))
    return bson.encode({key: value})[4:-1]


def _document(items: Iterable[tuple[str, Any]]) -> bytes:
    body = b"".join(_element(k, v) for k, v in items)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def raw(doc: dict) -> RawBSONDocument:
    """``doc`` as raw BSON, where ``UNDEFINED`` and ``RawRegex`` (at any depth) become the BSON values
    pymongo would not write."""
    return RawBSONDocument(_document(doc.items()))


# --------------------------------------------------------------------------------------------------
# comparing results


def canon(value: Any, *, ordered: bool = True, by_value: bool = False) -> Any:
    """A hashable form of a decoded BSON value that keeps what Python's ``==`` loses: the BSON type
    (``1 == 1.0 == True`` in Python; int32, int64, double and decimal stay apart, decimals by their
    exact string) and NaN equal to NaN.

    ``ordered``: documents compare field by field in order (``assert.eq`` compares ``tojson``); False:
    field order is ignored (``assert.docEq``, ``sameMembers``).
    ``by_value``: numbers of any type compare by value (for jstests that write plain JavaScript numbers
    where the server may answer another numeric type)."""
    return _canon(value, ordered, by_value)


def _canon(value: Any, ordered: bool, by_value: bool) -> Any:
    # (exact types first, positional arguments: this runs over every value of large results)
    kind = type(value)
    plain = _PLAIN.get(kind)
    if plain is not None:
        return (plain, value)
    if kind is dict or (kind is not list and isinstance(value, dict)):
        pairs = tuple((k, _canon(v, ordered, by_value)) for k, v in value.items())
        # field names are unique, so sorting the pairs compares the names only
        return ("doc", pairs if ordered else tuple(sorted(pairs, key=_name)))
    if kind is list or isinstance(value, tuple):
        return ("array", tuple(_canon(v, ordered, by_value) for v in value))
    number = _NUMBER_TYPE.get(kind)
    if number is not None:
        exact = value.to_decimal() if kind is Decimal128 else value
        if exact.is_nan() if kind is Decimal128 else exact != exact:  # NaN (quiet or signalling)
            return ("nan",) if by_value else (number, "nan")
        if by_value:
            return ("number", float(exact))
        # (a double by its repr: -0.0 stays apart from 0.0; a decimal by its exact string)
        return (number, repr(value) if kind is float else str(exact) if kind is Decimal128 else int(value))
    if kind is bool:
        return ("bool", value)
    if value is None:
        return ("null",)
    if value is MISSING:
        return ("missing",)
    return (kind.__name__, repr(value))


def _name(pair: tuple[str, Any]) -> str:
    return pair[0]


_NUMBER_TYPE = {int: "int", Int64: "long", float: "double", Decimal128: "decimal"}
# scalars whose Python equality is BSON equality
_PLAIN = {str: "str", dt.datetime: "datetime", ObjectId: "ObjectId"}


def unordered(value: Any) -> Any:
    """``canon`` blind to field order (``assert.docEq``, ``assert.sameMembers``)."""
    return canon(value, ordered=False)


def loose(value: Any) -> Any:
    """``canon`` blind to field order and numeric type (numbers by value): for jstests whose plain
    JavaScript numbers do not pin the type the server answers."""
    return canon(value, ordered=False, by_value=True)


def bag(docs: Iterable[Any], key: Callable[[Any], Any] = canon) -> list[Any]:
    """Documents as an order-free multiset (``arrayEq`` / ``sameMembers``), each compared by ``key``.

    For ``canon`` and ``unordered`` the documents' BSON is compared instead (fields sorted for
    ``unordered``): the same equality (BSON bytes keep the type, -0.0 and NaN as ``canon`` does),
    computed in C, for the ports comparing thousands of documents per case."""
    if key is canon or key is unordered:
        try:
            return sorted(bson.encode(d if key is canon else _fields_sorted(d)) for d in docs)
        except (bson.errors.InvalidDocument, TypeError):  # a marker (MISSING) or a non-document
            pass
    return sorted(repr(key(d)) for d in docs)


def _fields_sorted(value: Any) -> Any:
    kind = type(value)  # (exact types first: this runs over every value of large results)
    if kind is dict or (kind is not list and isinstance(value, dict)):
        return {k: _fields_sorted(value[k]) for k in sorted(value)}
    if kind is list:
        return [_fields_sorted(v) for v in value]
    return value


def seq(docs: Iterable[Any], key: Callable[[Any], Any] = canon) -> list[Any]:
    """Documents in their order, each compared by ``key`` (``assert.eq`` of two arrays)."""
    return [key(d) for d in docs]


def ids(docs: Iterable[Any]) -> list[Any]:
    """The documents' ``_id`` values, sorted."""
    return sorted(d["_id"] for d in docs)


def same_members(actual: Iterable[Any], expected: Iterable[Any], key: Callable[[Any], Any] = canon) -> bool:
    return bag(actual, key) == bag(expected, key)


def assert_same_members(actual: Iterable[Any], expected: Iterable[Any],
                        key: Callable[[Any], Any] = canon) -> None:
    """``assert.sameMembers``: equal as multisets of documents."""
    __tracebackhide__ = True
    actual, expected = list(actual), list(expected)
    if bag(actual, key) != bag(expected, key):
        pytest.fail(f"{actual!r} != {expected!r}"[:4000], pytrace=False)


# --------------------------------------------------------------------------------------------------
# expected failures


def xf(reason: str, *values: Any, id: str | None = None) -> Any:
    """A table row Tidemark is known to answer differently from MongoDB 7.0 (a strict xfail)."""
    return pytest.param(*values, marks=pytest.mark.xfail(strict=True, reason=reason), id=id)


def rows(table: Iterable[Any]) -> list[Any]:
    """The plain values of a table's rows (``pytest.param`` rows unwrapped), to build test ids."""
    return [r.values if hasattr(r, "marks") and hasattr(r, "values") else r for r in table]


def fails(call: Callable[[], Any], *codes: int) -> OperationFailure:
    """``call()`` fails with a server error (with one of ``codes``, when given); the error."""
    __tracebackhide__ = True
    with pytest.raises(OperationFailure) as info:
        call()
    if codes and info.value.code not in codes:
        message = info.value.details.get("errmsg") if info.value.details else str(info.value)
        pytest.fail(f"failed with code {info.value.code} ({message}), expected one of {codes}", pytrace=False)
    return info.value


def command_fails(db: Any, cmd: dict, *codes: int) -> OperationFailure:
    """``db.command(cmd)`` fails (with one of ``codes``, when given); the error."""
    __tracebackhide__ = True
    return fails(lambda: db.command(cmd), *codes)


def aggregate_fails(coll: Any, pipeline: list, *codes: int, **options: Any) -> OperationFailure:
    """The aggregation fails (with one of ``codes``, when given); the error. ``options``: pymongo's
    ``aggregate`` keyword arguments (``let``, ``collation``, ``hint`` ...)."""
    __tracebackhide__ = True
    return fails(lambda: list(coll.aggregate(pipeline, **options)), *codes)


def error_code(call: Callable[[], Any]) -> int:
    """The code of the server error ``call()`` fails with."""
    __tracebackhide__ = True
    return fails(call).code


def ts_pair(db, docs: Iterable[dict], time_field: str, meta_field: str | None = None):
    """A regular collection ``plain`` and a time-series collection ``ts`` holding the same documents
    (for ports that check a time-series view answers as an ordinary collection)."""
    options = {"timeField": time_field} | ({"metaField": meta_field} if meta_field else {})
    db.create_collection("ts", timeseries=options)
    db.create_collection("plain")
    docs = list(docs)
    if docs:
        db.ts.insert_many([dict(d) for d in docs])
        db.plain.insert_many([dict(d) for d in docs])
    return db.plain, db.ts


def plan_stages(node: Any) -> list[str]:
    """Every stage name of an explain plan tree, top down (``inputStage`` and ``inputStages``)."""
    if not isinstance(node, dict):
        return []
    names = [node["stage"]] if "stage" in node else []
    for child in [node.get("inputStage"), *node.get("inputStages", [])]:
        names.extend(plan_stages(child))
    return names


def malformed_buckets(now: dt.datetime) -> list[dict]:
    """Bucket documents the buckets collection's ``$jsonSchema`` validator refuses (121): a control
    version that is no number, min/max times that are no dates, ``data`` no object, an unknown top-level
    field (timeseries_schema_validation.js, timeseries_create.js)."""
    return [
        {"control": {"version": "not a number", "min": {"time": now}, "max": {"time": now}}, "data": {}},
        {"control": {"version": 1, "min": {"time": "not a date"}, "max": {"time": now}}, "data": {}},
        {"control": {"version": 1, "min": {"time": now}, "max": {"time": "not a date"}}, "data": {}},
        {"control": {"version": 1, "min": {"time": now}, "max": {"time": now}}, "data": "not an object"},
        {"invalid_bucket_field": 1},
    ]


def timeseries_read_details(explained: Any) -> dict | None:
    """The time-series read's own details in an explain answer (the plan's ``timeseries`` document, the
    one with ``bucketsUnpacked``), wherever the answer nests it; None when there is none."""
    if isinstance(explained, dict):
        found = explained.get("timeseries")
        if isinstance(found, dict) and "bucketsUnpacked" in found:
            return found
        values: Any = explained.values()
    elif isinstance(explained, list):
        values = explained
    else:
        return None
    for value in values:
        found = timeseries_read_details(value)
        if found is not None:
            return found
    return None
