"""Collection statistics: collStats (and the `$collStats` stage's storageStats), validate, dataSize.

Sizes come from storage counters (stored record bytes, index bytes). ``validate`` re-derives every
index key from the records and compares the counts with what each index holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey

from tidemark import log
from tidemark.arguments import safe_number_long, wrong_type
from tidemark.arguments import scale_arg as _scale
from tidemark.coll_stats import add_unstored as _add_unstored
from tidemark.coll_stats import empty_stats as _empty_stats
from tidemark.coll_stats import storage_stats
from tidemark.commands import timeseries as ts
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.core.clustered import cluster_info
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query.expr_logic import truthy
from tidemark.query.index_keys import MULTIKEY_FLAG, keyer_for
from tidemark.query.index_kinds import key_direction
from tidemark.query.values import equal
from tidemark.storage.keys import encode_key


async def coll_stats(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "collStats")
    scale = _scale(cmd)
    ns = C.ns_of(db, name)

    def work():
        with ctx.server.engine.read() as r:
            resolved = namespace.lookup(r, db, name, follow=False)  # the command's one resolution
            if resolved.view is not None:
                return resolved, None
            info = resolved.info
            stats = storage_stats(r, info, scale) if info else _empty_stats(scale)
        if C.is_buckets_collection(name, info):  # in-memory buckets not stored yet count too
            _add_unstored(stats, ts.unstored_buckets(ctx.server, ns), scale)
        return resolved, stats

    resolved, stats = await ctx.run_blocking(work)
    view = resolved.view
    if C.is_timeseries_view(view):
        return await ts.VIEW_COMMANDS["collStats"](ctx, cmd, resolved)
    if view is not None:
        raise MongoError(ErrorCode.CommandNotSupportedOnView, f"Namespace {ns} is a view, not a collection")
    if cmd.get("indexDetails") and resolved.info is not None:
        stats["indexDetails"] = _index_details(cmd, resolved.info, stats.get("indexSizes") or {})
    return {"ns": ns, **stats}


def _index_details(cmd: dict, info, sizes: dict) -> dict:
    """``indexDetails: true``: the storage engine's facts per index (mongod: WiredTiger's statistics;
    here the LMDB table and its size), only the index ``indexDetailsKey`` or ``indexDetailsName``
    names when one is given (apitest_dbcollection.js)."""
    key, name = cmd.get("indexDetailsKey"), cmd.get("indexDetailsName")
    if key is not None and not isinstance(key, dict):
        raise MongoError(ErrorCode.TypeMismatch, "indexDetailsKey must be an object")
    if name is not None and type(name) is not str:
        raise MongoError(ErrorCode.TypeMismatch, "indexDetailsName must be a string")
    if key is not None and name is not None:
        raise MongoError(ErrorCode.BadValue, "Only one of indexDetailsKey and indexDetailsName may be specified")
    wanted = list(key.items()) if key is not None else None  # (a key pattern's field order counts)
    details: dict = {}
    for spec in info.indexes:
        if (wanted is not None and list(spec["key"].items()) != wanted) or (name is not None and spec["name"] != name):
            continue
        details[spec["name"]] = {"type": "lmdb", "uri": info.index_idents.get(spec["name"], ""),
                                 "size": sizes.get(spec["name"], Int64(0))}
    return details


async def validate(ctx: CommandContext, cmd: dict) -> dict:
    db = ctx.db
    name = C.collection_arg(cmd, "validate")
    ns = C.ns_of(db, name)
    _check_validate_options(cmd)

    def work():
        nonlocal ns
        with ctx.server.engine.read() as r:
            view = C.get_view(r, db, name)
            if view is not None and C.is_timeseries_view(view):
                ns = C.ns_of(db, view["viewOn"])  # mongod 6.2+: validate the buckets collection
            elif view is not None:
                raise MongoError(ErrorCode.CommandNotSupportedOnView, "Cannot validate a view")
            info = r.get_collection(ns)
            if info is None:
                raise MongoError(ErrorCode.NamespaceNotFound, f"Collection '{ns}' does not exist to validate.")
            report = _Report(ns, info)
            keyers = {s["name"]: keyer_for(s) for s in info.indexes}
            expected = dict.fromkeys(keyers, 0)
            stored: set[bytes] = set()
            for rid, raw in r.scan(info):
                stored.add(rid)
                try:
                    doc = decode(raw)
                except Exception:  # noqa: BLE001 - a corrupt record is what validate reports
                    report.invalid += 1
                    continue
                for idx_name, keyer in keyers.items():
                    expected[idx_name] += len(keyer.keys(doc))
                if report.buckets is None:
                    report.check(rid, doc)
            keys = {idx_name: sum(1 for _ in r.index_scan(info, idx_name, None, None)) for idx_name in keyers}
            for idx_name, n in keys.items():
                if n != expected[idx_name]:
                    report.bad_indexes.add(idx_name)
                    report.errors.append(f"index '{idx_name}' has {n} entries but the records imply {expected[idx_name]}")
            stored_count = r.count(info)
            if stored_count != len(stored):
                report.errors.append(f"record count {stored_count} differs from the {len(stored)} records scanned")
        nrecords = len(stored)
        if report.buckets is not None:
            # what readers see: stored buckets with the in-memory ones in their place, and in-memory
            # buckets not stored yet (records and index keys in mongod, whose buckets are all stored)
            nrecords = 0
            for rid, doc in ts.bucket_records(ctx.server, *ns.split(".", 1)):
                nrecords += 1
                report.check(rid, doc)
                if rid not in stored:
                    for idx_name, keyer in keyers.items():
                        keys[idx_name] += len(keyer.keys(doc))
        return report.reply(nrecords, keys)

    return await ctx.run_blocking(work)


def _check_validate_options(cmd: dict) -> None:
    """The option combinations mongod's validate command refuses (72 InvalidOptions, in its order;
    validate.cpp). Every option is read as a truth value."""
    flag = {name: truthy(cmd.get(name)) for name in
            ("background", "full", "enforceFastCount", "checkBSONConformance", "repair", "metadata")}

    def refuse(message: str) -> None:
        raise MongoError(ErrorCode.InvalidOptions, f"Running the validate command with {message}")

    if flag["background"] and flag["full"]:
        refuse("both { background: true } and { full: true } is not supported.")
    if flag["background"] and flag["enforceFastCount"]:
        refuse("both { background: true } and { enforceFastCount: true } is not supported.")
    if "checkBSONConformance" in cmd and not flag["checkBSONConformance"] \
            and (flag["full"] or flag["enforceFastCount"]):
        raise MongoError(ErrorCode.InvalidOptions,
                         "Cannot explicitly set 'checkBSONConformance: false' with full validation set.")
    for other in ("background", "enforceFastCount", "checkBSONConformance"):
        if flag[other] and flag["repair"]:
            refuse(f"both {{ {other}: true }} and {{ repair: true }} is not supported.")
    if flag["metadata"] and any(flag[other] for other in flag if other != "metadata"):
        refuse("{ metadata: true } is not supported with any other options")


SCHEMA_WARNING = ("Detected one or more documents not compliant with the collection's schema. Check logs for "
                  "log id 5363500.")
NONCOMPLIANT_WARNING = ("Detected one or more documents in this collection incompatible with time-series "
                        "specifications. For more info, see logs with log id 6698300.")


class _Report:
    """validate's findings over a collection's records (mongod's validate adaptor): a record its
    collection's validator refuses is non-compliant, a warning (validationAction "warn") or an error
    that makes the collection invalid ("error"); a time-series bucket that passes it but is not a
    consistent bucket (``bucket_check``) is non-compliant with a warning. Each kind is reported once,
    each record logged."""

    def __init__(self, ns: str, info: Any) -> None:
        self.ns, self.info = ns, info
        self.validator = C.validator_for(info)
        self.buckets = ts.bucket_rules(info) if C.is_buckets_collection(info.name, info) else None
        self.invalid = self.noncompliant = 0
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.bad_indexes: set[str] = set()

    def check(self, rid: bytes, doc: dict) -> None:
        validator = self.validator
        if validator is not None and not validator.accepts(doc):
            self.noncompliant += 1
            log.warning("STORAGE", 5363500, "Document is not compliant with the collection's schema",
                        namespace=self.ns, recordId=_record_id(rid), reason="Document failed validation")
            if validator.action == "warn":
                self._once(self.warnings, SCHEMA_WARNING)
            else:
                self._once(self.errors, SCHEMA_WARNING)
            return
        if self.buckets is not None:
            reason = ts.bucket_inconsistency(doc, *self.buckets)
            if reason is not None:
                self.noncompliant += 1
                log.warning("STORAGE", 6698300, "Document is not compliant with time-series specifications",
                            namespace=self.ns, recordId=_record_id(rid), reason=reason)
                self._once(self.warnings, NONCOMPLIANT_WARNING)

    @staticmethod
    def _once(messages: list[str], message: str) -> None:
        if message not in messages:
            messages.append(message)

    def reply(self, nrecords: int, keys: dict[str, int]) -> dict:
        valid = not self.errors and not self.invalid
        advice = {} if valid else {"advice": "A corrupt namespace has been detected. See "
                                             "http://dochub.mongodb.org/core/data-recovery for recovery steps."}
        return {
            "ns": self.ns, "uuid": self.info.uuid, "nInvalidDocuments": self.invalid,
            "nNonCompliantDocuments": self.noncompliant,
            "nrecords": nrecords, "nIndexes": len(keys),
            "keysPerIndex": keys, "indexDetails": {name: {"valid": name not in self.bad_indexes} for name in keys},
            "valid": valid,
            "repaired": False, "warnings": self.warnings, "errors": self.errors, "extraIndexEntries": [],
            "missingIndexEntries": [], "corruptRecords": [], **advice,
        }


def _record_id(rid: bytes) -> str:
    """A record id as mongod logs it: the number of a regular collection's record, the key's hex of a
    clustered one."""
    return str(int.from_bytes(rid, "big")) if len(rid) <= 8 else rid.hex()


async def data_size(ctx: CommandContext, cmd: dict) -> dict:
    """mongod 7.0's CmdDataSize (dbcommands.cpp): the stored size and count of a collection's documents,
    or of those in ``[min, max)`` of an index prefixed by ``keyPattern`` (inferred from ``min``: each of
    its fields ascending) that is neither sparse, partial, multikey nor collated, the clustered index
    when it is the key. ``maxObjects`` / ``maxSize`` stop the count one document past them
    (``maxReached``); ``estimate`` counts each document at the average size."""
    target = cmd.get("dataSize", cmd.get("datasize"))
    if type(target) is not str or "." not in target:
        shown = target if type(target) is str else C.format_value(target)
        raise MongoError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{shown}'")
    low, high, key_pattern = (C.doc_arg(cmd, f, "dataSize") for f in ("min", "max", "keyPattern"))
    estimate = _safe_bool(cmd, "estimate")
    max_size, max_objects = (_safe_int64(cmd, f) for f in ("maxSize", "maxObjects"))
    if (low is None) != (high is None):
        negation = "" if low is not None else "not "
        raise MongoError(ErrorCode.BadValue, f"Max must {negation}be set if min is {negation}set.")
    low, high = low or {}, high or {}

    db, _, name = target.partition(".")

    def work():
        with ctx.server.engine.read() as r:
            info = r.get_collection(target)
            if info is None:
                # mongod reads the namespace with views forbidden: a view (a time-series one too) is 166
                if C.get_view(r, db, name) is not None:
                    raise MongoError(ErrorCode.CommandNotSupportedOnView,
                                     f"Namespace {target} is a view, not a collection")
            records = r.count(info) if info is not None else 0
            if info is None or records == 0:
                return {"size": Int64(0), "numObjects": Int64(0), "millis": Int64(0)}
            if bool(low) != bool(high):
                raise MongoError(ErrorCode.BadValue, "Only one of min or max specified")
            reply: dict = {"estimate": estimate}
            if not low and (estimate or not (max_size or max_objects)):
                # every record counted at its size: the collection's size counter says it at once
                reply.update(size=Int64(r.data_size(info)), numObjects=Int64(records), millis=Int64(0))
                return reply
            sizes = _record_sizes(r, info, low, high, key_pattern)
            average = r.data_size(info) // records
            size = count = 0
            for record_size in sizes:
                size += average if estimate else record_size
                count += 1
                if (max_size and size > max_size) or (max_objects and count > max_objects):
                    reply["maxReached"] = True
                    break
            reply.update(size=Int64(size), numObjects=Int64(count), millis=Int64(0))
            return {k: reply[k] for k in ("estimate", "size", "numObjects", "millis", "maxReached") if k in reply}

    return await ctx.run_blocking(work)


def _safe_bool(cmd: dict, name: str) -> bool:
    """An IDL safeBool argument of dataSize (absent: false)."""
    value = cmd.get(name, False)
    if not isinstance(value, bool | int | float | Decimal128):
        raise wrong_type(f"dataSize.{name}", value, ("bool", "long", "int", "decimal", "double"))
    return truthy(value)


def _safe_int64(cmd: dict, name: str) -> int:
    """An IDL safeInt64 argument of dataSize (absent: 0, no limit)."""
    value = cmd.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        raise wrong_type(f"dataSize.{name}", value, ("long", "int", "decimal", "double"))
    return safe_number_long(value)


def _record_sizes(r: Any, info: Any, low: dict, high: dict, key_pattern: dict | None) -> Iterator[int]:
    """The BSON sizes of the records dataSize counts: all of them in record order, or those of the
    ``[low, high)`` range of the index ``key_pattern`` prefixes, in the index's order."""
    if not low:
        return (len(doc) for _, doc in r.scan(info))
    pattern = key_pattern or {f: 1 for f in low}  # mongod's Helpers::inferKeyPattern
    cluster = cluster_info(info)
    if cluster is not None and _prefixes(pattern, cluster["key"]) and len(pattern) == len(cluster["key"]):
        low, high = (_extended(bound, cluster["key"]) for bound in (low, high))
        return (len(doc) for _, doc in r.scan(info, lo=encode_key(list(low.values())),
                                              hi=encode_key(list(high.values())), hi_inclusive=False))
    index = next((spec for spec in info.indexes if _shard_key_index(spec, pattern)), None)
    if index is None:
        raise MongoError(ErrorCode.OperationFailed, "Couldn't find valid index containing key pattern")
    directions = [key_direction(v) for v in index["key"].values()]
    low, high = (_extended(bound, index["key"]) for bound in (low, high))
    keys = r.index_scan(info, index["name"], encode_key(list(low.values()), directions),
                        encode_key(list(high.values()), directions), hi_inclusive=False)
    return (len(r.get(info, rid) or b"") for _, rid in keys)


def _shard_key_index(spec: dict, pattern: dict) -> bool:
    """mongod's isCompatibleWithShardKey with requireSingleKey: an index ``pattern`` prefixes, neither
    partial, sparse, multikey nor collated."""
    return not (spec.get("sparse") or "partialFilterExpression" in spec or spec.get(MULTIKEY_FLAG)
                or spec.get("collation") or spec.get("clustered")) and _prefixes(pattern, spec["key"])


def _prefixes(pattern: dict, key: dict) -> bool:
    """``pattern.isPrefixOf(key)``: the same leading fields with equal values (BSON comparison: numbers
    by value)."""
    return len(pattern) <= len(key) and all(
        name == key_name and equal(value, key_value)
        for (name, value), (key_name, key_value) in zip(pattern.items(), key.items(), strict=False))


def _extended(bound: dict, key: dict) -> dict:
    """mongod's KeyPattern::extendRangeBound(bound, false): the bound's fields must be the key's leading
    ones (16634); the key's further fields get MinKey (ascending) or MaxKey (descending)."""
    if len(bound) > len(key):
        raise MongoError(16649, f"keyPattern {C.format_value(key)} shorter than bound {C.format_value(bound)}")
    if list(bound) != list(key)[:len(bound)]:
        raise MongoError(16634, f"field names of bound {C.format_value(bound)} do not match those of keyPattern "
                                f"{C.format_value(key)}")
    out = dict(bound)
    for name, value in list(key.items())[len(bound):]:
        out[name] = MaxKey() if key_direction(value) < 0 else MinKey()
    return out


COMMANDS = [
    CommandSpec("collStats", coll_stats, help="storage statistics of a collection (deprecated; use $collStats)",
                aliases=("collstats",)),
    CommandSpec("validate", validate, help="check that records and index entries agree"),
    CommandSpec("dataSize", data_size, help="stored size and count of a collection", aliases=("datasize",)),
]
