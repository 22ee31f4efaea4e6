"""mapReduce, as mongod 7.0 answers it (deprecated there, still served).

- The source documents are a find's (``query``, ``sort``, ``limit``, ``collation``) on a collection; a
  view (time-series collections included) is 166, as mongod's.
- ``map`` runs with ``this`` the document and ``emit(key, value)`` collecting pairs; the values of a
  key are ``reduce``d (only keys with more than one value: a lone value passes as it is), then
  ``finalize``d when given. ``scope`` holds global variables for the three functions. The functions run
  on the server-side JavaScript engine (``query/javascript.py``: one scope per database, bounded in
  memory and time, interruptible), a batch of documents or keys per call.
- ``out``: ``{inline: 1}`` answers ``{results: [{_id, value}]}`` (in key order); a collection name or
  ``{replace | merge | reduce: <name>, db?}`` writes ``{_id: key, value}`` documents into it and answers
  ``{result: <name> | {db, collection}}``: ``replace`` as ``$out`` (the target's indexes and options
  kept), ``merge`` as ``$merge`` replacing by ``_id``, ``reduce`` reducing each key with the target's
  value first (then ``finalize``).
- Errors as mongod's IDL (40414 a missing field, 14 a wrong type, 40415 an unknown field) and 139 for
  JavaScript that fails.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bson.code import Code

from tidemark import collections as access
from tidemark import write_stages
from tidemark.arguments import check_fields, missing, wrong_type
from tidemark.context import CommandContext, CommandSpec
from tidemark.core import collection as C
from tidemark.core import namespace
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import javascript
from tidemark.query.sort import sort_documents
from tidemark.query.stage_group import group_key_for

_FIELDS = {"map", "reduce", "out", "query", "sort", "limit", "finalize", "scope", "jsMode", "verbose",
           "bypassDocumentValidation", "collation", "maxTimeMS", "writeConcern", "readConcern", "comment"}
_OUT_MODES = ("replace", "merge", "reduce")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
BATCH = 1000  # documents (map) or keys (reduce, finalize) per JavaScript call


def _function(cmd: dict, field: str, required: bool) -> str | None:
    value = cmd.get(field)
    if value is None:
        if required:
            raise missing(f"mapReduce.{field}")
        return None
    if isinstance(value, Code) and value.scope is not None:  # CodeWScope is gone from JavaScript since 4.4
        raise MongoError(4649201, f"mapReduce's {field} no longer supports deprecated BSON type CodeWScope")
    if not isinstance(value, str):  # (a JavaScript value, bson Code, is a str subclass: taken too)
        raise wrong_type(f"mapReduce.{field}", value, ("javascript", "string"))
    return str(value)


def _out(cmd: dict, db: str) -> tuple[str, str | None, str | None]:
    """(mode, target db, target collection); mode "inline" has no target."""
    out = cmd.get("out")
    if out is None:
        raise missing("mapReduce.out")
    if type(out) is str:
        return "replace", db, out
    if not isinstance(out, dict):
        raise wrong_type("mapReduce.out", out, ("string", "object"))
    if "inline" in out:
        if out.get("inline") != 1 or len(out) != 1:
            raise MongoError(ErrorCode.BadValue, "if inline is specified, it must be the only field and equal 1")
        return "inline", None, None
    modes = [m for m in _OUT_MODES if m in out]
    if len(modes) != 1 or type(out[modes[0]]) is not str or not out[modes[0]]:
        raise MongoError(ErrorCode.BadValue, "'out' requires 'replace', 'merge', 'reduce' or 'inline'")
    target_db = out.get("db", db)
    if type(target_db) is not str or not target_db:
        raise wrong_type("mapReduce.out.db", target_db, ("string",))
    return modes[0], target_db, out[modes[0]]


def _declarations(scope: dict | None) -> str:
    """``var name = __scope.name;`` for each scope variable (its names must be identifiers)."""
    if not scope:
        return ""
    for name in scope:
        if not _IDENTIFIER.match(name):
            raise MongoError(ErrorCode.BadValue, f"mapReduce scope variable name is not an identifier: {name}")
    return "".join(f"var {name} = __scope[{json.dumps(name)}];" for name in scope)


class _Program:
    """The three user functions wrapped for batch calls: each wrapper receives a batch and the scope."""

    def __init__(self, map_src: str, reduce_src: str, finalize_src: str | None, scope: dict | None):
        head = _declarations(scope)
        self.scope = scope or {}
        stored = javascript.stored_globals()  # mongod's mapReduce scope holds its database's system.js
        # map's free `emit` resolves to the wrapper's: the map source sits lexically inside it
        self.map = javascript.JsFunction(
            "function (docs, __scope) {" + head + " var __out = [];"
            " function emit(k, v) { if (arguments.length !== 2) { throw new Error('emit() takes 2 arguments'); }"
            " __out.push([k, v]); }"
            " var __map = (" + map_src + "\n); for (var i = 0; i < docs.length; i++) { __map.call(docs[i]); }"
            " return __out; }", stored=stored)
        self.reduce = javascript.JsFunction(
            "function (groups, __scope) {" + head + " var __reduce = (" + reduce_src + "\n);"
            " var out = []; for (var i = 0; i < groups.length; i++) {"
            " out.push(groups[i][1].length > 1 ? __reduce(groups[i][0], groups[i][1]) : groups[i][1][0]); }"
            " return out; }", stored=stored)
        self.finalize = None if finalize_src is None else javascript.JsFunction(
            "function (pairs, __scope) {" + head + " var __finalize = (" + finalize_src + "\n);"
            " var out = []; for (var i = 0; i < pairs.length; i++) { out.push(__finalize(pairs[i][0], pairs[i][1])); }"
            " return out; }", stored=stored)

    def emitted(self, docs: list[dict]) -> list[Any]:
        out: list[Any] = []
        for start in range(0, len(docs), BATCH):
            out.extend(self.map.call([docs[start:start + BATCH], self.scope]))
        return out

    def reduced(self, groups: list[tuple[Any, list[Any]]]) -> list[Any]:
        out: list[Any] = []
        for start in range(0, len(groups), BATCH):
            out.extend(self.reduce.call([[[k, v] for k, v in groups[start:start + BATCH]], self.scope]))
        return out

    def finalized(self, pairs: list[tuple[Any, Any]]) -> list[Any]:
        if self.finalize is None:
            return [v for _, v in pairs]
        out: list[Any] = []
        for start in range(0, len(pairs), BATCH):
            out.extend(self.finalize.call([[[k, v] for k, v in pairs[start:start + BATCH]], self.scope]))
        return out


def _results(program: _Program, docs: list[dict], collation: Any) -> list[dict]:
    """``{_id: key, value}`` per distinct emitted key, reduced (not yet finalized), in key order."""
    key_of = group_key_for(collation)
    groups: dict[Any, tuple[Any, list[Any]]] = {}
    for key, value in program.emitted(docs):
        entry = groups.get(key_of(key))
        if entry is None:
            groups[key_of(key)] = (key, [value])
        else:
            entry[1].append(value)
    ordered = list(groups.values())
    reduced = program.reduced(ordered)
    rows = [{"_id": key, "value": value} for (key, _), value in zip(ordered, reduced, strict=True)]
    return list(sort_documents(rows, {"_id": 1}, collation=collation))


async def map_reduce(ctx: CommandContext, cmd: dict) -> dict:
    name = C.collection_arg(cmd, "mapReduce")
    check_fields(cmd, "mapReduce", _FIELDS)
    map_src, reduce_src = _function(cmd, "map", True), _function(cmd, "reduce", True)
    finalize_src = _function(cmd, "finalize", False)
    mode, target_db, target = _out(cmd, ctx.db)
    scope = cmd.get("scope")
    if scope is not None and not isinstance(scope, dict):
        raise wrong_type("mapReduce.scope", scope, ("object",))
    javascript.require_enabled()
    program = _Program(str(map_src), str(reduce_src), finalize_src, scope)
    find: dict[str, Any] = {"find": name, "$db": ctx.db}
    for field, key in (("query", "filter"), ("sort", "sort"), ("limit", "limit"), ("collation", "collation")):
        if cmd.get(field) is not None:
            find[key] = cmd[field]
    spec = access.FindSpec(find)
    collation = C.effective_collation(cmd.get("collation"), None)

    def run() -> list[dict]:
        resolved = namespace.resolve(ctx.server.engine, ctx.db, name)
        if resolved.view is not None:
            raise MongoError(ErrorCode.CommandNotSupportedOnView,
                             f"Namespace {ctx.db}.{name} is a view, not a collection")
        docs = list(access.run_find(ctx.server, spec, ctx.db, ctx).docs)
        rows = _results(program, docs, collation)
        if mode == "reduce" and rows:
            rows = _reduce_with_target(ctx, program, rows, str(target_db), str(target))
        values = program.finalized([(row["_id"], row["value"]) for row in rows])
        return [{"_id": row["_id"], "value": value} for row, value in zip(rows, values, strict=True)]

    rows = await ctx.run_blocking(run)
    if mode == "inline":
        return {"results": rows, "ok": 1.0}
    target_spec = {"db": target_db, "coll": target}

    def write() -> None:
        if mode == "replace":
            access.write_out(ctx.server, ctx.db, target_spec, rows)
        else:
            write_stages.merge_into(
                ctx.server, ctx.db, {"into": target_spec, "on": "_id", "whenMatched": "replace",
                                     "whenNotMatched": "insert"}, rows, None,
                lambda tdb, coll, sp: access.check_write_target(ctx.server, tdb, coll, "mapReduce", sp))

    await ctx.run_blocking(write)  # (bypassDocumentValidation: read from the running command, as $out's)
    return {"result": target if target_db == ctx.db else {"db": target_db, "collection": target}, "ok": 1.0}


def _reduce_with_target(ctx: CommandContext, program: _Program, rows: list[dict], target_db: str,
                        target: str) -> list[dict]:
    """``out: {reduce}``: each key already in the target is reduced again, the target's value first."""
    keys = [row["_id"] for row in rows]
    spec = access.FindSpec({"find": target, "filter": {"_id": {"$in": keys}}, "$db": target_db})
    key_of = group_key_for(None)  # _id equality: BSON's (1 and 1.0 are one key)
    existing = {key_of(doc["_id"]): doc.get("value")
                for doc in access.run_find(ctx.server, spec, target_db, ctx).docs}
    again = [(row["_id"], [existing[key_of(row["_id"])], row["value"]]) for row in rows
             if key_of(row["_id"]) in existing]
    if not again:
        return rows
    reduced = dict(zip((key_of(key) for key, _ in again), program.reduced(again), strict=True))
    return [{"_id": row["_id"], "value": reduced.get(key_of(row["_id"]), row["value"])} for row in rows]


COMMANDS = [
    CommandSpec("mapReduce", map_reduce, aliases=("mapreduce",),
                help="map-reduce a collection's documents with JavaScript functions (deprecated in mongod)"),
]
