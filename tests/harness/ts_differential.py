"""Run generated cases (``harness.pipeline_grammar``) against a regular collection and time-series
collections holding the same documents, and compare the answers.

``load(database, docs)`` creates ``reg`` (regular), ``ts`` (timeField ``t``, metaField ``m``), ``tsnm``
(timeField ``t``, no metaField: ``m`` is a measurement field) and ``dim`` (for ``$lookup``).
``run(collection, case)`` -> ``("ok", documents)`` or ``("error", code)``. ``difference(case, expected,
got)`` -> None, or a message with the case and both answers.

Equality: documents compared without regard to field order, numbers by type and value (doubles to 9
significant digits), errors by code; the answer's order counts only when ``case.ordered``; fields in
``case.unordered`` hold arrays compared as multisets (deeply).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from bson import Decimal128, Int64, ObjectId, Regex
from pymongo.errors import OperationFailure

from harness.pipeline_grammar import DIM, SELF, Case, dim_documents

TIME_SERIES = ("ts", "tsnm")


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


def _substitute(value: Any, name: str) -> Any:
    if value == SELF:
        return name
    if isinstance(value, dict):
        return {k: _substitute(v, name) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, name) for v in value]
    return value


def run(collection: Any, case: Case) -> tuple[str, Any]:
    try:
        if case.kind == "aggregate":
            return "ok", list(collection.aggregate(_substitute(case.pipeline, collection.name)))
        f = case.find
        cursor = collection.find(f.get("filter", {}), f.get("projection"))
        if "sort" in f:
            cursor = cursor.sort(list(f["sort"].items()))
        if "skip" in f:
            cursor = cursor.skip(f["skip"])
        if "limit" in f:
            cursor = cursor.limit(f["limit"])
        return "ok", list(cursor)
    except OperationFailure as exc:
        return "error", exc.code


def normal(value: Any, deep_sort: bool = False) -> Any:
    """A comparable, hashable form: field order ignored, types kept, doubles rounded."""
    t = type(value)
    if t is dict:
        return ("D", tuple(sorted((k, normal(v, deep_sort)) for k, v in value.items())))
    if t is list:
        items = [normal(v, deep_sort) for v in value]
        return ("L", tuple(sorted(items, key=repr) if deep_sort else items))
    if t is bool:
        return ("b", value)
    if t is int:
        return ("i", value)
    if t is Int64:
        return ("l", int(value))
    if t is float:
        if math.isnan(value):
            return ("f", "nan")
        return ("f", float(f"{value:.9g}") + 0.0)
    if t is Decimal128:
        d = value.to_decimal()
        return ("d", "nan" if d.is_nan() else format(d.normalize(), "f") if d.is_finite() else str(d))
    if t is dt.datetime:
        return ("t", value.isoformat())
    if t is ObjectId:
        return ("o", str(value))
    if t is Regex:
        return ("r", value.pattern, value.flags)
    if value is None:
        return ("n",)
    return (t.__name__, repr(value))


def _doc_form(doc: dict, unordered: frozenset) -> Any:
    return ("D", tuple(sorted((k, normal(v, k in unordered)) for k, v in doc.items())))


def comparable(case: Case, answer: tuple[str, Any]) -> Any:
    status, value = answer
    if status == "error":
        return ("error", value)
    docs = [_doc_form(d, case.unordered) for d in value]
    return ("ok", tuple(docs) if case.ordered else tuple(sorted(docs, key=repr)))


def difference(case: Case, expected: tuple[str, Any], got: tuple[str, Any], label: str = "ts") -> str | None:
    """None when the answers agree, else a message: the case and both answers."""
    if comparable(case, expected) == comparable(case, got):
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


def check_case(database: Any, case: Case) -> list[str]:
    """Run ``case`` on the regular collection and on both time-series collections: the differences."""
    expected = run(database["reg"], case)
    out = []
    for name in TIME_SERIES:
        message = difference(case, expected, run(database[name], case), name)
        if message:
            out.append(message)
    return out
