"""Order-preserving byte encoding of decoded BSON values, in MongoDB's comparison order.

``encode_key(values, directions)`` maps a tuple of values to bytes so that comparing the bytes
(memcmp, which is what LMDB does) compares the tuples the way MongoDB's ``woCompare`` does:

    MinKey < undefined (the key of an empty array) < null (and missing) < numbers < strings < objects < arrays < binary
    < ObjectId < bool < date < timestamp < regex < code < code with scope < MaxKey

Invariants the rest of storage (and the query planner) rely on:
- Every value's encoding is *prefix-free* (no encoding is a proper prefix of another), so the
  concatenation of components compares component-wise, and inverting a component's bytes
  (descending direction) exactly reverses its order.
- Numbers compare by value across int / Int64 / float / Decimal128: ``1 == 1.0 == Int64(1) ==
  Decimal128("1")`` encode identically, ``-0.0`` encodes as ``0``, NaN (double or decimal) sorts
  below every other number, then ``-inf``, finite values, ``+inf``. Every number is ordered by
  its exact value, as mongod's KeyString orders them and its matcher compares them
  (compareDecimalToDouble is exact): the double 0.1 (0.1000000000000000055511151231257827021...)
  sorts above ``Decimal128("0.1000000000000000055511151231257827")``, ``2**53 + 1`` above ``2.0**53``.
- Strings compare as raw UTF-8 bytes (no collation); embedded NULs are escaped.
- Objects compare element by element: value type, then field name, then value; shorter first.
  Arrays compare element by element the same way (without names).
- Binary compares by length, then subtype, then bytes (mongod's order).

Number layout: tag 0x14, then a class byte (NaN 1, -inf 2, negative 3, zero 4, positive 5, +inf 6);
finite non-zero values continue with a 2-byte biased decimal exponent and base-100 digit pairs
(1..100) ending in 0x00; negative values have those bytes inverted. A value of at most 34
significant digits (every int64 and Decimal128, and the doubles that hold such a value) has its
digits without trailing zeros; a double whose exact value needs more has its first 34 digits and
then the pair "00" (byte 1), which no canonical digit string ends with: that sorts just above the
truncation and below every 34-digit value above it, where the double lies (no other key can).
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

# Canonical type tags (gaps leave room; only their order matters).
T_MINKEY = 0x05
T_UNDEFINED = 0x08  # what mongod keys an empty array as (below null, as BSON undefined sorts)
T_NULL = 0x0A
T_NUMBER = 0x14
T_STRING = 0x1E
T_OBJECT = 0x28
T_ARRAY = 0x32
T_BINARY = 0x3C
T_OBJECTID = 0x46
T_BOOL = 0x50
T_DATE = 0x5A
T_TIMESTAMP = 0x64
T_REGEX = 0x6E
T_CODE = 0x78
T_CODE_W_SCOPE = 0x82
T_MAXKEY = 0xF0

# The stored key format: 2 = numbers by exact value (format 1 keyed a double as its 34-digit rounding,
# equal to a Decimal128 the matcher finds unequal) and the undefined tag (format 1 had none: the server
# keyed an empty array as null); 3 = a wildcard index keys an empty array as undefined too (format 2's
# wildcard keys held it as the array: what a wildcard index holds changed, not this encoding). The
# catalog records each index's format; older ones are rebuilt (server/core/key_format.py).
KEY_FORMAT = 3
RECORD_IDS_SINCE = 2  # the format whose record ids (a clustered collection's encoded _id) are today's


class _Undefined:
    """BSON undefined as an index key value: the key of an empty array (mongod's BtreeKeyGenerator).
    pymongo decodes undefined as None, so no document value is this; only key extraction makes it."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Any = _Undefined()

_END = 0x00  # ends objects, arrays, digit strings; below every type tag

_N_NAN, _N_NEG_INF, _N_NEG, _N_ZERO, _N_POS, _N_POS_INF = 1, 2, 3, 4, 5, 6
_EXP_BIAS = 0x8000

_INVERT = bytes(255 - i for i in range(256))
# BCD byte 16a + b of a digit pair "ab" -> its digit-pair byte 10a + b + 1 (1..100; 0 is _END)
_BCD_PAIR = bytes((j >> 4) * 10 + (j & 15) + 1 if j >> 4 < 10 and j & 15 < 10 else 0 for j in range(256))
# A double whose exact value has more than 34 significant digits (no Decimal128 or int64 holds it):
# its 34 digits truncated, then this non-canonical pair "00" before the end. A canonical value
# never ends in a "00" pair (trailing zeros are stripped), so the key sorts after every value at or
# below the truncation and before every value above it, exactly where the double lies.
_INEXACT = b"\x01"
_TRUNC34 = decimal.Context(prec=34, rounding=decimal.ROUND_DOWN, Emax=999999, Emin=-999999)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_EPOCH_AWARE = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_REGEX_FLAG_LETTERS = ((re.IGNORECASE, "i"), (re.LOCALE, "l"), (re.MULTILINE, "m"), (re.DOTALL, "s"),
                       (re.UNICODE, "u"), (re.VERBOSE, "x"))


# ---------------------------------------------------------------------------------------------
# numbers


def _put_digits(out: bytearray, negative: bool, adjusted: int, digits: str, tail: bytes = b"") -> None:
    """Finite non-zero number with significant ``digits`` (no trailing zeros), leading digit at
    10**adjusted; ``tail`` (``_INEXACT``) marks a double lying just above those digits."""
    if len(digits) & 1:
        digits += "0"
    # bytes.fromhex reads the digit pairs as BCD bytes (16a + b), which the table maps to 10a + b + 1
    body = (adjusted + _EXP_BIAS).to_bytes(2, "big") + bytes.fromhex(digits).translate(_BCD_PAIR) + tail + b"\x00"
    if negative:
        out.append(_N_NEG)
        out += body.translate(_INVERT)
    else:
        out.append(_N_POS)
        out += body


def _put_int(out: bytearray, n: int) -> None:
    out.append(T_NUMBER)
    if n == 0:
        out.append(_N_ZERO)
        return
    s = str(-n if n < 0 else n)
    _put_digits(out, n < 0, len(s) - 1, s.rstrip("0"))


def _put_decimal(out: bytearray, d: decimal.Decimal) -> None:
    out.append(T_NUMBER)
    if d.is_nan():
        out.append(_N_NAN)
        return
    if d.is_infinite():
        out.append(_N_NEG_INF if d.is_signed() else _N_POS_INF)
        return
    if d.is_zero():
        out.append(_N_ZERO)
        return
    sign, digit_tuple, exponent = d.as_tuple()
    assert isinstance(exponent, int)  # finite: the NaN/infinity letters returned above
    s = "".join(map(str, digit_tuple))
    stripped = s.rstrip("0")
    _put_digits(out, bool(sign), exponent + len(s) - 1, stripped)


def _put_float(out: bytearray, f: float) -> None:
    if f != f:
        out += bytes((T_NUMBER, _N_NAN))
    elif f == math.inf:
        out += bytes((T_NUMBER, _N_POS_INF))
    elif f == -math.inf:
        out += bytes((T_NUMBER, _N_NEG_INF))
    elif f.is_integer() and -9.3e18 < f < 9.3e18:
        _put_int(out, int(f))  # exact, and the fast path for integral doubles
    else:
        # 40 significant digits, correctly rounded: when digits 35..40 are not all zero, rounding
        # there did not carry into the first 34, so those are the exact value truncated to 34 digits
        # and the double lies strictly between that decimal and the next 34-digit one
        text = "%.39e" % (f if f > 0 else -f)
        mantissa = text[0] + text[2:41]
        if mantissa[34:] != "000000":
            out.append(T_NUMBER)
            _put_digits(out, f < 0, int(text[42:]), mantissa[:34].rstrip("0"), _INEXACT)
        else:  # exactly 34 digits or fewer, or a carry: decide with the exact value (rare)
            _put_exact_float(out, f)


def _put_exact_float(out: bytearray, f: float) -> None:
    exact = decimal.Decimal(f)
    truncated = _TRUNC34.plus(exact)
    if truncated == exact:
        _put_decimal(out, exact)
        return
    sign, digit_tuple, exponent = truncated.as_tuple()
    assert isinstance(exponent, int)
    s = "".join(map(str, digit_tuple))
    out.append(T_NUMBER)
    _put_digits(out, bool(sign), exponent + len(s) - 1, s.rstrip("0"), _INEXACT)


# ---------------------------------------------------------------------------------------------
# everything else


def _put_cstring(out: bytearray, raw: bytes) -> None:
    out += raw.replace(b"\x00", b"\x00\xff")
    out += b"\x00\x00"


def _put_str(out: bytearray, s: str) -> None:
    out.append(T_STRING)
    # (``_put_cstring`` inline: every string bound of a scan and string key written)
    out += s.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff")
    out += b"\x00\x00"


def _put_binary(out: bytearray, subtype: int, data: bytes) -> None:
    out.append(T_BINARY)
    out += len(data).to_bytes(4, "big")
    out.append(subtype)
    out += data


def _put_date(out: bytearray, millis: int) -> None:
    out.append(T_DATE)
    out += (millis + (1 << 63)).to_bytes(8, "big")


def _put_datetime(out: bytearray, dt: datetime.datetime) -> None:
    delta = dt - (_EPOCH_NAIVE if dt.tzinfo is None or dt.utcoffset() is None else _EPOCH_AWARE)
    # (``_put_date`` inline: every time bound of a scan and date key written)
    out.append(T_DATE)
    out += ((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000 + (1 << 63)).to_bytes(8, "big")


def _regex_flags(flags: Any) -> str:
    if isinstance(flags, str):
        return "".join(sorted(flags))
    return "".join(letter for bit, letter in _REGEX_FLAG_LETTERS if flags & bit)


def _put_regex(out: bytearray, pattern: Any, flags: Any) -> None:
    out.append(T_REGEX)
    raw = pattern.encode("utf-8") if isinstance(pattern, str) else bytes(pattern)
    _put_cstring(out, raw)
    _put_cstring(out, _regex_flags(flags).encode("ascii"))


def _put_object(out: bytearray, doc: Mapping[str, Any]) -> None:
    out.append(T_OBJECT)
    for name, value in doc.items():
        encoded = bytearray()
        _put(encoded, value)
        # type, then name, then value: mongod compares the canonical type before the field name
        out.append(encoded[0])
        _put_cstring(out, name.encode("utf-8", "surrogatepass"))
        out += memoryview(encoded)[1:]
    out.append(_END)


def _put_array(out: bytearray, items: Sequence[Any]) -> None:
    out.append(T_ARRAY)
    for value in items:
        _put(out, value)
    out.append(_END)


def _put_code(out: bytearray, code: Code) -> None:
    if code.scope is None:
        out.append(T_CODE)
        _put_cstring(out, str(code).encode("utf-8"))
    else:
        out.append(T_CODE_W_SCOPE)
        _put_cstring(out, str(code).encode("utf-8"))
        _put_object(out, code.scope)


def _put_objectid(out: bytearray, oid: ObjectId) -> None:
    out.append(T_OBJECTID)
    out += oid.binary


def _put_timestamp(out: bytearray, ts: Timestamp) -> None:
    out.append(T_TIMESTAMP)
    out += ts.time.to_bytes(4, "big")
    out += ts.inc.to_bytes(4, "big")


# Appends the encoding of one value of the type it is registered for.
_Put = Callable[[bytearray, Any], None]

_BY_TYPE: dict[type, _Put] = {
    int: _put_int,
    Int64: _put_int,
    float: _put_float,
    str: _put_str,
    Decimal128: lambda out, v: _put_decimal(out, v.to_decimal()),
    decimal.Decimal: _put_decimal,
    type(None): lambda out, v: out.append(T_NULL),
    bool: lambda out, v: out.extend((T_BOOL, 1 if v else 0)),
    ObjectId: _put_objectid,
    datetime.datetime: _put_datetime,
    DatetimeMS: lambda out, v: _put_date(out, int(v)),
    dict: _put_object,
    list: _put_array,
    tuple: _put_array,
    bytes: lambda out, v: _put_binary(out, 0, v),
    Binary: lambda out, v: _put_binary(out, v.subtype, bytes(v)),
    uuid.UUID: lambda out, v: _put_binary(out, 4, v.bytes),
    Timestamp: _put_timestamp,
    Regex: lambda out, v: _put_regex(out, v.pattern, v.flags),
    re.Pattern: lambda out, v: _put_regex(out, v.pattern, v.flags & ~re.UNICODE),
    MinKey: lambda out, v: out.append(T_MINKEY),
    _Undefined: lambda out, v: out.append(T_UNDEFINED),
    MaxKey: lambda out, v: out.append(T_MAXKEY),
    Code: _put_code,
    DBRef: lambda out, v: _put_object(out, v.as_doc()),
}


def _put(out: bytearray, value: Any) -> None:
    put = _BY_TYPE.get(type(value))
    if put is None:
        put = _fallback(value)
    put(out, value)


def _fallback(value: Any) -> _Put:
    """Subclasses and other mappings/sequences; checked most-specific first."""
    for cls in (bool, Code, Binary, Int64, int, float, str, bytes, datetime.datetime, Mapping):
        if isinstance(value, cls):
            return _BY_TYPE.get(cls, _put_object)
    if isinstance(value, (list, tuple)):
        return _put_array
    raise TypeError(f"cannot encode a value of type {type(value).__name__} as an index key")


# ---------------------------------------------------------------------------------------------
# public API


def encode_value(value: Any) -> bytes:
    """Ascending, prefix-free encoding of one decoded BSON value."""
    out = bytearray()
    _put(out, value)
    return bytes(out)


def encode_key(values: Sequence[Any], directions: Sequence[int] | None = None) -> bytes:
    """Encode a compound key. ``directions[i] < 0`` inverts component i (descending index field).

    Missing fields should be passed as ``None`` (MongoDB indexes missing as null).
    """
    out = bytearray()
    if directions is None:
        for value in values:
            _put(out, value)
        return bytes(out)
    for value, direction in zip(values, directions, strict=True):
        # (``_put``'s dispatch inline: every index scan's bounds and every index entry written come here)
        put = _BY_TYPE.get(type(value)) or _fallback(value)
        if direction < 0:
            part = bytearray()
            put(part, value)
            out += part.translate(_INVERT)
        else:
            put(out, value)
    return bytes(out)


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string that starts with ``prefix``
    (None if there is none: the prefix is empty or all 0xFF)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + _BYTES[stripped[-1] + 1]  # (every exclusive scan start / inclusive end)


_BYTES = tuple(bytes((i,)) for i in range(256))  # each byte value as a one-byte string, made once


def type_bracket(tag: int) -> tuple[bytes, bytes]:
    """Bounds (lo inclusive, hi exclusive) around every ascending encoding of one type tag,
    e.g. ``type_bracket(T_STRING)`` for "all strings"."""
    return bytes([tag]), bytes([tag + 1])


# ---------------------------------------------------------------------------------------------
# decoding (for error messages such as a duplicate key's keyValue; types of numbers are not kept:
# 1.0 decodes as 1)


def _read_cstring(key: bytes, pos: int) -> tuple[bytes, int]:
    parts = []
    while True:
        end = key.index(b"\x00", pos)
        parts.append(key[pos:end])
        if key[end + 1] == 0xFF:
            parts.append(b"\x00")
            pos = end + 2
        else:
            return b"".join(parts), end + 2


def _decode_number(key: bytes, pos: int) -> tuple[Any, int]:
    cls = key[pos]
    pos += 1
    if cls == _N_NAN:
        return math.nan, pos
    if cls == _N_NEG_INF:
        return -math.inf, pos
    if cls == _N_POS_INF:
        return math.inf, pos
    if cls == _N_ZERO:
        return 0, pos
    negative = cls == _N_NEG
    end = key.index(b"\xff" if negative else b"\x00", pos + 2)
    body = key[pos:end]
    if negative:
        body = body.translate(_INVERT)
    adjusted = int.from_bytes(body[:2], "big") - _EXP_BIAS
    digits = "".join(f"{b - 1:02d}" for b in body[2:]).rstrip("0") or "0"
    exponent = adjusted - (len(digits) - 1)
    dec = decimal.Decimal((0, tuple(map(int, digits)), exponent))
    if body[-1] == _INEXACT[0]:  # the one double between ``dec`` and the next 34-digit decimal
        f = float(dec)
        if decimal.Decimal(f) <= dec:
            f = math.nextafter(f, math.inf)
        return (-f if negative else f), end + 1
    return _number_value(dec.copy_negate() if negative else dec), end + 1


def _number_value(dec: decimal.Decimal) -> Any:
    if dec == dec.to_integral_value() and -(1 << 63) <= dec < (1 << 63):
        n = int(dec)
        return n if -(1 << 31) <= n < (1 << 31) else Int64(n)
    f = float(dec)
    if math.isfinite(f) and decimal.Decimal(f) == dec:
        return f
    return Decimal128(dec)


def _decode_payload(tag: int, key: bytes, pos: int) -> tuple[Any, int]:
    if tag == T_NUMBER:
        return _decode_number(key, pos)
    if tag == T_STRING:
        raw, pos = _read_cstring(key, pos)
        return raw.decode("utf-8", "surrogatepass"), pos
    if tag == T_NULL:
        return None, pos
    if tag == T_OBJECT:
        doc = {}
        while key[pos] != _END:
            value_tag = key[pos]
            name, pos = _read_cstring(key, pos + 1)
            doc[name.decode("utf-8", "surrogatepass")], pos = _decode_payload(value_tag, key, pos)
        return doc, pos + 1
    if tag == T_ARRAY:
        items = []
        while key[pos] != _END:
            value, pos = _decode_payload(key[pos], key, pos + 1)
            items.append(value)
        return items, pos + 1
    if tag == T_BINARY:
        length = int.from_bytes(key[pos:pos + 4], "big")
        subtype = key[pos + 4]
        data = key[pos + 5:pos + 5 + length]
        pos += 5 + length
        if subtype == 0:
            return data, pos
        if subtype == 4 and length == 16:
            return uuid.UUID(bytes=data), pos
        return Binary(data, subtype), pos
    if tag == T_OBJECTID:
        return ObjectId(key[pos:pos + 12]), pos + 12
    if tag == T_BOOL:
        return key[pos] == 1, pos + 1
    if tag == T_DATE:
        millis = int.from_bytes(key[pos:pos + 8], "big") - (1 << 63)
        try:
            return _EPOCH_NAIVE + datetime.timedelta(milliseconds=millis), pos + 8
        except OverflowError:
            return DatetimeMS(millis), pos + 8
    if tag == T_TIMESTAMP:
        return Timestamp(int.from_bytes(key[pos:pos + 4], "big"),
                         int.from_bytes(key[pos + 4:pos + 8], "big")), pos + 8
    if tag == T_REGEX:
        pattern, pos = _read_cstring(key, pos)
        flags, pos = _read_cstring(key, pos)
        return Regex(pattern.decode("utf-8"), flags.decode("ascii")), pos
    if tag in (T_CODE, T_CODE_W_SCOPE):
        code, pos = _read_cstring(key, pos)
        scope = None
        if tag == T_CODE_W_SCOPE:
            scope, pos = _decode_payload(T_OBJECT, key, pos + 1)
        return Code(code.decode("utf-8"), scope), pos
    if tag == T_MINKEY:
        return MinKey(), pos
    if tag == T_UNDEFINED:
        return None, pos  # (a reply cannot hold undefined: shown as null, as for keyValue)
    if tag == T_MAXKEY:
        return MaxKey(), pos
    raise ValueError(f"not an encoded key: unknown type tag {tag:#x} at offset {pos - 1}")


def decode_value(key: bytes, pos: int = 0) -> tuple[Any, int]:
    """Decode one ascending value starting at ``pos``; returns (value, position after it)."""
    return _decode_payload(key[pos], key, pos + 1)


def decode_key(key: bytes, directions: Sequence[int], undefined: Any = None) -> tuple[Any, ...]:
    """Inverse of ``encode_key`` up to number types (all numbers decode to int/float/Decimal128
    by value). ``len(directions)`` components are read; trailing bytes (a record id) are ignored.
    A component keyed undefined (an empty array's) decodes as ``undefined`` (None: as a reply shows
    it where it cannot hold undefined; ``UNDEFINED`` to tell it from null)."""
    key = bytes(key)
    values = []
    pos = 0
    for direction in directions:
        if direction < 0:
            rest = key[pos:].translate(_INVERT)
            value, used = decode_value(rest)
            tag = rest[0]
        else:
            value, used = decode_value(key, pos)
            tag = key[pos]
            used -= pos
        values.append(undefined if tag == T_UNDEFINED else value)
        pos += used
    return tuple(values)


__all__ = ["KEY_FORMAT", "RECORD_IDS_SINCE", "UNDEFINED", "encode_key", "encode_value", "decode_key", "decode_value", "prefix_end", "type_bracket"]
