"""``splitVector``: the split points a sharded cluster would cut a collection's key range at, as a
standalone mongod 7.0 computes them (src/mongo/db/s/split_vector_command.cpp and split_vector.cpp;
``splitVector`` action on the namespace; no writeConcern); and ``checkShardingIndex``, whether the
collection has an index a shard key could use (check_sharding_index_command.cpp; ``find`` on the
namespace; no writeConcern). Both find that index as mongod's findShardKeyPrefixedIndex
(shard_key_index_util.cpp: ``shard_key_index``): the ready, visible indexes the key pattern prefixes
that are neither partial nor sparse and compare strings simply, the first single-key one, else the
last multikey one (splitVector only). checkShardingIndex's refusals are errmsg-style (no code):
"no key pattern found in checkShardingindex", "ns not found", or "couldn't find valid index for shard
key" followed by one line per index passed over ("Index <name> cannot be used for sharding because:"
and its reasons: partial, sparse, multikey, non-simple collation, not a prefix); ``{_id: ...}`` alone
answers ``{idskip: true}`` without looking.

``{splitVector: "<db>.<coll>", keyPattern, min?, max?, maxChunkSize (MB) | maxChunkSizeBytes,
maxSplitPoints?, maxChunkObjects?, force?}``:

- the namespace is the first field, fully qualified (2 for a non-string, 73 without a collection);
  an empty or missing ``keyPattern`` and only one of ``min``/``max`` are refused by message alone
  (mongod's errmsg-style failures, ``{ok: 0, errmsg}`` without ``code``: ``ErrmsgFailure``; the
  profiler records them as 8 UnknownError, as mongod's getStatusFromCommandResult reads them);
  ``maxChunkObjects`` must be positive, ``maxChunkSize`` within [1, 1024] MB and ``maxChunkSizeBytes``
  within [1 MB, 1 GB] (72); without either and without ``force``: 72 "need to specify the desired max
  chunk size".
- the collection must exist (26 "ns not found"; a view 166) and have an index whose key pattern
  starts with ``keyPattern`` and that is neither sparse, partial nor non-simple-collation (27
  "couldn't find index over splitting key ...").
- nothing to split (data smaller than the chunk size, no documents, one key value in the range): [].
- otherwise the index is walked over [min, max) (each bound extended with MinKey/MaxKey per field
  direction, as KeyPattern::extendRangeBound), and every key after ``keyCount`` entries becomes a split
  point unless it equals the previous one (``keyCount`` = chunk size / (2 * average document size),
  capped by ``maxChunkObjects``, default 250,000); ``maxSplitPoints`` stops the walk; ``force`` walks
  once to count and splits at the middle. A split point is ``{<keyPattern field>: <index key value>}``.

The walk reads the index in its storage order through one read view (mongod's index scan); the
values reported are the documents' own (their exact number types) where a document holds the key
value itself, the decoded index value otherwise (a multikey element, a hash).
"""

from __future__ import annotations

from typing import Any

from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey

from tidemark.arguments import safe_number_long
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.protocol.codec import decode, document_with_undefined, encode
from tidemark.protocol.errors import ErrmsgFailure, ErrorCode, MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expr_logic import truthy
from tidemark.query.index_keys import MULTIKEY_FLAG
from tidemark.query.index_kinds import key_direction
from tidemark.query.paths import MISSING, get_path
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import compare, is_number
from tidemark.storage.keys import UNDEFINED, decode_key, encode_key

MAX_OBJECTS_PER_CHUNK = 250_000  # mongod's kMaxObjectPerChunk
_ARRAY_ITEM_BYTES = 2  # kEstimatedAdditionalBytesPerItemInBSONArray
_MAX_USER_SIZE = 16 * 1024 * 1024  # BSONObjMaxUserSize: the reply's split keys stay under it
_MB = 1024 * 1024


def _namespace(cmd: dict) -> tuple[str, str]:
    """CommandHelpers::parseNsFullyQualified."""
    value = next(iter(cmd.values()))
    if type(value) is not str:
        raise MongoError(ErrorCode.BadValue, f"collection name has invalid type {type_name(value)}")
    db, dot, coll = value.partition(".")
    if not db or not dot or not coll or "\0" in value or any(c in db for c in '/\\. "$'):
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{value}'")
    return db, coll


def _object_field(cmd: dict, name: str) -> dict:
    """BSONObj::getObjectField: the field when it is an object, else an empty one."""
    value = cmd.get(name)
    return value if isinstance(value, dict) else {}


def _optional_long(cmd: dict, name: str) -> int | None:
    value: Any = cmd.get(name)
    return safe_number_long(value) if is_number(value) and not isinstance(value, bool) else None


def _max_chunk_size_bytes(cmd: dict) -> int | None:
    megabytes = _optional_long(cmd, "maxChunkSize")
    if megabytes is not None:
        if not 1 <= megabytes <= 1024:
            raise MongoError(ErrorCode.InvalidOptions, "maxChunkSize must lie within the range [1MB, 1024MB]")
        return megabytes << 20
    size = _optional_long(cmd, "maxChunkSizeBytes")
    if size is not None and not _MB <= size <= 1024 * _MB:
        raise MongoError(ErrorCode.InvalidOptions,
                         "The specified max chunk size must lie within the range [1MB, 1024MB]")
    return size


def _is_prefix(key_pattern: dict, index_key: dict) -> bool:
    """BSONObj::isPrefixOf with the simple element comparator: same names, equal values, in order."""
    if len(key_pattern) > len(index_key):
        return False
    for (name, value), (index_name, index_value) in zip(key_pattern.items(), index_key.items(), strict=False):
        if name != index_name or compare(value, index_value) != 0:
            return False
    return True


def _unusable_reasons(info, spec: dict, key_pattern: dict, require_single_key: bool) -> list[str]:
    """isCompatibleWithShardKey (src/mongo/db/s/shard_key_index_util.cpp): why the index cannot serve
    the shard key (nothing: it can), in mongod's order of reasons."""
    collation = spec.get("collation")
    simple = not collation or collation.get("locale") == "simple"
    reasons = []
    if "partialFilterExpression" in spec:
        reasons.append("partial")
    if spec.get("sparse"):
        reasons.append("sparse")
    if not _is_prefix(key_pattern, spec["key"]):
        reasons.append("prefix")
    if not reasons:
        if not spec.get(MULTIKEY_FLAG, info.clustered):
            if simple:
                return []
        else:
            reasons.append("multikey")
        if not require_single_key and simple:
            return []
    if not simple:
        reasons.append("collation")
    return reasons


_REASON_TEXT = {"partial": " Index key is partial.", "sparse": " Index key is sparse.",
                "multikey": " Index key is multikey.", "collation": " Index has a non-simple collation.",
                "prefix": " Shard key is not a prefix of index key."}
_REASON_ORDER = ("partial", "sparse", "multikey", "collation", "prefix")


def shard_key_index(info, key_pattern: dict, *, require_single_key: bool) -> tuple[dict | None, list[str]]:
    """findShardKeyPrefixedIndex: the first ready, visible index the shard key can use that is not
    multikey, else the last one that is (allowed when ``require_single_key`` is false), with the reason
    lines of every index it passed over ("Index <name> cannot be used for sharding because: ...")."""
    best: dict | None = None
    lines: list[str] = []
    for spec in info.indexes:
        if spec.get("hidden"):
            continue
        reasons = _unusable_reasons(info, spec, key_pattern, require_single_key)
        if not reasons:
            if not spec.get(MULTIKEY_FLAG, info.clustered):
                return spec, lines
            best = spec
            continue
        lines.append(f"Index {spec['name']} cannot be used for sharding because:"
                     + "".join(_REASON_TEXT[r] for r in _REASON_ORDER if r in reasons))
    return best, lines


def _extend_bound(bound: dict, index_key: dict, upper: bool) -> list:
    """KeyPattern::extendRangeBound: the bound's values, then MinKey/MaxKey for each further field (its
    direction flipped for an inclusive upper bound)."""
    fields = list(index_key)
    if len(bound) > len(fields) or any(name != fields[i] for i, name in enumerate(bound)):
        raise MongoError(16634, f"field names of bound {_show(bound)} do not match those of keyPattern "
                                f"{_show(index_key)}")
    values = list(bound.values())
    for name in fields[len(bound):]:
        value = index_key[name]
        order = key_direction(value) if is_number(value) else 1
        if upper:
            order = -order
        values.append(MinKey() if order > 0 else MaxKey())
    return values


def _show(doc: dict) -> str:
    return bson_repr(doc)


def _split_key(r, info, key_pattern: dict, key: bytes, rid: bytes, directions: tuple[int, ...]) -> Any:
    """orderShardKeyFields: the index key's first fields under the key pattern's names (an empty array's
    key as BSON undefined, as mongod's KeyString gives it back: ``document_with_undefined``)."""
    decoded = decode_key(key, directions, undefined=UNDEFINED)
    raw = r.get(info, rid)
    doc = decode(bytes(raw)) if raw is not None else {}
    out: dict[str, Any] = {}
    for (name, kind), value in zip(key_pattern.items(), decoded, strict=False):
        if kind == "hashed":
            out[name] = Int64(value)
            continue
        own = get_path(doc, name)
        if own is MISSING:
            out[name] = value  # (indexed as null)
        elif isinstance(own, list) or compare(own, value) != 0:
            out[name] = value  # a multikey element: the index's own value
        else:
            out[name] = own
    if any(value is UNDEFINED for value in out.values()):
        return document_with_undefined(list(out.items()), UNDEFINED)
    return out


def split_points(r, info, key_pattern: dict, bound_min: dict, bound_max: dict, *, force: bool,
                 max_split_points: int | None, max_chunk_objects: int | None,
                 max_chunk_size: int | None) -> list[Any]:
    """mongod's splitVector() over the collection ``info`` in the read view ``r``."""
    if not max_chunk_objects:
        max_chunk_objects = MAX_OBJECTS_PER_CHUNK
    spec, _ = shard_key_index(info, key_pattern, require_single_key=False)
    if spec is None:
        raise MongoError(ErrorCode.IndexNotFound, f"couldn't find index over splitting key {_show(key_pattern)}")
    index_key = spec["key"]
    directions = tuple(key_direction(v) if is_number(v) else 1 for v in index_key.values())
    lo = encode_key(_extend_bound(bound_min, index_key, False), directions)
    hi = encode_key(_extend_bound(bound_max, index_key, not bound_max), directions)
    count, data_size = r.count(info), r.data_size(info)
    if force:
        max_chunk_size = data_size
    if not max_chunk_size or max_chunk_size <= 0:
        raise MongoError(ErrorCode.InvalidOptions, "need to specify the desired max chunk size")
    if data_size < max_chunk_size or count == 0:
        return []
    key_count = max_chunk_size // (2 * (data_size // count)) if data_size // count else max_chunk_size
    if max_chunk_objects < key_count:
        key_count = max_chunk_objects

    def scan(reverse: bool = False):
        return r.index_scan(info, spec["name"], lo, hi, lo_inclusive=True, hi_inclusive=False, reverse=reverse)

    first = next(iter(scan()), None)
    if first is None:
        raise MongoError(ErrorCode.OperationFailed,
                         "can't open a cursor to scan the range (desired range is possibly empty)")
    last = next(iter(scan(reverse=True)))
    components = len(index_key)
    if _prefix_key(first[0], directions, components) == _prefix_key(last[0], directions, components):
        return []  # one key value in the whole range: nothing to split at
    width = len(key_pattern)
    split_keys: list[bytes] = [_prefix_key(first[0], directions, width)]
    chosen: list[Any] = []
    response_size = 0
    current, chunks = 0, 0
    while True:
        for key, rid in scan():
            current += 1
            if current > key_count and not force:
                prefix = _prefix_key(key, directions, width)
                if prefix != split_keys[-1]:
                    split_key = _split_key(r, info, key_pattern, key, rid, directions)
                    size = len(encode(split_key)) + _ARRAY_ITEM_BYTES
                    if response_size + size > _MAX_USER_SIZE:
                        break
                    response_size += size
                    split_keys.append(prefix)
                    chosen.append(split_key)
                    current = 0
                    chunks += 1
            if max_split_points and chunks >= max_split_points:
                break
        if not force:
            break
        force = False  # the first pass only counted: split at the middle
        key_count, current = current // 2, 0
    return chosen


def _prefix_key(key: bytes, directions: tuple[int, ...], width: int) -> bytes:
    """The encoding of the key's first ``width`` components (what equality of split keys compares)."""
    return encode_key(decode_key(key, directions[:width], undefined=UNDEFINED), directions[:width])


async def split_vector(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    db, coll = _namespace(cmd)
    key_pattern = _object_field(cmd, "keyPattern")
    if not key_pattern:
        raise ErrmsgFailure("no key pattern found in splitVector")
    bound_min, bound_max = _object_field(cmd, "min"), _object_field(cmd, "max")
    if bool(bound_min) != bool(bound_max):
        raise ErrmsgFailure("either provide both min and max or leave both empty")
    force = truthy(cmd.get("force"))  # (BSONElement::trueValue)
    max_split_points = _optional_long(cmd, "maxSplitPoints")
    max_chunk_objects = _optional_long(cmd, "maxChunkObjects")
    if max_chunk_objects is not None and max_chunk_objects <= 0:
        raise MongoError(ErrorCode.InvalidOptions, "maxChunkObjects must be greater than 0")
    max_chunk_size = _max_chunk_size_bytes(cmd)
    ns = C.ns_of(db, coll)

    def run():
        with ctx.server.engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                if C.get_view(r, db, coll) is not None:
                    raise C.view_write_error(db, coll)
                raise MongoError(ErrorCode.NamespaceNotFound, "ns not found")
            return split_points(r, info, key_pattern, bound_min, bound_max, force=force,
                                max_split_points=max_split_points, max_chunk_objects=max_chunk_objects,
                                max_chunk_size=max_chunk_size)

    return {"splitKeys": await ctx.run_blocking(run)}


async def check_sharding_index(ctx: CommandContext, cmd: dict[str, Any]) -> dict[str, Any]:
    """``{checkShardingIndex: "<db>.<coll>", keyPattern}`` (src/mongo/db/s/check_sharding_index_command.cpp,
    an errmsg-style command): ``{idskip: true}`` for ``{_id: ...}`` alone; ``{}`` when an index the shard
    key may use exists and is not multikey."""
    db, coll = _namespace(cmd)
    key_pattern = _object_field(cmd, "keyPattern")
    if not key_pattern:
        raise ErrmsgFailure("no key pattern found in checkShardingindex")
    if len(key_pattern) == 1 and next(iter(key_pattern)) == "_id":
        return {"idskip": True}
    ns = C.ns_of(db, coll)

    def run() -> str | None:
        """The errmsg of the refusal, or None when an index serves the shard key."""
        with ctx.server.engine.read() as r:
            info = r.get_collection(ns)
            if info is None:
                if C.get_view(r, db, coll) is not None:
                    raise C.view_write_error(db, coll)
                return "ns not found"
            spec, lines = shard_key_index(info, key_pattern, require_single_key=True)
            return None if spec is not None else "\n".join(["couldn't find valid index for shard key", *lines])

    refusal = await ctx.run_blocking(run)
    if refusal is not None:
        raise ErrmsgFailure(refusal)
    return {}


COMMANDS = [
    CommandSpec("checkShardingIndex", check_sharding_index, help="Internal command.\n"),
    CommandSpec("splitVector", split_vector,
                help="Internal command. { splitVector : \"blog.post\" , keyPattern:{x:1} , min:{x:10} , max:{x:20}, "
                     "maxChunkSize:200 } (maxChunkSize in MBs; maxSplitPoints and maxChunkObjects avoid traversing "
                     "the whole chunk; force: true gives one split point even if data is small)"),
]
