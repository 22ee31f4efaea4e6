"""Render values the way mongod prints them inside error messages (``{_id: 1}``, ``"x"``)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.query.values import MISSING

__all__ = ["bson_repr", "id_repr"]


def bson_repr(v: Any) -> str:
    if v is None:
        return "null"
    if v is MISSING:
        return "MISSING"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, Int64):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return {"nan": "nan", "inf": "inf", "-inf": "-inf"}[repr(v)]
        return repr(v) if v != int(v) or abs(v) >= 1e16 else str(int(v)) + ".0"
    if isinstance(v, Decimal128):
        return f'NumberDecimal("{v}")'
    if isinstance(v, ObjectId):
        return f"ObjectId('{v}')"
    if isinstance(v, _dt.datetime):
        return "new Date(" + str(int(v.replace(tzinfo=_dt.UTC).timestamp() * 1000)) + ")"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{k}: {bson_repr(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        if not v:
            return "[]"
        return "[ " + ", ".join(bson_repr(x) for x in v) + " ]"
    return str(v)


def id_repr(doc: Any) -> str:
    """``{_id: <value>}`` as mongod prints the document identity in update errors."""
    if isinstance(doc, dict) and "_id" in doc:
        return "{_id: " + bson_repr(doc["_id"]) + "}"
    return "{}"
