"""The database profiler and the "Slow query" log line: one decision, one entry shape.

Settings (``profile`` command, ``--slowms``): a level per database (0 off, 1 slow or filtered
operations, 2 all), a filter per database (a query over the entry's fields; with a filter, ``slowms``
and ``sampleRate`` are not used), and the server-wide ``slowms`` and ``sampleRate`` — as mongod 7.0.

After every command dispatch reads :attr:`Profiler.watching` and ``slowms`` — attribute reads, no
call, so nothing is spent while profiling is off and the command was fast. Only then :meth:`Profiler.finish` builds the
mongod-shaped entry (op, ns, command, keysExamined, docsExamined, nreturned, responseLength, millis,
planSummary, ts, client, appName, user), logs it as "Slow query" (id 51803, the command truncated to
10 KB the way mongod's log truncates attributes) and/or inserts it into ``<db>.system.profile``, a
1 MB capped collection (server/core/capped.py) created when profiling is turned on.

Handlers leave a :class:`ReadFacts` on ``ctx.facts``: reads through a plan (find, aggregate, count;
getMore continues its cursor's) for planSummary and keys/docs examined, writes also for what they
wrote (``writes``: nMatched ... keysInserted, keysDeleted, counted by the write path; findAndModify
leaves one with its scan's counters and its write counters). A read that spilled to disk (``query.spill``
tells the bound operation: ``Operation.note_disk_use``) has ``used_disk`` on its facts and its cursor's:
mongod's ``usedDisk``, after ``hasSortStage`` in the entry and the log line. An update or
delete leaves a list of them, one per statement it ran: mongod profiles each statement on its own
(op "update" / "remove", the statement as ``command``) and not the command.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import random
from collections.abc import Callable
from typing import Any

from bson.int64 import Int64

from tidemark import log
from tidemark.auth.redaction import redact_command
from tidemark.core import capped
from tidemark.operations import command_report, truncated_report
from tidemark.protocol.codec import encode, encode_reply, relaxed_json
from tidemark.protocol.errors import ErrorCode, MongoError, code_name
from tidemark.protocol.messages import RawDocuments, materialize
from tidemark.query.match import compile_filter
from tidemark.top import command_namespace

PROFILE_COLLECTION = "system.profile"
MAX_PROFILE_COMMAND_BYTES = 50 * 1024  # mongod truncates bigger commands in profile entries
MAX_LOG_ATTRIBUTE_BYTES = 10 * 1024  # mongod's maxLogSizeKB
OP_NAMES = {"find": "query", "getMore": "getmore", "insert": "insert", "update": "update", "delete": "remove"}


# mongod's additive write metrics (OpDebug::append), in the order a profile entry shows them: the
# first five before cursorExhausted, the key counts after it. A field is shown when the operation set
# it (zero included), as mongod's optional counters: an update statement sets nMatched, nModified and
# nUpserted when it succeeds; keysInserted / keysDeleted are set by the documents written.
WRITE_COUNTS = ("nMatched", "nModified", "ninserted", "ndeleted", "nUpserted")
KEY_COUNTS = ("keysInserted", "keysDeleted")


class ReadFacts:
    """How an operation found its documents: the plan (or time-series read info) and the counters its
    scan fills while it runs, from zero (a read's counters are its own, and some scans count at open: a
    time-series index read takes its index entries then; record and index streams count each key and
    document as they hand it on, not as they read ahead). ``resumed()`` is the same read continued by a
    getMore (counters from where the last batch ended: a cursor draws nothing past a full batch).
    ``ends_after``: the number of documents after which the read's plan knows it has no more without
    drawing another (mongod's ``isEOF``; ``tidemark.cursors._ends_here``), None when only a draw tells.

    A write also carries ``writes`` (mongod's field name -> count, filled by the write path) and, for a
    statement of an update or delete, ``statement`` (its index in the command) and ``millis`` (the
    time the writer spent on it)."""

    __slots__ = ("plan", "stats", "ts_info", "origin", "_keys0", "_docs0", "writes", "statement", "millis",
                 "touches_indexes", "ends_after", "used_disk")

    def __init__(self, plan=None, stats: dict | None = None, ts_info: dict | None = None,
                 origin: dict | None = None, *, since_now: bool = False, writes: dict[str, int] | None = None,
                 statement: int | None = None):
        self.plan, self.stats, self.ts_info, self.origin = plan, stats, ts_info, origin
        self._keys0 = self._docs0 = 0
        if since_now:  # (the counters as they stand: examined from zero)
            self._keys0, self._docs0 = self.examined()
        self.ends_after: int | None = None
        self.used_disk = False  # the read spilled to disk (Operation.note_disk_use): mongod's usedDisk
        self.writes, self.statement, self.millis = writes, statement, 0.0
        # An update's: whether it may write an indexed path (mongod's indexesAffected, which decides
        # whether keysInserted / keysDeleted are shown when they are 0), asked only when an entry is made
        self.touches_indexes: Callable[[], bool] | None = None

    @classmethod
    def statement_facts(cls, index: int) -> ReadFacts:
        """Fresh counters for statement ``index`` of an update or delete (its plan set when chosen)."""
        return cls(stats={"keys": 0, "docs": 0}, writes={}, statement=index)

    def add(self, other: ReadFacts) -> None:
        """Add ``other``'s counters (the same statement continued in a later writer slice)."""
        if other.plan is not None:
            self.plan = other.plan
        if other.stats:
            stats = self.stats if self.stats is not None else {}
            for key, value in other.stats.items():
                stats[key] = stats.get(key, 0) + value
            self.stats = stats
        if other.writes:
            writes = self.writes if self.writes is not None else {}
            for key, value in other.writes.items():
                writes[key] = writes.get(key, 0) + value
            self.writes = writes
        self.millis += other.millis
        self.used_disk = self.used_disk or other.used_disk
        if self.touches_indexes is None:
            self.touches_indexes = other.touches_indexes

    def reads(self) -> bool:
        """Whether the operation read through a plan (keysExamined / docsExamined shown): not an insert."""
        return self.writes is None or self.plan is not None or self.ts_info is not None

    def resumed(self) -> ReadFacts:
        """The facts of the read's next batch (a getMore): counted from where the last batch ended."""
        facts = ReadFacts(self.plan, self.stats, self.ts_info, self.origin, since_now=True)
        facts.used_disk = self.used_disk
        return facts

    def has_sort_stage(self) -> bool:
        """Whether the read sorts in memory (mongod's ``hasSortStage``; its getMores report it too): a
        find whose sort no index gives; an aggregate with a ``$sort`` other than one, right after its
        leading ``$match`` stages, that the index scan gives; a findAndModify whose sort no index gives."""
        origin = self.origin
        if not isinstance(origin, dict) or self.plan is None or self.plan.kind == "EOF":  # (nothing to sort)
            return False
        provided = getattr(self.plan, "provides_sort", False)
        if "find" in origin or "findAndModify" in origin or "findandmodify" in origin:
            return bool(origin.get("sort")) and not provided
        pipeline = origin.get("pipeline")
        if "aggregate" not in origin or type(pipeline) is not list:
            return False
        sorts = [i for i, stage in enumerate(pipeline) if isinstance(stage, dict) and "$sort" in stage]
        if not sorts:
            return False
        pushed = len(sorts) == 1 and all(isinstance(stage, dict) and "$match" in stage for stage in pipeline[:sorts[0]])
        return not (pushed and provided)

    def examined(self) -> tuple[int, int]:
        """The keys and documents (time series: index keys and buckets) the read examined since its
        counters started (``resumed``: where the last batch ended)."""
        ts_info = self.ts_info
        if ts_info is not None:
            return ts_info.get("keysExamined", 0) - self._keys0, ts_info.get("bucketsScanned", 0) - self._docs0
        stats = self.stats or {}
        return stats.get("keys", 0) - self._keys0, stats.get("docs", 0) - self._docs0

    def plan_summary(self) -> str | None:
        if self.ts_info is not None:
            key = self.ts_info.get("indexKey")
            return f"IXSCAN {_key_text(key)}" if self.ts_info.get("indexName") else "COLLSCAN"
        plan = self.plan
        if plan is None:
            return None
        if plan.kind in ("IXSCAN", "COUNT_SCAN") and plan.index is not None and not plan.id_lookup:
            return f"{plan.kind} {_key_text(plan.index.get('key'))}"
        if plan.kind == "OR":
            return ", ".join(f"IXSCAN {_key_text(b.index.get('key'))}" for b in plan.branches if b.index)
        return plan.stage


class DocumentMetrics:
    """serverStatus ``metrics.document``, ``metrics.queryExecutor`` and ``metrics.operation.scanAndOrder``:
    mongod adds each finished operation's own counters to them (``recordCurOpMetrics``, from its
    OpDebug: nreturned, ninserted, nMatched as ``updated``, ndeleted, keysExamined as ``scanned``,
    docsExamined as ``scannedObjects``, hasSortStage), whether or not it is profiled. They are read
    here from what the profile entry reads (the operation's ReadFacts, else its reply), after every
    command: a few dictionary reads."""

    __slots__ = ("deleted", "inserted", "returned", "updated", "scanned", "scanned_objects", "scan_and_order")

    def __init__(self) -> None:
        self.deleted = self.inserted = self.returned = self.updated = 0
        self.scanned = self.scanned_objects = self.scan_and_order = 0

    def record(self, name: str, reply: dict, facts: ReadFacts | list[ReadFacts] | None) -> None:
        cursor = reply.get("cursor")
        if type(cursor) is dict:
            batch = cursor.get("firstBatch")
            if batch is None:
                batch = cursor.get("nextBatch")
            if batch is not None:  # (a list or an EncodedBatch: its length, empty or not)
                self.returned += len(batch)
        # an update / delete: each statement is an operation of its own, counting its own writes; a
        # command's one (or no) ReadFacts: its writes, else a write command's reply's counts (a read's
        # reply holds none). One loop, no call per operation: every command passes here.
        each = facts if isinstance(facts, list) else (facts,)
        statements = each is facts
        for one in each:
            writes = one.writes if one is not None else None
            if writes is None and not statements and name in _WRITE_NAMES:
                writes = _reply_counts(name, reply)
            if writes:
                self.inserted += writes.get("ninserted", 0)
                self.updated += writes.get("nMatched", 0)
                self.deleted += writes.get("ndeleted", 0)
            if one is not None and one.reads():
                keys, docs = one.examined()
                self.scanned += keys
                self.scanned_objects += docs
                if one.has_sort_stage():
                    self.scan_and_order += 1

    def sections(self) -> dict[str, dict[str, Int64]]:
        """The serverStatus ``metrics`` sections these counters fill."""
        return {"document": {"deleted": Int64(self.deleted), "inserted": Int64(self.inserted),
                             "returned": Int64(self.returned), "updated": Int64(self.updated)},
                "operation": {"scanAndOrder": Int64(self.scan_and_order)},
                "queryExecutor": {"scanned": Int64(self.scanned), "scannedObjects": Int64(self.scanned_objects)}}


def _key_text(key: Any) -> str:
    if not isinstance(key, dict) or not key:
        return "{}"
    return "{ " + ", ".join(f"{k}: {v}" for k, v in key.items()) + " }"


class Profiler:
    """Profiling settings of this process (event-loop thread only)."""

    def __init__(self, slowms: int, sample_rate: float = 1.0, default_level: int = 0):
        self.slowms = slowms
        self.sample_rate = sample_rate
        self.default_level = default_level  # --profile: every database without its own setting
        self.levels: dict[str, int] = {}
        self.filters: dict[str, tuple[dict, Any]] = {}  # db -> (filter document, compiled predicate)
        self.watching = bool(default_level)  # something profiled or filtered: every command needs a look

    # -- settings ----------------------------------------------------------------------------------
    def level(self, db: str) -> int:
        return self.levels.get(db, self.default_level)

    def settings(self, db: str) -> tuple[int, dict | None]:
        flt = self.filters.get(db)
        return self.level(db), (flt[0] if flt else None)

    def configure(self, db: str, level: int | None, flt: Any) -> None:
        """Apply a ``profile`` command's level (None: unchanged) and filter (None: unchanged,
        "unset": removed, a document: compiled here so a bad filter fails the command)."""
        if flt is not None:
            if flt == "unset":
                self.filters.pop(db, None)
            else:
                self.filters[db] = (flt, compile_filter(flt))
        if level is not None:
            self.levels[db] = level
        self.watching = bool(self.default_level or any(self.levels.values()) or self.filters)

    def forget(self, db: str) -> None:
        """A dropped database's settings go back to the defaults (mongod keeps them with the
        database: profile_no_such_db.js)."""
        self.levels.pop(db, None)
        self.filters.pop(db, None)
        self.watching = bool(self.default_level or any(self.levels.values()) or self.filters)

    # -- after each command ------------------------------------------------------------------------
    async def finish(self, server, conn, db: str, name: str, cmd: dict, reply: dict, elapsed_ms: float,
                     facts: ReadFacts | list[ReadFacts] | None) -> None:
        """Log and/or profile one finished command, as mongod decides. Never raises: the command has
        been answered already as far as its client is concerned."""
        try:
            await self._finish(server, conn, db, name, cmd, reply, elapsed_ms, facts)
        except Exception as exc:  # noqa: BLE001 - diagnostics must not break a connection
            log.warning("COMMAND", 20698, "Failed to profile or log an operation", command=name,
                        error=f"{type(exc).__name__}: {exc}")

    async def _finish(self, server, conn, db: str, name: str, cmd: dict, reply: dict, elapsed_ms: float,
                      facts: ReadFacts | list[ReadFacts] | None) -> None:
        if name == "dropDatabase" and reply.get("ok") == 1.0:
            self.forget(db)  # the settings went with the database (its drop is profiled by the defaults)
        level = self.level(db)
        if name == "profile" and type(reply.get("was")) is int:
            # mongod profiles an operation by the level in effect when it began (CurOp's _dbprofile):
            # the command that turns profiling on is not profiled, the one that turns it off is.
            # (Reads of system.profile are profiled like any other: mongoengine's query_counter counts
            # its own count of the profile as one query.)
            level = reply["was"]
        flt = self.filters.get(db)
        ns = command_namespace(name, cmd, db)
        if name == "getMore" and ns is not None and ns.endswith(_LIST_COLLECTIONS_NS):
            level = 0  # a listCollections cursor has no collection to profile under (as mongod)
        if flt is None and level < 2 and elapsed_ms <= self.slowms:
            return
        statements = facts if type(facts) is list else None
        command_facts = facts if isinstance(facts, ReadFacts) else None
        if statements is not None:  # an update / delete: the command's totals for its log line
            command_facts = ReadFacts()
            for statement in statements:
                command_facts.add(statement)
            command_facts.writes = command_facts.writes or None
        entry = self.entry(conn, db, name, cmd, reply, elapsed_ms, command_facts)
        if flt is not None:
            slow = _matches(flt[1], entry)
        else:
            slow = elapsed_ms > self.slowms and (self.sample_rate >= 1 or random.random() < self.sample_rate)
        if slow:
            self._log(conn, name, cmd, entry, elapsed_ms)
        if statements is not None and level >= 1:
            # mongod profiles each statement (its own CurOp) and not the command: the entry of a
            # statement is kept at level 2, at level 1 when it matches the filter or was slow itself
            for done in self.statement_entries(conn, db, name, cmd, reply, elapsed_ms, statements):
                if level == 2 or (level == 1 and (_matches(flt[1], done) if flt is not None else
                                                  slow and (len(statements) == 1 or done["millis"] > self.slowms))):
                    await self._record(server, db, done)
        elif level == 2 or (level == 1 and slow):
            await self._record(server, db, entry)

    def statement_entries(self, conn, db: str, name: str, cmd: dict, reply: dict, elapsed_ms: float,
                          statements: list[ReadFacts]) -> list[dict[str, Any]]:
        """The profile entries of an update's or delete's statements (``statements``: the facts of each
        statement it ran, in order): op "update" / "remove", the statement as ``command``, its own
        counters and write error; ``millis`` the statement's own (the command's when it has one)."""
        sent = _statement_list(name, cmd)  # materialized once: never per statement
        errors = {e.get("index"): e for e in reply.get("writeErrors") or () if isinstance(e, dict)}
        entries = []
        for facts in statements:
            i = facts.statement
            if sent is None or i is None or not 0 <= i < len(sent) or not isinstance(sent[i], dict):
                continue
            millis = elapsed_ms if len(sent) == 1 else facts.millis
            error = errors.get(i)
            outcome = reply if error is None else {"ok": 0.0, "errmsg": error.get("errmsg"),
                                                   "code": error.get("code"),
                                                   "codeName": code_name(error.get("code") or 0)}
            entries.append(self.entry(conn, db, name, cmd, outcome, millis, facts,
                                      statement=_statement_command(name, sent[i])))
        return entries

    def entry(self, conn, db: str, name: str, cmd: dict, reply: dict, elapsed_ms: float,
              facts: ReadFacts | None, *, statement: dict | None = None) -> dict[str, Any]:
        """The system.profile document of one command (field order as mongod writes it); with
        ``statement`` (its profiled form), of that statement of an update or delete (mongod's nested
        CurOp: no responseLength, no protocol)."""
        ns = command_namespace(name, cmd, db) or f"{db}.$cmd"
        own_statement = statement is not None
        if statement is None:
            statement = _single_statement(name, cmd)
        command = statement if statement is not None else profile_command(name, cmd)
        entry: dict[str, Any] = {"op": OP_NAMES.get(name, "command"), "ns": ns,
                                 "command": _with_comment(command, name, cmd, facts)}
        cursor = reply.get("cursor") if isinstance(reply.get("cursor"), dict) else None
        if name == "getMore":
            if facts is not None and facts.origin is not None:
                entry["originatingCommand"] = profile_command(next(iter(facts.origin), ""), facts.origin)
            entry["cursorid"] = Int64(cmd.get("getMore") or 0)
        elif cursor is not None and cursor.get("id"):  # find / aggregate leaving a cursor open
            entry["cursorid"] = Int64(cursor["id"])
        if facts is not None and facts.reads():
            keys, docs = facts.examined()
            entry["keysExamined"], entry["docsExamined"] = keys, docs
            if facts.has_sort_stage():
                entry["hasSortStage"] = True
            if facts.used_disk:
                entry["usedDisk"] = True
        writes = facts.writes if facts is not None and facts.writes is not None else _reply_counts(name, reply)
        for field in WRITE_COUNTS:
            if field in writes:
                entry[field] = writes[field]
        if cursor is not None and cursor.get("id") == 0:
            entry["cursorExhausted"] = True
        if _shows_key_counts(facts, writes):
            for field in KEY_COUNTS:
                if field in writes:
                    entry[field] = writes[field]
        entry["numYield"] = 0
        if cursor is not None:
            entry["nreturned"] = len(cursor.get("firstBatch", cursor.get("nextBatch")) or ())
        entry["locks"] = {}
        entry["flowControl"] = {}
        if reply.get("ok") != 1.0:
            entry["ok"] = 0.0
            code = reply.get("code") or ErrorCode.UnknownError  # (a reply without one: mongod's
            # getStatusFromCommandResult reads 8, e.g. an errmsg-style failure: protocol.errors.ErrmsgFailure)
            entry["errMsg"], entry["errName"], entry["errCode"] = reply.get("errmsg"), code_name(code), code
        if not own_statement:  # a statement has no reply of its own, and is no command (mongod's iscommand)
            try:
                entry["responseLength"] = len(encode_reply(reply))
            except Exception:  # noqa: BLE001 - an unencodable reply is answered as an error by the connection
                entry["responseLength"] = 0
            entry["protocol"] = "op_msg"
        entry["millis"] = int(elapsed_ms)
        summary = facts.plan_summary() if facts is not None else None
        if summary:
            entry["planSummary"] = summary
        entry["ts"] = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        entry["client"] = _host(getattr(conn, "peer", ""))
        app = ((getattr(conn, "client", None) or {}).get("application") or {}).get("name")
        if app:
            entry["appName"] = app
        principal = getattr(conn, "principal", None)
        entry["allUsers"] = [principal.name.document()] if principal is not None else []
        entry["user"] = principal.name.display() if principal is not None else ""  # display text only
        return entry

    # -- outputs -----------------------------------------------------------------------------------
    def _log(self, conn, name: str, cmd: dict, entry: dict, elapsed_ms: float) -> None:
        attr: dict[str, Any] = {"type": "command", "ns": entry["ns"]}
        if "appName" in entry:
            attr["appName"] = entry["appName"]
        command = log_command(name, cmd)
        attr["command"], truncated = truncate_for_log(relaxed_json(command))
        for field in ("originatingCommand", "planSummary", "cursorid", "keysExamined", "docsExamined", "hasSortStage",
                      "usedDisk", "cursorExhausted"):
            if field in entry:
                attr[field] = relaxed_json(entry[field]) if field == "originatingCommand" else entry[field]
        for field in (*WRITE_COUNTS, *KEY_COUNTS):
            if field in entry:
                attr[field] = entry[field]
        attr["numYields"] = 0
        if "nreturned" in entry:
            attr["nreturned"] = entry["nreturned"]
        if "ok" in entry:
            attr.update(ok=0, errMsg=entry["errMsg"], errName=entry["errName"], errCode=entry["errCode"])
        attr.update(reslen=entry["responseLength"], locks={}, remote=getattr(conn, "peer", ""),
                    protocol="op_msg", durationMillis=int(elapsed_ms))
        extra = {"truncated": {"command": truncated}, "size": {"command": _bson_size(command)}} if truncated \
            else None
        log.log(log.INFO, "COMMAND", 51803, "Slow query", ctx=f"conn{getattr(conn, 'id', 0)}", attr=attr,
                extra=extra)

    async def _record(self, server, db: str, entry: dict) -> None:
        try:
            await asyncio.wrap_future(server.engine.write(lambda w: write_entry(w, db, entry)))
        except Exception as exc:  # noqa: BLE001 - a profile write never fails the operation
            log.warning("COMMAND", 20698, "Failed to write to the profile collection", db=db,
                        error=f"{type(exc).__name__}: {exc}")
            return
        server.tailing.notify(f"{db}.{PROFILE_COLLECTION}")


def ensure_profile_collection(w, db: str):
    """``<db>.system.profile``, created as mongod does: capped, 1 MB, without an ``_id`` index (its
    entries have no ``_id``)."""
    ns = f"{db}.{PROFILE_COLLECTION}"
    info = w.get_collection(ns)
    if info is None:
        info = w.create_collection(ns, {"capped": True, "size": capped.PROFILE_SIZE})
        info = w.drop_index(info, "_id_")
    elif not info.options.get("capped"):
        # a user-made plain system.profile: mongod refuses to profile into it (profile 2 fails)
        raise MongoError(ErrorCode.NamespaceExists, f"{ns} exists but isn't capped")
    return info


def write_entry(w, db: str, entry: dict) -> None:
    capped.insert_documents(w, ensure_profile_collection(w, db), [entry])


def _matches(predicate, entry: dict) -> bool:
    try:
        return bool(predicate(entry))
    except MongoError:
        return False


def _host(peer: str) -> str:
    if peer.startswith("["):
        return peer[1:peer.find("]")]
    return peer.rsplit(":", 1)[0]


def _redacted(name: str, cmd: dict) -> dict:
    """The command as the profiler and the log show it: secrets hidden by THE rule
    (tidemark.auth.redaction, mongod's snipForLogging), large values bounded."""
    cmd, _ = redact_command(cmd, name)
    # A large command (a 100,000-document insert, a million-element $in) is cut before anything
    # decodes, encodes or serializes it whole: this runs on the event loop (issue 11).
    bounded = command_report(cmd, MAX_PROFILE_COMMAND_BYTES)  # document sequences left out
    if "$truncated" in bounded or any(type(v) is RawDocuments and v.end - v.start > MAX_PROFILE_COMMAND_BYTES
                                      for v in cmd.values()):
        return bounded
    return {k: materialize(v) for k, v in cmd.items()}


def profile_command(name: str, cmd: dict) -> dict:
    """The ``command`` of a profile entry: the command as sent, over 50 KB as ``{$truncated: ...}``."""
    return _bounded(_redacted(name, cmd))


def _bounded(command: dict) -> dict:
    """``command``, or over 50 KB ``{$truncated: <mongod's text of it>, comment}`` (a command cut
    already stays as it is)."""
    if "$truncated" in command:
        return command
    try:
        size = len(encode(command))
    except Exception:  # noqa: BLE001 - keep the entry even if a value cannot be re-encoded
        size = MAX_PROFILE_COMMAND_BYTES + 1
    return command if size <= MAX_PROFILE_COMMAND_BYTES else truncated_report(command, MAX_PROFILE_COMMAND_BYTES)


_STATEMENTS = {"update": "updates", "delete": "deletes"}
_LIST_COLLECTIONS_NS = ".$cmd.listCollections"


def _shows_key_counts(facts: ReadFacts | None, writes: dict[str, int]) -> bool:
    """Whether an entry shows keysInserted / keysDeleted: when set, unless both are 0 for an update that
    may write no indexed path (mongod counts index keys only for an update whose paths an index reads;
    decided here, when an entry is made, not on every write)."""
    if writes.get("keysInserted") or writes.get("keysDeleted") or facts is None or facts.touches_indexes is None:
        return True
    return facts.touches_indexes()


_WRITE_NAMES = frozenset({"insert", "update", "delete"})  # the commands _reply_counts reads counts of


def _reply_counts(name: str, reply: dict) -> dict[str, int]:
    """The write counts of a command that left none on ``ctx.facts`` (a time-series write), read
    from its reply."""
    if name == "insert":
        return {"ninserted": reply.get("n", 0)}
    if name == "update":
        upserted = len(reply.get("upserted") or ())  # (the reply's n counts them; nMatched does not)
        return {"nMatched": reply.get("n", 0) - upserted, "nModified": reply.get("nModified", 0),
                "nUpserted": upserted}
    if name == "delete":
        return {"ndeleted": reply.get("n", 0)}
    return {}


def _statement_list(name: str, cmd: dict) -> list | None:
    """An update's or delete's statements as sent (None for other commands)."""
    field = _STATEMENTS.get(name)
    statements = materialize(cmd.get(field)) if field is not None else None
    return statements if type(statements) is list else None


def _single_statement(name: str, cmd: dict) -> dict | None:
    """The ``command`` of the profile entry of an update or delete of one statement: mongod profiles
    each write statement on its own, as the statement (``{q, u, multi, upsert}``, ``{q, limit}``).
    None for other commands (and for several statements without their facts: the command)."""
    statements = _statement_list(name, cmd)
    if statements is None or len(statements) != 1 or not isinstance(statements[0], dict):
        return None
    return _statement_command(name, statements[0])


def _statement_command(name: str, statement: Any) -> dict:
    """One statement as its profile entry's ``command``: an update's with mongod's defaults."""
    statement = materialize(statement)
    if name == "update":
        rest = {k: v for k, v in statement.items() if k not in ("q", "u", "multi", "upsert")}
        statement = {"q": statement.get("q"), "u": statement.get("u"), **rest,
                     "multi": statement.get("multi", False), "upsert": statement.get("upsert", False)}
    return _bounded(statement)


def _with_comment(command: dict, name: str, cmd: dict, facts: ReadFacts | None) -> dict:
    """The profiled command with the ``comment`` mongod's CurOp gives it when the command has none of
    its own: a getMore carries its originating command's comment, an explain the comment of the
    command it explains (comment_field.js); a write statement, its command's."""
    if "comment" in command:
        return command
    if "comment" in cmd:
        comment = cmd["comment"]
    elif name == "getMore":
        origin = facts.origin if facts is not None else None
        comment = origin.get("comment") if isinstance(origin, dict) else None
    elif name == "explain" and isinstance(cmd.get("explain"), dict):
        comment = cmd["explain"].get("comment")
    else:
        return command
    return command if comment is None else {**command, "comment": comment}


def log_command(name: str, cmd: dict) -> dict:
    return _redacted(name, cmd)


def _bson_size(value: dict) -> int:
    try:
        return len(encode(value))
    except Exception:  # noqa: BLE001 - only a figure for the log line
        return 0


def _json_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if type(value) is str:
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def truncate_for_log(value: Any, budget: int = MAX_LOG_ATTRIBUTE_BYTES) -> tuple[Any, dict | None]:
    """mongod's log truncation of one attribute (maxLogSizeKB): fields are written in order while they
    fit in ``budget`` bytes of JSON; the first that does not is descended into (objects, arrays) or
    dropped (scalars), and every field after it is left out. Returns (value to log, the ``truncated``
    description — the path to the cut, ending in ``{type, size}`` — or None)."""
    if not isinstance(value, dict | list) or _json_size(value) <= budget:
        return value, None
    return _truncate(value, budget)


def _truncate(value: dict | list, budget: int) -> tuple[Any, dict]:
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    kept: list[tuple[Any, Any]] = []
    used = 2
    info: dict[str, Any] = {}
    for key, item in items:
        cost = _json_size(item) + len(str(key)) + 4
        if used + cost <= budget:
            kept.append((key, item))
            used += cost
            continue
        room = budget - used - len(str(key)) - 4
        if isinstance(item, dict | list) and room > 2:
            part, info[str(key)] = _truncate(item, room)
            kept.append((key, part))
        else:
            info[str(key)] = {"type": _type_name(item), "size": _json_size(item)}
        break
    return (dict(kept) if isinstance(value, dict) else [item for _key, item in kept]), info
