"""Hashed index keys: mongod's ``BSONElementHasher::hash64`` (pure).

The key of a value is the first 8 bytes (little-endian, signed) of the MD5 of: the seed (int32 0),
the value's canonical BSON type (int32), then the value — numbers squashed to a 64-bit integer
(``safeNumberLong``: truncated, NaN -> 0, clamped), documents and arrays element by element with
their field names and a closing EOO (its canonical type 0), code with scope as the code string then
its scope like a document, everything else as its BSON value bytes. So ``1``, ``1.0``,
``Int64(1)`` and ``1.5`` share a key (the filter re-checks), and keys equal mongod's (``{check: 42}``
hashes to -944302157085130861, the constant mongod checks at start-up).
"""

from __future__ import annotations

import hashlib
import math
import struct
from decimal import Decimal
from typing import Any, cast

from bson.code import Code
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark.protocol.codec import encode
from tidemark.protocol.errors import MongoError
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import canonical_type_order, is_number

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _safe_long(v: Any) -> int:
    f: Any = v.to_decimal() if isinstance(v, Decimal128) else v
    if isinstance(f, float) or not isinstance(f, int):
        try:
            if math.isnan(f):
                return 0
        except TypeError:  # a Decimal
            if cast(Decimal, f).is_nan():
                return 0
        if f >= 2**63:
            return _INT64_MAX
        if f < -(2**63):
            return _INT64_MIN
        return int(f)
    return max(_INT64_MIN, min(_INT64_MAX, int(f)))


def _value_bytes(v: Any) -> bytes:
    """The BSON value bytes of a scalar (what follows the type byte and field name)."""
    raw = encode({"k": v})
    return raw[7:-1]  # int32 size, type byte, "k\0" ... trailing NUL


def _add(md5, v: Any, name: str | None) -> None:
    md5.update(struct.pack("<i", canonical_type_order(v)))
    if name is not None:
        md5.update(name.encode() + b"\0")
    if is_number(v):
        md5.update(struct.pack("<q", _safe_long(v)))
        return
    if isinstance(v, DBRef):
        v = v.as_doc()
    if isinstance(v, Code) and v.scope is not None:
        md5.update(str(v).encode() + b"\0")  # the code, then its scope like a sub-document
        v = v.scope
    if isinstance(v, (dict, list, tuple)):
        items = v.items() if isinstance(v, dict) else ((str(i), x) for i, x in enumerate(v))
        for key, sub in items:
            _add(md5, sub, key)
        md5.update(struct.pack("<i", 0))  # the closing EOO element: its canonical type, no name
        return
    md5.update(_value_bytes(v))


def hash64(value: Any, seed: int = 0) -> int:
    md5 = hashlib.md5(struct.pack("<i", seed))
    _add(md5, value, None)
    return struct.unpack("<q", md5.digest()[:8])[0]


def hashed_key(value: Any) -> Int64:
    """The index key of one value of a hashed field (arrays are refused like mongod: 16766)."""
    if isinstance(value, list):
        raise MongoError(16766, "Error: hashed indexes do not currently support array values. Found array "
                                f"{bson_repr(value)}")
    return Int64(hash64(value))
