"""Render values the way mongod prints them inside error messages (``{_id: 1}``, ``"x"``)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from tidemark.query.values import MISSING

__all__ = ["bson_repr", "id_element", "id_repr"]


def bson_repr(v: Any) -> str:
    if v is None:
        return "null"
    if v is MISSING:
        return "MISSING"
    if isinstance(v, bool):
        return "true" if v else "false"
    if type(v) is str:
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
    if isinstance(v, DatetimeMS):  # a date outside Python's range
        return f"new Date({int(v)})"
    if isinstance(v, bytes):  # BinData (a plain bytes is subtype 0)
        return _bindata_repr(v)
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{k}: {bson_repr(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        if not v:
            return "[]"
        return "[ " + ", ".join(bson_repr(x) for x in v) + " ]"
    if isinstance(v, DBRef):  # a decoded {$ref, $id, $db} subdocument: mongod prints the document
        return bson_repr(v.as_doc().to_dict())
    if isinstance(v, MinKey):
        return "MinKey"
    if isinstance(v, MaxKey):
        return "MaxKey"
    if isinstance(v, Timestamp):
        return f"Timestamp({v.time}, {v.inc})"
    if isinstance(v, Regex):
        return f"/{v.pattern}/{_regex_flags(v.flags)}"
    return str(v)


def _bindata_repr(v: bytes) -> str:
    """BSONElement::toString of BinData: ``BinData(<subtype>, <HEX>)``, a 16-byte UUID (subtype 4) as
    its lower-case hyphenated form, more than 80 bytes cut to the first 70 and "..."."""
    subtype = v.subtype if isinstance(v, Binary) else 0
    if subtype == 4 and len(v) == 16:
        h = v.hex()
        return f"BinData(4, {h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]})"
    shown = v[:70].hex().upper() + "..." if len(v) > 80 else v.hex().upper()
    return f"BinData({subtype}, {shown})"


def _regex_flags(flags: int | str) -> str:
    if isinstance(flags, str):
        return flags
    # pymongo keeps the flags as Python re bits: mongod prints the letters in alphabetical order
    letters = {2: "i", 4: "l", 8: "m", 16: "s", 32: "u", 64: "x"}
    return "".join(letter for bit, letter in sorted(letters.items(), key=lambda kv: kv[1]) if flags & bit)


def id_repr(doc: Any) -> str:
    """``{_id: <value>}`` as mongod prints the document identity in update errors; ``{no id}`` for a
    document without one (an upsert's, before its ``_id`` is generated)."""
    return "{" + id_element(doc) + "}"


def id_element(doc: Any) -> str:
    """The ``_id`` element as mongod's ``Element::toString`` renders it (``_id: 1``), or ``no id``."""
    if isinstance(doc, dict) and "_id" in doc:
        return "_id: " + bson_repr(doc["_id"])
    return "no id"
