"""Capped collections: their create options and the insert-time trim (the storage rules every writer
follows; the commands convertToCapped and cloneCollectionAsCapped are in server/commands/capped.py).

Invariants:
- A capped collection's options hold ``{capped: true, size, max?}`` as mongod prints them: ``size`` in
  bytes rounded up to a multiple of 256, ``max`` (documents) only when given (<= 0 means 2^31 - 1).
- Records keep insertion order: a capped collection is an ordinary collection with counter record ids,
  so a natural-order scan is insertion order and the oldest record comes first.
- Every write function that inserts into a capped collection calls :func:`trim` before it returns,
  inside the same write transaction: the oldest records are removed while the collection holds more than
  ``max`` documents or more than ``size`` bytes of BSON (mongod's dataSize rule). A reader therefore
  never sees a capped collection over its limits, and an insert that fails removes nothing.
- The newest record is never trimmed: a document larger than ``size`` is stored and every older one
  removed, as mongod 7.0 does (its capped deletes stop at the record just inserted; the storage
  engines' old "object to insert exceeds cappedMaxSize" refusal is gone since 6.0).
- Deletes and updates are allowed (mongod 5.0+); they never trim.
"""

from __future__ import annotations

from dataclasses import dataclass

from bson.decimal128 import Decimal128

from tidemark.arguments import safe_number_long, wrong_type
from tidemark.core import collection as C
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError

MAX_SIZE = 1024**5  # 1 PB, mongod's limit
MAX_DOCS = 2**31 - 1
PROFILE_SIZE = 1024 * 1024  # system.profile: 1 MB, like mongod


@dataclass(frozen=True, slots=True)
class Limits:
    size: int
    max: int


def limits(info) -> Limits | None:
    """The caps of a collection, None when it is not capped."""
    options = info.options if info is not None else None
    if not options or not options.get("capped"):
        return None
    return Limits(int(options.get("size") or 0), int(options.get("max") or MAX_DOCS))


def _number(cmd: dict, field: str, command: str, *, allow_bool: bool = False):
    value = cmd.get(field)
    if value is None:
        return None
    ok = isinstance(value, int | float | Decimal128) and (allow_bool or not isinstance(value, bool))
    if not ok:
        numbers = ("long", "int", "decimal", "double")
        raise wrong_type(f"{command}.{field}", value, ("bool", *numbers) if allow_bool else numbers)
    if isinstance(value, bool):
        return value
    return safe_number_long(value)  # mongod's IDL types these safeInt64: NaN is 0, infinities clamp


def adjusted_size(size) -> int:
    """mongod's rounding: up to the next multiple of 256."""
    size = int(size)
    if size < 1:
        raise MongoError(51024, f"BSON field 'size' value must be >= 1, actual value '{size}'")
    if size > MAX_SIZE:
        raise MongoError(ErrorCode.BadValue, "size cannot exceed 1 PB")
    return (size + 0xFF) & ~0xFF


def parse_create_options(cmd: dict, command: str = "create") -> dict:
    """``{capped: True, size, max?}`` from a create command, or ``{}`` for an uncapped collection.
    Errors as mongod 7.0: size required with capped (72), capped required with size/max (72)."""
    capped = _number(cmd, "capped", command, allow_bool=True)
    size = _number(cmd, "size", command)
    max_docs = _number(cmd, "max", command)
    if size is not None and size < 1:
        adjusted_size(size)  # mongod's IDL refuses it before anything else (51024)
    if capped:
        if not size:
            raise MongoError(ErrorCode.InvalidOptions, "the 'size' field is required when 'capped' is true")
    elif size or max_docs:
        raise MongoError(ErrorCode.InvalidOptions,
                         "the 'capped' field needs to be true when either the 'size' or 'max' fields are present")
    else:
        return {}
    options: dict = {"capped": True, "size": adjusted_size(size)}
    if max_docs is not None:
        options["max"] = _max_docs(max_docs)
    return options


def _max_docs(value) -> int:
    """A ``max`` / ``cappedMax``: below 2^31; zero or negative means no document limit."""
    max_docs = int(value)
    if max_docs > MAX_DOCS:
        raise MongoError(ErrorCode.BadValue, "max in a capped collection has to be < 2^31 or not set")
    return max_docs if max_docs > 0 else MAX_DOCS


def parse_coll_mod(cmd: dict) -> dict:
    """The new caps a collMod asks for: ``{"size": n}`` and/or ``{"max": n}`` (empty when none)."""
    changes: dict = {}
    size = _number(cmd, "cappedSize", "collMod")
    if size is not None:
        if size < 1:
            raise MongoError(51024, f"BSON field 'cappedSize' value must be >= 1, actual value '{int(size)}'")
        changes["size"] = adjusted_size(size)
    max_docs = _number(cmd, "cappedMax", "collMod")
    if max_docs is not None:
        changes["max"] = _max_docs(max_docs)
    return changes


def coll_mod(w, info, changes: dict) -> None:
    """Apply new caps to a capped collection (72 on any other) and trim it to them at once."""
    if limits(info) is None:
        raise MongoError(ErrorCode.InvalidOptions,
                         f"option only supported on a capped collection: {'cappedSize' if 'size' in changes else 'cappedMax'}")
    options = dict(info.options)
    options.update(changes)
    info = w.set_options(info.ns, options)
    trim(w, info)


def trim(w, info, cap: Limits | None = None) -> int:
    """Remove the oldest records while the collection is over its caps (inside the caller's write
    transaction); returns how many were removed. The victims are read first, then deleted, so no scan
    is open while the transaction writes."""
    cap = cap or limits(info)
    if cap is None:
        return 0
    info = w.get_collection(info.ns) or info
    count, size = w.count(info), w.data_size(info)
    if count <= cap.max and size <= cap.size:
        return 0
    victims: list[tuple[bytes, bytes]] = []
    for rid, raw in w.scan(info):
        if count <= 1 or count <= cap.max and size <= cap.size:
            break  # (the newest record stays, whatever its size)
        victims.append((bytes(rid), bytes(raw)))
        count -= 1
        size -= len(raw)
    for rid, raw in victims:
        w.delete(info, rid, C.index_keys(info, decode(raw)))
    return len(victims)


def truncate_newest(w, info, n: int, *, inclusive: bool) -> int:
    """mongod's cappedTruncateAfter as the test command ``captrunc`` reaches it: the (n+1)-th newest
    record is the boundary; every newer record goes, and the boundary too when ``inclusive``. The
    collection must hold more than ``n`` records (mongod scans back n+1 of them first). Returns how many
    were removed; the victims are read before any is deleted, as in :func:`trim`."""
    victims: list[tuple[bytes, bytes]] = []
    for rid, raw in w.scan(info, reverse=True):
        victims.append((bytes(rid), bytes(raw)))
        if len(victims) > n:
            break
    if len(victims) <= n:
        raise MongoError(ErrorCode.IllegalOperation, f"invalid n, collection contains fewer than {n} documents")
    if not inclusive:
        victims.pop()
    for rid, raw in victims:
        w.delete(info, rid, C.index_keys(info, decode(raw)))
    return len(victims)


def remove_all(w, info) -> int:
    """Every record of ``info`` and its index entries removed (mongod's RecordStore truncate, as the
    test command ``emptycapped`` reaches it); the collection, its options and indexes stay. Returns how
    many were removed."""
    victims = [(bytes(rid), bytes(raw)) for rid, raw in w.scan(info)]
    for rid, raw in victims:
        w.delete(info, rid, C.index_keys(info, decode(raw)))
    return len(victims)


def insert_documents(w, info, docs) -> int:
    """Insert already-prepared documents into an existing collection and trim it (the copy of
    convertToCapped/cloneCollectionAsCapped and the profiler's entries). Returns how many were stored."""
    cap = limits(info)
    n = 0
    for doc in docs:
        raw = C.encode_doc(doc)
        if cap is not None and len(raw) > cap.size:
            continue  # mongod's clone skips what can never fit
        info, keys = C.write_keys(w, info, doc)
        w.insert(info, raw, keys)
        n += 1
    trim(w, info, cap)
    return n
