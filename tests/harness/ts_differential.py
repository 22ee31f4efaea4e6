"""Run generated cases (``harness.pipeline_grammar``) against a regular collection and time-series
collections holding the same documents, and compare the answers.

``load(database, docs)`` creates ``reg`` (regular), ``ts`` (timeField ``t``, metaField ``m``), ``tsnm``
(timeField ``t``, no metaField: ``m`` is a measurement field) and ``dim`` (for ``$lookup``).
``run(collection, case)`` -> ``("ok", documents)`` or ``("error", code)``. ``check(database, case, name)``
-> None, or a message with the case and both answers (``difference`` compares two answers).

Equality: documents compared without regard to field order, numbers by type and value (doubles to 9
significant digits, decimals too), errors by code; the answer's order counts only when ``case.ordered``; fields in
``case.unordered`` hold arrays compared as multisets (deeply).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterator
from typing import Any

from bson import Decimal128, Int64, ObjectId, Regex
from pymongo.errors import OperationFailure

from harness.pipeline_grammar import DIM, SELF, Case, dim_documents

TIME_SERIES = ("ts", "tsnm")


def in_memory_then_stored(ts: Any, reg: Any, docs: list[dict], settle: dict) -> Iterator[bool]:
    """Refill a time-series collection and a regular one with ``docs`` (``_id`` = position), then yield
    False while the time-series buckets are in memory and True once a direct write (``delete_many``
    of ``settle``, which matches nothing and names no meta point — a write naming meta points settles
    only the buckets of those series) has settled them: every bucket stored."""
    ts.delete_many({})
    reg.delete_many({})
    for i, doc in enumerate(docs):
        doc["_id"] = i
    ts.insert_many([dict(d) for d in docs])
    reg.insert_many([dict(d) for d in docs])
    yield False
    ts.delete_many(settle)
    yield True


def load(database: Any, docs: list[dict], batch: int = 200) -> None:
    for name in ("reg", "ts", "tsnm", DIM):
        database.drop_collection(name)
    database.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    database.create_collection("tsnm", timeseries={"timeField": "t"})
    for start in range(0, len(docs), batch):
        chunk = docs[start:start + batch]
        for name in ("reg", "ts", "tsnm"):
            database[name].insert_many([dict(d) for d in chunk])
    database[DIM].insert_many(dim_documents())
    for name in ("reg", "ts", "tsnm"):
        for keys in INDEXES:
            database[name].create_index(keys)


# On every collection (the time-series one with metaField m also has its default {m: 1, t: 1}; on
# ``tsnm`` ``m`` is a measurement holding arrays, which a time-series index refuses, as mongod does).
INDEXES = ([("w", 1)], [("t", -1)])


def _substitute(value: Any, name: str) -> Any:
    if value == SELF:
        return name
    if isinstance(value, dict):
        return {k: _substitute(v, name) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, name) for v in value]
    return value


def run(collection: Any, case: Case) -> tuple[str, Any]:
    """The answer: ("ok", documents) or ("error", code); ``count`` answers [{"n": count}],
    ``distinct`` [{"v": value}, ...] (so that every answer is a list of documents)."""
    try:
        extra: dict[str, Any] = {"hint": case.hint} if case.hint is not None else {}
        if case.collation is not None:
            extra["collation"] = case.collation
        f = case.find
        if case.kind == "aggregate":
            if case.batch_size:
                extra["batchSize"] = case.batch_size
            return "ok", list(collection.aggregate(_substitute(case.pipeline, collection.name), **extra))
        if case.kind == "count":
            for key in ("skip", "limit"):
                if key in f:
                    extra[key] = f[key]
            return "ok", [{"n": collection.count_documents(f.get("filter", {}), **extra)}]
        if case.kind == "distinct":
            extra.pop("hint", None)
            return "ok", [{"v": v} for v in collection.distinct(f["key"], f.get("filter", {}), **extra)]
        cursor = collection.find(f.get("filter", {}), f.get("projection"), **extra)
        if "sort" in f:
            cursor = cursor.sort(list(f["sort"].items()))
        if "skip" in f:
            cursor = cursor.skip(f["skip"])
        if "limit" in f:
            cursor = cursor.limit(f["limit"])
        if case.batch_size:
            cursor = cursor.batch_size(case.batch_size)
        return "ok", list(cursor)
    except OperationFailure as exc:
        return "error", exc.code


def normal(value: Any, deep_sort: bool = False) -> Any:
    """A comparable, hashable form: field order ignored, types kept (doubles and decimals exact here;
    ``close`` compares them with a tolerance)."""
    t = type(value)
    if t is dict:
        return ("D", tuple(sorted((k, normal(v, deep_sort)) for k, v in value.items())))
    if t is list:
        items = [normal(v, deep_sort) for v in value]
        return ("L", tuple(sorted(items, key=_order) if deep_sort else items))
    if t is bool:
        return ("b", value)
    if t is int:
        return ("i", value)
    if t is Int64:
        return ("l", int(value))
    if t is float:
        return ("f", "nan") if math.isnan(value) else ("f", value + 0.0)
    if t is Decimal128:
        d = value.to_decimal()
        return ("d", "nan") if d.is_nan() else ("d", float(d)) if d.is_finite() else ("d", str(d))
    if t is dt.datetime:
        return ("t", value.isoformat())
    if t is ObjectId:
        return ("o", str(value))
    if t is Regex:
        return ("r", value.pattern, value.flags)
    if value is None:
        return ("n",)
    return (t.__name__, repr(value))


def _coarse(form: Any) -> Any:
    """``form`` with numbers rounded to 6 significant digits: an order for multisets that ``close``
    values share (but for the rare one on a rounding boundary, which the matching below handles)."""
    if isinstance(form, tuple) and len(form) == 2 and form[0] in ("f", "d") and isinstance(form[1], float):
        return (form[0], float(f"{form[1]:.6g}") if math.isfinite(form[1]) else form[1])
    if isinstance(form, tuple):
        return tuple(_coarse(x) for x in form)
    return form


def _order(form: Any) -> tuple[str, str]:
    """The multiset order: coarse, then exact (so that equal values line up whatever their order)."""
    return repr(_coarse(form)), repr(form)


def close(a: Any, b: Any) -> bool:
    """Equal forms, doubles and decimals to 9 significant digits: sums, averages, standard deviations
    and covariances round differently in another input order (decimals round at 34 digits, and the
    covariance works in doubles)."""
    if a == b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        if len(a) == 2 and a[0] == b[0] and a[0] in ("f", "d") and isinstance(a[1], float) and isinstance(b[1], float):
            return math.isclose(a[1], b[1], rel_tol=1e-9, abs_tol=1e-12)
        return all(close(x, y) for x, y in zip(a, b, strict=True))
    return False


def _doc_form(doc: dict, unordered: frozenset) -> Any:
    return ("D", tuple(sorted((k, normal(v, k in unordered)) for k, v in doc.items())))


def comparable(case: Case, answer: tuple[str, Any]) -> Any:
    status, value = answer
    if status == "error":
        return ("error", value)
    docs = [_doc_form(d, case.unordered) for d in value]
    return ("ok", tuple(docs) if case.ordered else tuple(sorted(docs, key=_order)))


def same(case: Case, expected: tuple[str, Any], got: tuple[str, Any]) -> bool:
    a, b = comparable(case, expected), comparable(case, got)
    if a == b or close(a, b):
        return True
    if a[0] != "ok" or b[0] != "ok" or case.ordered or len(a[1]) != len(b[1]):
        return False
    # a multiset whose coarse order put two close documents apart: exact matches first, then close ones
    unmatched = list(b[1])
    exact = {}
    for i, doc in enumerate(unmatched):
        exact.setdefault(doc, []).append(i)
    rest, taken = [], set()
    for doc in a[1]:
        if exact.get(doc):
            taken.add(exact[doc].pop())
        else:
            rest.append(doc)
    unmatched = [doc for i, doc in enumerate(unmatched) if i not in taken]
    for doc in rest:
        for i, other in enumerate(unmatched):
            if close(doc, other):
                del unmatched[i]
                break
        else:
            return False
    return True


def difference(case: Case, expected: tuple[str, Any], got: tuple[str, Any], label: str = "ts") -> str | None:
    """None when the answers agree, else a message: the case and both answers."""
    if same(case, expected, got):
        return None
    return (f"{label} differs from the regular collection\ncase: {case.describe()}\n"
            f"regular: {_show(expected)}\n{label}: {_show(got)}")


def _show(answer: tuple[str, Any], limit: int = 8) -> str:
    status, value = answer
    if status == "error":
        return f"error {value}"
    head = value[:limit]
    more = f" ... ({len(value)} documents)" if len(value) > limit else f" ({len(value)} documents)"
    return repr(head) + more


# Input orders a time-series read may resemble (bucket order: by series, then time).
INPUT_ORDERS = ({"_id": 1}, {"_id": -1}, {"t": 1}, {"t": -1}, {"m": 1, "t": 1}, {"m": -1, "t": 1})


def check(database: Any, case: Case, name: str, expected: tuple[str, Any] | None = None) -> str | None:
    """Run ``case`` on time-series collection ``name`` and compare with the regular collection's answer
    (``expected``, run when not given): None or the difference.

    A failure on one side only, or with different codes, is no difference when the regular collection
    answers the time-series answer for another order of the same documents (or a collection scan):
    two documents fail differently, or a limit stops before the failing one, and which comes first
    depends on the (unspecified) order the collection is read in."""
    regular = database["reg"]
    if expected is None:
        expected = run(regular, case)
    got = run(database[name], case)
    message = difference(case, expected, got, name)
    if message and "error" in (expected[0], got[0]):
        if case.kind == "aggregate":
            others = [dataclasses.replace(case, pipeline=[{"$sort": order}, *case.pipeline]) for order in INPUT_ORDERS]
        else:  # a collection scan reads (and may fail on) documents an index scan with a limit skips
            others = [dataclasses.replace(case, hint={"$natural": 1})]
        for other in others:
            answer = run(regular, other)
            if "error" in (answer[0], got[0]) and same(case, answer, got):
                return None
    return message
