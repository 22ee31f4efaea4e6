"""The capped-collection commands: convertToCapped and cloneCollectionAsCapped, and mongod's test command
captrunc and emptycapped (the caps, the trim, the truncation and the create options are storage rules, in
server/core/capped.py)."""

from __future__ import annotations

import asyncio
import random
import string
from typing import Any

from bson.decimal128 import Decimal128
from bson.int64 import Int64

from tidemark import collections as access
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core.capped import (
    MAX_DOCS,
    Limits,
    adjusted_size,
    insert_documents,
    limits,
    remove_all,
    truncate_newest,
)
from tidemark.core.capped import _number as number
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError

# --------------------------------------------------------------------------------------------------
# convertToCapped / cloneCollectionAsCapped
# --------------------------------------------------------------------------------------------------


def _command_size(cmd: dict, command: str) -> int:
    size = number(cmd, "size", command)
    if not size:
        raise MongoError(ErrorCode.InvalidOptions, "invalid command spec")
    return adjusted_size(size)


def _clone_fn(db: str, source: str, target: str, size: int, command: str, *, replace: bool):
    """The write function copying ``source`` into a new capped ``target`` in natural order (only the
    ``_id`` index, like mongod); ``replace`` (convertToCapped) then puts the copy in the source's place.
    Returns the source's UUID (the collection convertToCapped drops)."""
    src_ns, dst_ns = C.ns_of(db, source), C.ns_of(db, target)

    def fn(w):
        info = w.get_collection(src_ns)
        if info is None:
            view = C.get_view(w, db, source)
            if view is not None:
                raise MongoError(ErrorCode.CommandNotSupportedOnView,
                                 f"{command} not supported for views: {src_ns}")
            if not w.list_collections(db):  # (mongod looks the database up first)
                raise MongoError(ErrorCode.NamespaceNotFound, f"database {db} not found")
            raise MongoError(ErrorCode.NamespaceNotFound, f"source collection {src_ns} does not exist")
        if source.startswith(C.BUCKETS_PREFIX):
            raise MongoError(ErrorCode.CommandNotSupported,
                             f"Cannot convert the time-series buckets collection {src_ns} to a capped collection")
        temp = _temp_name(w, db, source) if replace else target
        if replace and ".system." in temp:
            # mongod copies into a collection of this name, created under userAllowedCreateNS's rules:
            # a name holding ".system." is refused, so no system collection (system.profile among
            # them) becomes capped this way
            raise MongoError(ErrorCode.BadValue, f"Invalid namespace: {db}.{temp}")
        if not replace and (w.get_collection(dst_ns) is not None or C.get_view(w, db, target) is not None):
            raise MongoError(ErrorCode.NamespaceExists,
                             f"cloneCollectionAsCapped failed - destination collection {dst_ns} already "
                             f"exists. source collection: {src_ns}")
        options = {k: v for k, v in (info.options or {}).items() if k not in ("capped", "size", "max")}
        options = {"capped": True, "size": size,
                   **({"max": info.options["max"]} if (info.options or {}).get("max") else {}), **options}
        docs = _newest_that_fit(w, info, Limits(size, int(options.get("max") or MAX_DOCS)))
        temp_ns = C.ns_of(db, temp)
        # (with the _id index mongod builds: it carries the collection's default collation)
        new = access.create_collection(w, temp_ns, options)
        insert_documents(w, new, docs)
        if replace:
            w.drop_collection(src_ns)
            w.rename_collection(temp_ns, src_ns)
        return info.uuid

    return fn


_TEMP_CHARS = string.digits + string.ascii_letters


def _temp_name(w, db: str, source: str) -> str:
    """convertToCapped's copy, named as mongod's makeUniqueCollectionName names it
    (``tmp%%%%%.convertToCapped.<source>``, each ``%`` a random letter or digit): one no collection has."""
    while True:
        name = f"tmp{''.join(random.choices(_TEMP_CHARS, k=5))}.convertToCapped.{source}"
        if w.get_collection(C.ns_of(db, name)) is None:
            return name


def _newest_that_fit(w, info, cap: Limits) -> list[dict]:
    """The newest documents of ``info`` that fit the caps, oldest first (the others would be trimmed
    at once; mongod's clone skips them too)."""
    kept: list[bytes] = []
    total = 0
    for _rid, raw in w.scan(info, reverse=True):
        if len(kept) >= cap.max or total + len(raw) > cap.size:
            break
        kept.append(bytes(raw))
        total += len(raw)
    return [decode(raw) for raw in reversed(kept)]


async def _run(ctx: CommandContext, fn) -> Any:
    return await asyncio.wrap_future(ctx.server.engine.write(fn))


async def convert_to_capped(ctx: CommandContext, cmd: dict) -> dict:
    name = C.collection_arg(cmd, "convertToCapped")
    size = _command_size(cmd, "convertToCapped")
    dropped = await _run(ctx, _clone_fn(ctx.db, name, name, size, "convertToCapped", replace=True))
    # mongod renames the capped copy over the collection (dropTarget): its cursors die as in a drop
    _kill_cursors(ctx, C.ns_of(ctx.db, name), f"collection dropped. UUID {dropped}")
    return {}


async def clone_collection_as_capped(ctx: CommandContext, cmd: dict) -> dict:
    source: Any = cmd.get("cloneCollectionAsCapped")
    target: Any = cmd.get("toCollection")
    for label, value in (("cloneCollectionAsCapped", source), ("toCollection", target)):
        if type(value) is not str:
            raise MongoError(ErrorCode.TypeMismatch, f"'{label}' must be of type String")
    for label, value in (("source", source), ("target", target)):
        if not value or "$" in value or "\0" in value or value.startswith("."):
            raise MongoError(ErrorCode.InvalidNamespace, f"Invalid {label} collection name: {value}")
    C.check_create_name(ctx.db, target)
    size = _command_size(cmd, "cloneCollectionAsCapped")
    await _run(ctx, _clone_fn(ctx.db, source, target, size, "cloneCollectionAsCapped", replace=False))
    return {}


def _int_field(value: Any) -> int:
    """mongod's BSONObj::getIntField: a number's numberInt() (a double truncated, a long wrapped to 32
    bits, a decimal clamped), anything else (a bool, a string, a missing field) INT_MIN."""
    int_min, int_max = -(2**31), 2**31 - 1
    if isinstance(value, bool) or value is None:
        return int_min
    if isinstance(value, int | Int64):
        return (int(value) + 2**31) % 2**32 - 2**31
    if isinstance(value, float):
        if value != value:
            return 0
        return max(int_min, min(int_max, int(value))) if abs(value) != float("inf") else (
            int_max if value > 0 else int_min)
    if isinstance(value, Decimal128):
        d = value.to_decimal()
        if d.is_nan():
            return 0
        return int_max if d > int_max else int_min if d < int_min else int(d)
    return int_min


async def captrunc(ctx: CommandContext, cmd: dict) -> dict:
    """mongod's test command CapTrunc (test_commands.cpp): ``{captrunc: <capped collection>, n: <int>,
    inc: <bool>}`` removes the ``n`` newest documents (``n + 1`` with ``inc: true``); the collection
    must hold more than ``n``. The checks in mongod's order: the name (73), ``n`` positive (2), the
    collection exists (26) and is capped (20)."""
    name = C.collection_arg(cmd, "captrunc")
    n = _int_field(cmd.get("n"))
    inclusive = cmd.get("inc") is True  # (getBoolField: only a bool true counts)
    if n <= 0:
        raise MongoError(ErrorCode.BadValue, "n must be a positive integer")
    ns = C.ns_of(ctx.db, name)

    def fn(w):
        info = w.get_collection(ns)
        if info is None:
            if C.get_view(w, ctx.db, name) is not None:
                raise C.view_write_error(ctx.db, name)
            raise MongoError(ErrorCode.NamespaceNotFound, f"collection {ns} does not exist")
        if limits(info) is None:
            raise MongoError(ErrorCode.IllegalOperation, "collection must be capped")
        return truncate_newest(w, info, n, inclusive=inclusive)

    await _run(ctx, fn)
    return {}


async def emptycapped(ctx: CommandContext, cmd: dict) -> dict:
    """mongod's test command EmptyCapped (test_commands.cpp; capped_utils.cpp emptyCapped): every document
    of the collection removed, the collection kept. In mongod's order: the name (73), the database
    (26 "no such database"), a view (166), the collection (26 "no such collection"), a system
    collection other than system.profile (20 "Cannot truncate a system collection: <ns>"). emptyCapped
    does not check that the collection is capped: an ordinary one is emptied too."""
    name = C.collection_arg(cmd, "emptycapped")
    ns = C.ns_of(ctx.db, name)

    def fn(w):
        info = w.get_collection(ns)
        if info is None:
            if not w.list_collections(ctx.db):
                raise MongoError(ErrorCode.NamespaceNotFound, "no such database")
            if C.get_view(w, ctx.db, name) is not None:
                raise MongoError(ErrorCode.CommandNotSupportedOnView, f"emptycapped not supported on view: {ns}")
            raise MongoError(ErrorCode.NamespaceNotFound, "no such collection")
        if name.startswith("system.") and name != "system.profile":
            raise MongoError(ErrorCode.IllegalOperation, f"Cannot truncate a system collection: {ns}")
        return remove_all(w, info)

    await _run(ctx, fn)
    return {}


def _kill_cursors(ctx: CommandContext, ns: str, reason: str) -> None:
    ctx.server.cursors.kill_namespace(ns, reason)


COMMANDS = [
    CommandSpec("captrunc", captrunc,
                help="{captrunc: <capped collection>, n: <count>, inc: <bool>}: remove the n newest documents "
                     "(n + 1 with inc). Test command only.", test_only=True),
    CommandSpec("emptycapped", emptycapped, help="{emptycapped: <collection>}: remove every document. Test command "
                                                 "only.", test_only=True),
    CommandSpec("cloneCollectionAsCapped", clone_collection_as_capped,
                help="{cloneCollectionAsCapped: <source>, toCollection: <new name>, size: <bytes>}: copy a "
                     "collection into a new capped collection (the newest documents that fit)"),
    CommandSpec("convertToCapped", convert_to_capped,
                help="{convertToCapped: <collection>, size: <bytes>}: make a collection capped (keeps only "
                     "the _id index)"),
]
