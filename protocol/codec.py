"""The one place that configures pymongo's C ``bson`` module for the whole project.

Decisions (every package decodes and encodes through these):
- documents decode to plain ``dict`` (ordered), nested documents too;
- BSON dates decode to naive UTC ``datetime`` (``tz_aware=False``) with millisecond precision;
  dates outside ``datetime``'s range decode to ``bson.datetime_ms.DatetimeMS`` (DATETIME_AUTO),
  so no stored value is ever unreadable;
- int32 decodes to ``int``, int64 to ``bson.int64.Int64`` (an ``int`` subclass), so a value keeps
  its BSON type through decode/encode; doubles to ``float``; Decimal128 stays ``Decimal128``;
- UUIDs use the STANDARD representation (binary subtype 4 <-> ``uuid.UUID``);
- a subdocument with ``$ref`` and ``$id`` stays a plain ``dict`` with its fields in the order sent:
  to mongod it is a document like any other (pymongo's decoder alone would make it a ``DBRef``, its
  fields reordered, which no path, update, projection or index walks into).
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Iterator
from typing import Any

import bson
from bson import json_util
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.dbref import DBRef
from bson.raw_bson import RawBSONDocument

# The C decoder and encoder (pymongo's _cbson), the last step of bson.decode and bson.encode.
_bson_to_dict = bson._bson_to_dict
_dict_to_bson = bson._dict_to_bson

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


class EncodedRun:
    """Documents the server encoded itself, in order, carried as ONE object (``docs``: each document's
    BSON as ``bytes``) from where they are made (a columnar ``$group``/``$sort``: ``groupbson``) to the
    cursor, which takes them into its batches a stretch at a time (``tidemark.cursors._fill_batch``)
    instead of one Python object per document. Iterating it gives the documents one at a time
    (``EncodedDocument``s) for any other consumer. A cursor passes over an empty one.

    ``sizes``: the documents' lengths when their maker knows them — a NumPy int64 array (each
    document's), or an ``int`` when every document is that long (``groupbson.one_head``: no array made
    for a run of one layout) — else None."""

    __slots__ = ("docs", "sizes")

    def __init__(self, docs: list[bytes], sizes: Any = None) -> None:
        self.docs = docs
        self.sizes = sizes

    def __len__(self) -> int:
        return len(self.docs)

    def __iter__(self) -> Iterator[Any]:  # (EncodedDocuments: a document stream's items)
        return map(EncodedDocument, self.docs)


_KEYS_CACHED = 100_000  # array elements' heads kept made (type 0x03, index key, NUL): ~5 MB
_KEYS: list[bytes] = [b"\x03%d\x00" % i for i in range(1024)]
_KEYS_LOCK = threading.Lock()


def element_heads_table(stop: int) -> list[bytes]:
    """The shared table of element heads (``element_heads``) of indexes from 0, made up to ``stop``
    (at most ``_KEYS_CACHED``): read-only, it only ever grows (in place, whole entries under a lock:
    pool threads read it while another grows it)."""
    if stop > len(_KEYS) and len(_KEYS) < _KEYS_CACHED:
        with _KEYS_LOCK:
            have = len(_KEYS)
            if stop > have:
                _KEYS.extend([b"\x03%d\x00" % i for i in range(have, min(max(stop, 2 * have), _KEYS_CACHED))])
    return _KEYS


def element_heads(start: int, stop: int) -> list[bytes]:
    """The heads of the array elements ``start``..``stop - 1`` of a batch of documents: type byte
    (0x03, a document), the index as a decimal key, the key's NUL, as the BSON encoder writes them."""
    table = element_heads_table(stop)
    if stop <= len(table):
        return table[start:stop]
    return table[start:] + [b"\x03%d\x00" % i for i in range(max(start, len(table)), stop)]


class EncodedBatch:
    """A cursor batch: its documents' BSON (``docs``, bytes each, in order), ready to send. ``len``,
    truth and iteration (``EncodedDocument``s) as a list of the documents; ``encode_reply`` writes its
    array from ``docs`` directly (the bytes the encoder writes for a list of the documents)."""

    __slots__ = ("docs",)

    def __init__(self, docs: list[bytes]) -> None:
        self.docs = docs

    def __len__(self) -> int:
        return len(self.docs)

    def __bool__(self) -> bool:
        return bool(self.docs)

    def __iter__(self) -> Iterator[Any]:
        return map(EncodedDocument, self.docs)

    def __eq__(self, other: object) -> bool:  # as the list of its documents
        if isinstance(other, EncodedBatch):
            return self.docs == other.docs
        return isinstance(other, list) and list(self) == other

    __hash__ = None  # type: ignore[assignment]


_SIZE = struct.Struct("<i")


def encode_reply(reply: Any) -> bytes:
    """``encode`` of a command reply, a cursor batch in it (``reply["cursor"]["firstBatch"]`` or
    ``["nextBatch"]``: an ``EncodedBatch``) written as an array of its documents' bytes, each behind
    its element's head (``element_heads``): the reply is encoded with an empty array there, which the
    batch's elements then fill (one join; the two enclosing sizes grow by their bytes). The same bytes
    as ``encode`` of the reply with the batch as a list of its documents."""
    # (``encode``'s C call made here: every reply passes)
    cursor = reply.get("cursor") if type(reply) is dict else None
    if type(cursor) is not dict:
        return _dict_to_bson(reply, False, CODEC_OPTIONS)
    key = "firstBatch"
    batch = cursor.get(key)
    if type(batch) is not EncodedBatch:
        key = "nextBatch"
        batch = cursor.get(key)
        if type(batch) is not EncodedBatch:
            return _dict_to_bson(reply, False, CODEC_OPTIONS)
    data = _dict_to_bson({**reply, "cursor": {**cursor, key: []}}, False, CODEC_OPTIONS)
    docs = batch.docs
    n = len(docs)
    elements: list[bytes] = [b""] * (2 * n)
    elements[0::2] = _KEYS[:n] if n <= len(_KEYS) else element_heads(0, n)
    elements[1::2] = docs
    body = b"".join(elements)
    grown = len(body)
    # where the cursor document starts (after its element's type and name), and its array's size (each
    # document's first key read by a loop that stops at once: next(iter()) would be two calls)
    for first in reply:  # noqa: B007
        break
    at_cursor = (4 if first == "cursor" and "_id" not in reply else _offset(reply, "cursor", top=True)) + 8
    for first in cursor:  # noqa: B007
        break
    at_array = at_cursor + (4 if first == key else _offset(cursor, key, top=False)) + 2 + len(key)
    if data[at_array:at_array + 5] != b"\x05\x00\x00\x00\x00":  # (by construction it is)
        raise AssertionError("cursor batch not where it was encoded")
    cursor_size = int.from_bytes(data[at_cursor:at_cursor + 4], "little") + grown
    return b"".join((_SIZE.pack(len(data) + grown), data[4:at_cursor], _SIZE.pack(cursor_size),
                     data[at_cursor + 4:at_array], _SIZE.pack(grown + 5), body, data[at_array + 4:]))


def _offset(document: dict[str, Any], key: str, top: bool) -> int:
    """The offset of ``key``'s element in ``document`` encoded (``encode`` when ``top``, else
    ``encode_in_order``): past the size and the elements before it (``encode`` puts ``_id`` first)."""
    before = {"_id": document["_id"]} if top and "_id" in document and key != "_id" else {}
    for k, v in document.items():
        if k == key:
            break
        if k != "_id" or not top:
            before[k] = v
    if not before:
        return 4
    return len(encode(before) if top else encode_in_order(before)) - 1


# pymongo's C decoder turns every subdocument holding "$ref" and "$id" into a DBRef (there is no option to
# keep it a document). It builds each one by calling the DBRef class, whose __init__ is Python: that
# __init__ is wrapped (below) to note, per thread, that the decode just made one. A decode that made
# none (nearly all) is the one C call; one that did decodes again through RawBSONDocuments, which keep
# every subdocument as its bytes, made plain dicts in their order (_plain). (Nothing else runs on the
# thread between clearing the note and reading it: the C decoder calls no other Python code.)
_made = threading.local()
_dbref_init = DBRef.__init__


def _noting_dbref_init(self: DBRef, *args: Any, **kwargs: Any) -> None:
    _made.dbref = True
    _dbref_init(self, *args, **kwargs)


DBRef.__init__ = _noting_dbref_init  # type: ignore[method-assign]


def decode(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """Decode one BSON document. Raises ``bson.errors.InvalidBSON`` on malformed input. (The C decoder
    itself: ``bson.decode`` only checks its options' type before calling it, on every command.)"""
    _made.dbref = False
    doc = _bson_to_dict(data, CODEC_OPTIONS)
    if not _made.dbref:
        return doc
    return _plain(_bson_to_dict(data, RAW_CODEC_OPTIONS))


def decode_all(data: bytes | bytearray | memoryview) -> list[dict[str, Any]]:
    """Decode back-to-back BSON documents."""
    _made.dbref = False
    docs = bson.decode_all(data, codec_options=CODEC_OPTIONS)
    if not _made.dbref:
        return docs
    return [_plain(doc) for doc in bson.decode_all(data, codec_options=RAW_CODEC_OPTIONS)]


def _plain(raw: RawBSONDocument) -> dict[str, Any]:
    """``raw`` as ``decode`` gives documents: dicts and lists all the way down, fields in their order.
    Iterative (no recursion whatever the depth); each level's values are decoded by pymongo with the
    same options but for the document class, so every other value is what ``decode`` makes of it."""
    out: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = [(raw.items(), out)]
    while stack:
        items, into = stack.pop()
        for key, value in items:
            if type(value) is list:
                elements: list[Any] = [None] * len(value)
                stack.append((enumerate(value), elements))
                value = elements
            elif isinstance(value, RawBSONDocument):
                fields: dict[str, Any] = {}
                stack.append((value.items(), fields))
                value = fields
            into[key] = value
    return out


def encode(document: Any) -> bytes:
    """Encode one document (a mapping, possibly a RawBSONDocument) to BSON bytes (the C encoder itself,
    as ``bson.encode`` calls it: every reply goes through here)."""
    return _dict_to_bson(document, False, CODEC_OPTIONS)


def document_with_undefined(fields: list[tuple[str, Any]], undefined: Any) -> EncodedDocument:
    """A reply document, in field order, holding BSON undefined (type 6) where a value is ``undefined``
    (the caller's marker: pymongo's encoder has no undefined; mongod's replies hold it where an index key
    of an empty array is shown as it is, splitVector's split keys)."""
    body = bytearray()
    for name, value in fields:
        if value is undefined:
            body += b"\x06" + name.encode("utf-8") + b"\x00"
        else:
            body += encode_in_order({name: value})[4:-1]
    return EncodedDocument((len(body) + 5).to_bytes(4, "little") + bytes(body) + b"\x00")


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


_RELAXED_JSON = json_util.JSONOptions(json_mode=json_util.JSONMode.RELAXED,
                                      uuid_representation=UuidRepresentation.STANDARD)


def relaxed_json(value: Any) -> Any:
    """A value as relaxed Extended JSON data (what mongod's log lines carry: ``{"$oid": ...}``)."""
    return json.loads(json_util.dumps(value, json_options=_RELAXED_JSON))
