"""A time-series bucket takes measurements of one canonical BSON type per field (mongod's
canonicalizeBSONType: every BinData subtype is one type, Code and Code with scope are two) and keeps
each field's min and max in BSON order.

Tidemark gave each type outside its few known ones a class from ``hash(type name)`` (varying with the
process's hash seed), so a UUID (BinData 4) split a bucket of BinData, Code and Code with scope shared
one, and the min/max of regexes, Code, timestamps and UUIDs was the first value seen (their Python
objects do not order) — found by a helper comparing every BSON type in every position. The family:
(Hypothesis) a series of measurements whose field takes values of these types in any order; the
buckets split exactly where the canonical type changes, and each bucket's control min/max is the BSON
min/max of its values.
"""

from __future__ import annotations

import datetime as dt

import pytest
from bson.binary import Binary
from bson.code import Code
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from bson.timestamp import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("insert", "find")

T0 = dt.datetime(2024, 1, 1)

# (canonical type, BSON sort key within it) for each kind of value the test makes
VALUES = st.one_of(
    st.tuples(st.binary(max_size=3), st.sampled_from([0, 3, 4, 5, 0x80])).map(
        lambda p: Binary(p[0] if p[1] not in (3, 4) else p[0].ljust(16, b"u"), p[1])),
    st.tuples(st.sampled_from(["a", "b", "ab"]), st.sampled_from(["", "i", "m"])).map(lambda p: Regex(*p)),
    st.sampled_from(["f", "g"]).map(Code),
    st.tuples(st.sampled_from(["f", "g"]), st.integers(0, 2)).map(lambda p: Code(p[0], {"x": p[1]})),
    st.tuples(st.integers(1, 3), st.integers(0, 2)).map(lambda p: Timestamp(*p)),
    st.just(MinKey()), st.just(MaxKey()),
)


def _canonical(value) -> str:
    if isinstance(value, bytes):  # (pymongo decodes subtype 0 to bytes)
        return "bindata"
    if isinstance(value, Code):
        return "codewscope" if value.scope is not None else "code"
    return type(value).__name__


def _order(value) -> tuple:
    """BSON order within a canonical type."""
    if isinstance(value, bytes):
        return (len(value), getattr(value, "subtype", 0), bytes(value))
    if isinstance(value, Regex):
        return (value.pattern, _flags(value))
    if isinstance(value, Code):
        return (str(value), sorted((value.scope or {}).items()))
    if isinstance(value, Timestamp):
        return (value.time, value.inc)
    return ()


def _flags(regex: Regex) -> str:
    """A regex's flags as letters (pymongo decodes them to ``re`` bits)."""
    if isinstance(regex.flags, str):
        return "".join(sorted(regex.flags))
    return "".join(sorted(letter for bit, letter in ((2, "i"), (8, "m"), (16, "s"), (64, "x")) if regex.flags & bit))


def _same(a, b) -> bool:
    return _canonical(a) == _canonical(b) and _order(a) == _order(b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(VALUES, min_size=1, max_size=12))
def test_buckets_split_on_canonical_type_and_keep_bson_min_max(db, values):
    db.drop_collection("ts")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + dt.timedelta(seconds=i), "m": 1, "x": v} for i, v in enumerate(values)])
    runs: list[list] = []
    for value in values:
        if runs and _canonical(runs[-1][0]) == _canonical(value):
            runs[-1].append(value)
        else:
            runs.append([value])
    buckets = list(db.system.buckets.ts.find({}, sort=[("control.min.t", 1)]))
    assert len(buckets) == len(runs)
    for bucket, run in zip(buckets, runs, strict=True):
        low, high = min(run, key=_order), max(run, key=_order)
        control = bucket["control"]
        assert _same(control["min"]["x"], low) and _same(control["max"]["x"], high), (control, run)
    read = [d["x"] for d in db.ts.find({}, sort=[("t", 1)])]
    assert len(read) == len(values) and all(_same(a, b) for a, b in zip(read, values, strict=True))
