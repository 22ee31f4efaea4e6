"""The one place that configures pymongo's C ``bson`` module for the whole project.

Decisions (every package decodes and encodes through these):
- documents decode to plain ``dict`` (ordered), nested documents too;
- BSON dates decode to naive UTC ``datetime`` (``tz_aware=False``) with millisecond precision;
  dates outside ``datetime``'s range decode to ``bson.datetime_ms.DatetimeMS`` (DATETIME_AUTO),
  so no stored value is ever unreadable;
- int32 decodes to ``int``, int64 to ``bson.int64.Int64`` (an ``int`` subclass), so a value keeps
  its BSON type through decode/encode; doubles to ``float``; Decimal128 stays ``Decimal128``;
- UUIDs use the STANDARD representation (binary subtype 4 <-> ``uuid.UUID``).
"""

from __future__ import annotations

from typing import Any

import bson
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

CODEC_OPTIONS: CodecOptions[dict[str, Any]] = CodecOptions(
    document_class=dict,
    tz_aware=False,
    uuid_representation=UuidRepresentation.STANDARD,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
)

RAW_CODEC_OPTIONS: CodecOptions[RawBSONDocument] = CodecOptions(
    document_class=RawBSONDocument,
    tz_aware=False,
    uuid_representation=UuidRepresentation.STANDARD,
    datetime_conversion=DatetimeConversion.DATETIME_AUTO,
)


class EncodedDocument(RawBSONDocument):
    """A ``RawBSONDocument`` over BSON bytes the server encoded itself (cursor batches of documents made
    straight as BSON): made without parsing the bytes again, and ``raw`` a plain attribute, not a
    property (the encoder reads it for every document of a batch). Otherwise exactly a
    ``RawBSONDocument(data, RAW_CODEC_OPTIONS)``: it sets that class's own (private) slots, which
    pymongo has kept since 3.x (pinned <5; tests/protocol/test_codec.py checks the equivalence)."""

    __slots__ = ("raw",)

    def __init__(self, data: bytes) -> None:
        self.raw = data  # type: ignore[misc]  # the property of the base, shadowed by a slot
        self._RawBSONDocument__raw = data
        self._RawBSONDocument__inflated_doc = None
        self._RawBSONDocument__codec_options = RAW_CODEC_OPTIONS


def decode(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one BSON document. Raises ``bson.errors.InvalidBSON`` on malformed input."""
    return bson.decode(data, codec_options=CODEC_OPTIONS)


def decode_all(data: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
    """Decode back-to-back BSON documents."""
    return bson.decode_all(data, codec_options=CODEC_OPTIONS)


def encode(document: Any) -> bytes:
    """Encode one document (a mapping, possibly a RawBSONDocument) to BSON bytes."""
    return bson.encode(document, codec_options=CODEC_OPTIONS)


def encode_in_order(document: Any) -> bytes:
    """Encode one document keeping its field order exactly.

    ``bson.encode`` moves ``_id`` to the front of every top-level document (what an insert wants).
    Query results must keep the order the query produced — e.g. an unpacked time-series measurement
    is ``{<time>, <meta>, ..., _id}`` in mongod — so cursor batches encode through this. It calls the
    C encoder with ``top_level=False``: a private pymongo entry point, pinned by pyproject (<5).
    """
    return bson._dict_to_bson(document, False, CODEC_OPTIONS, False)


def nesting_exceeds(document: Any, limit: int) -> bool:
    """True when ``document`` (decoded: dicts and lists) nests deeper than ``limit`` levels, the
    document itself being level 1; empty containers count like mongod's (they are levels too).
    Iterative: no recursion whatever the depth."""
    stack = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        for child in value.values() if type(value) is dict else value:
            t = type(child)
            if t is dict or t is list:
                if depth >= limit:
                    return True
                if child:
                    stack.append((child, depth + 1))
    return False
