"""Update and delete commands on regular collections, one bounded writer-thread function at a time.

The one writer thread runs every write of the server, so a statement that matches a million documents
must not be one writer function. A command runs as a sequence of **slices** (:class:`Statements`): each
is one ``engine.write`` function (one transaction, one group commit) that runs statements until its
:class:`Budget` is spent — a few tens of milliseconds of scanning, at most ``SLICE_MATCHES`` documents.
Inside it, ``next_matches`` finds a statement's next matches within the budget and, when the scan is not
finished, returns a :class:`Resume` (where to continue in the plan); the command's step applies the
matches in the same transaction. Between slices the operation is checked (killOp, maxTimeMS, shutdown)
and other clients' writes go in between. A command that fits one budget — nearly every one — is one
function, exactly as before.

Invariants:
- A document is visited at most once per statement, even if an update moves it in the index being
  scanned (mongod's multi-update never updates a document twice): a collection scan resumes after the
  last record id (updates keep record ids), an index scan after the last (key, record id) and skips
  record ids it has seen (``seen`` of earlier slices + ``fresh`` of this one; also the multikey de-dup).
- Writer functions may be run again by the engine (map growth, isolation): nothing here changes
  state outside the transaction. The caller merges ``fresh`` into its ``seen`` only once the slice
  committed.
- Matches are materialized before the caller writes, so no scan is open under a modification.
- ``$text`` and ``$near`` reads (``plan_special``) cannot resume: such a statement is matched whole in
  one slice, as before.
- An upsert inserts only if its statement matched nothing in any slice; when its scan spanned slices,
  the absence of a match is re-checked in the inserting transaction (two concurrent upserts of one key
  still cannot both insert).
- Interrupted between slices, the command answers the interruption (11601, 50, 11600: mongod fails the
  whole batch on an interruption) with what the committed slices did as ``n`` (and ``nModified``).
- What each statement examined and wrote (``tidemark.profiler.ReadFacts``: its plan, keys and documents
  its scan examined, the command's write counters) is counted where the work happens, with local
  integers added once per scan, and kept per slice (``Slice.facts``), so a writer function run again
  counts nothing twice; ``Statements.facts`` adds the committed slices up, one entry per statement run
  (the profiler's per-statement entries).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from tidemark.core import collection as C
from tidemark.core.clustered import cluster_info
from tidemark.profiler import WRITE_COUNTS, ReadFacts
from tidemark.protocol.codec import decode
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import plan as planner
from tidemark.query.access_path import Plan
from tidemark.query.fetch_filter import fetched_predicate

# One slice: scanning stops after SLICE_SECONDS or once SLICE_MATCHES documents matched (which bounds
# the time the caller then spends applying them: ~25 us per small document), so the writer thread is
# held ~50 ms at a time (as by a 2,000-document insert slice). Every slice is a commit, so a fsync:
# smaller slices would make a large update measurably slower.
SLICE_SECONDS = 0.05
SLICE_MATCHES = 2000

_RESUMABLE = ("COLLSCAN", "IXSCAN", "OR")
_EOF_PLAN = Plan("EOF")  # the plan of a statement on a missing collection (mongod's planSummary "EOF")


class Budget:
    """The work one writer function may still do (shared by the statements it runs)."""

    __slots__ = ("until", "matches", "ticks")

    def __init__(self) -> None:
        self.until = time.monotonic() + SLICE_SECONDS
        self.matches = SLICE_MATCHES
        self.ticks = 0

    def spent(self) -> bool:
        return self.matches <= 0 or time.monotonic() >= self.until

    def tick(self) -> bool:
        """One document examined; True once the budget is spent (the clock is read every 32)."""
        self.ticks += 1
        return not self.ticks & 31 and self.spent()


@dataclass(frozen=True)
class Resume:
    """Where a statement continues in its next slice: its plan, the position in it (a record id for a
    collection scan, ``(range index, (key, record id))`` for index ranges), the collection it runs on
    and how many documents it matched so far (an upsert inserts only if that stays 0)."""

    plan: Plan
    position: Any
    uuid: Any
    matched: int
    # what a document the plan fetches is tested against (``collections.fetched_predicate``: the
    # statement's filter less what the plan's bounds decide), compiled once for every slice
    match: Callable[[dict], bool] | None = None


@dataclass
class Slice:
    """What one writer function did, and where the command goes on: statement ``next_index`` from
    its start, or from ``resume`` when set (``fresh``: the record ids its index scan visited here)."""

    next_index: int
    resume: Resume | None = None
    fresh: set[bytes] = field(default_factory=set)
    halted: bool = False  # an ordered batch stopped at a write error
    n: int = 0
    modified: int = 0
    errors: list[dict] = field(default_factory=list)
    upserted: list[dict] = field(default_factory=list)
    facts: dict[int, ReadFacts] = field(default_factory=dict)  # statement index -> what it did here
    # (collection, plan) of each statement that started here and ran without error: counted as its
    # index access / collection scan (IndexUsage.record_plan) once the slice committed
    plans: list[tuple[Any, Plan]] = field(default_factory=list)


class Statements:
    """One update/delete command's statements (a MongoError stands for one that failed to parse),
    run slice by slice. The command supplies, per statement: ``target(st) -> (filter, compiled match,
    hint, collation, multi, variables)``; ``apply(w, coll, i, st, matches, out)`` for the matches of a slice;
    and, for upserts, ``unmatched(w, coll, i, st, spanned, out)`` once a statement's whole scan
    matched nothing (``spanned``: the scan took several slices, so the absence of a match must be
    re-checked in this transaction before inserting)."""

    def __init__(self, ns: str, statements: list, *, ordered: bool, target: Callable, apply: Callable,
                 unmatched: Callable | None = None, table_scan: Callable[[Any], bool] = lambda flt: True):
        self.ns, self.statements, self.ordered = ns, statements, ordered
        self.table_scan = table_scan  # whether a statement's filter may scan the collection (notablescan)
        self.target, self.apply, self.unmatched = target, apply, unmatched
        self.facts: list[ReadFacts] = []  # per statement run, in order (committed slices added up)

    def step(self, w, index: int, resume: Resume | None, seen: set[bytes]) -> Slice:
        """One writer function: statements from ``index`` (from ``resume`` when given, ``seen`` the
        record ids its scan visited in earlier slices) until the budget is spent."""
        statements = self.statements
        out = Slice(len(statements))
        budget = Budget()
        for i in range(index, len(statements)):
            if i > index and budget.spent():
                out.next_index = i
                return out
            st = statements[i]
            resumed = resume if i == index else None
            facts = out.facts[i] = ReadFacts.statement_facts(i)
            started = time.perf_counter()
            try:
                if isinstance(st, MongoError):
                    raise st
                flt, match, hint, collation, multi, variables = self.target(st)
                coll = w.get_collection(self.ns)
                fresh: set[bytes] = set()
                matches, more = next_matches(w, coll, flt, match, hint=hint, collation=collation, multi=multi,
                                             resume=resumed, seen=seen if resumed else set(), fresh=fresh,
                                             budget=budget, facts=facts, table_scan=self.table_scan(flt),
                                             variables=variables)
                self.apply(w, coll, i, st, matches, out)
                if resumed is None and coll is not None and facts.plan is not None:
                    out.plans.append((coll, facts.plan))
                if more is not None:  # the statement goes on in the next slice
                    out.next_index, out.resume, out.fresh = i, more, fresh
                    return out
                if self.unmatched is not None and not matches and not (resumed and resumed.matched):
                    self.unmatched(w, coll, i, st, resumed is not None, out)
            except MongoError as e:
                out.errors.append(e.to_write_error(i))
                if self.ordered:
                    out.halted = True
                    return out
            finally:
                facts.millis += (time.perf_counter() - started) * 1000
        return out

    def _add_facts(self, part: Slice) -> None:
        """A committed slice's statement facts into ``facts`` (a statement that spans slices is the
        last of one and the first of the next: added to its entry)."""
        facts = self.facts
        for i, statement in part.facts.items():
            if facts and facts[-1].statement == i:
                facts[-1].add(statement)
            else:
                facts.append(statement)
        for error in part.errors:
            self._forget_counts(error["index"])

    def _forget_counts(self, i: int) -> None:
        """Statement ``i`` failed or was interrupted: mongod records a statement's nMatched / nModified
        / nUpserted / ndeleted only when it completes (its key counts stay: they were written)."""
        for facts in reversed(self.facts):
            if facts.statement == i:
                if facts.writes:
                    for name in WRITE_COUNTS:
                        facts.writes.pop(name, None)
                return

    async def run(self, ctx, *, modified: bool, write: Callable[[Any, Any], Awaitable[Any]]) -> Slice:
        """Run every statement slice by slice through ``write(ctx, fn)`` (the regular writer, or the
        time-series family's direct writer for ``system.buckets.*``); the totals. Between slices the
        operation's interruption check runs: its error carries ``n`` (and ``nModified`` when
        ``modified``) so far."""
        count = len(self.statements)
        total = Slice(count)
        seen: set[Any] = set()
        index, resume = 0, None
        while True:
            part = await write(ctx, functools.partial(self.step, index=index, resume=resume, seen=seen))
            self._add_facts(part)
            for info, plan in part.plans:
                ctx.server.index_usage.record_plan(info, plan)
            total.n += part.n
            total.modified += part.modified
            total.errors += part.errors
            total.upserted += part.upserted
            if part.halted or part.next_index >= count:
                return total
            if part.next_index != index or part.resume is None:
                seen = set()
            seen |= part.fresh
            index, resume = part.next_index, part.resume
            ctx.op.num_yields += 1  # currentOp's numYields: the writer thread was let go
            try:
                ctx.check_deadline()  # killOp, maxTimeMS, shutdown: between two committed slices
            except MongoError as exc:
                exc.extra.update({"n": total.n, **({"nModified": total.modified} if modified else {})})
                if resume is not None:
                    self._forget_counts(index)
                raise


def next_matches(w, info, flt: dict, match: Callable[[dict], bool] | None, *, hint: Any, collation: Any,
                 multi: bool, resume: Resume | None, seen: set[bytes], fresh: set[bytes], budget: Budget,
                 facts: ReadFacts | None = None, table_scan: bool = True,
                 variables: dict | None = None) -> tuple[list[tuple[bytes, dict]], Resume | None]:
    """The statement's next matching (record id, document) pairs within ``budget``, and where to
    resume (None: the statement's scan is complete). A non-multi statement stops at its first match.
    ``seen`` (read only) and ``fresh`` (filled here) are the record ids an index scan has visited.
    ``info`` None: no such collection (nothing matches; QueryPlanKilled if it was dropped mid-way).
    ``facts``: gets the plan and the keys / documents examined (``stats["keys"]``, ``stats["docs"]``).
    ``match``: ``flt`` compiled (with ``variables`` and ``collation``); a document the plan fetches is
    tested only against what its index bounds leave undecided (``collections.fetched_predicate``)."""
    if info is None:
        if resume is not None:
            raise MongoError(ErrorCode.QueryPlanKilled, "PlanExecutor killed: collection dropped")
        if facts is not None:
            facts.plan = _EOF_PLAN  # mongod plans nothing over a missing collection
        return [], None
    if resume is None:
        plan = planner.choose_plan(list(info.indexes), flt, None, hint, multikey_default=info.clustered,
                                   allow_or=True, collation=collation, cluster=cluster_info(info), id_lookup=True,
                                   table_scan=table_scan)
        position, matched = None, 0
        match = fetched_predicate(plan, flt, match, variables=variables, collation=collation)
    else:
        if info.uuid != resume.uuid:
            raise MongoError(ErrorCode.QueryPlanKilled, "PlanExecutor killed: collection dropped")
        plan, position, matched, match = resume.plan, resume.position, resume.matched, resume.match
    stats: dict[str, int] = {"keys": 0, "docs": 0}  # (a caller without facts: counted, not kept)
    if facts is not None:
        facts.plan = plan
        if facts.stats is not None:
            stats = facts.stats
    if plan.kind not in _RESUMABLE:  # $text / $near: matched whole, in this slice
        found = _materialize(C.docs_in_txn(w, info, plan), match, multi, stats)
        budget.matches -= len(found)
        return found, None
    limit = min(budget.matches, SLICE_MATCHES) if multi else 1
    if plan.kind == "COLLSCAN":
        found, position, done = _collection_slice(w, info, plan, position, match, limit, budget, stats)
    else:
        found, position, done = _index_slice(w, info, plan, position, match, limit, budget, seen, fresh, stats)
    budget.matches -= len(found)
    matched += len(found)
    if done or (found and not multi):
        return found, None
    return found, Resume(plan, position, info.uuid, matched, match)


def _materialize(pairs: Generator[tuple[bytes, dict], None, None], match, multi: bool,
                 stats: dict[str, int]) -> list[tuple[bytes, dict]]:
    out: list[tuple[bytes, dict]] = []
    docs = 0
    try:
        for rid, doc in pairs:
            docs += 1
            if match is None or match(doc):
                out.append((rid, doc))
                if not multi:
                    break
    finally:
        pairs.close()
        stats["docs"] += docs
    return out


def _collection_slice(w, info, plan, after: bytes | None, match, limit: int, budget: Budget,
                      stats: dict[str, int]):
    """Records after ``after`` in record order: (matches, last record id examined, scan finished);
    the records examined are added to ``stats["docs"]``."""
    found: list[tuple[bytes, dict]] = []
    bounds = plan.record_range  # a clustered collection's _id range (None: every record)
    rows = w.scan(info, start_after=after, reverse=plan.natural_reverse, lo=bounds and bounds.lo,
                  hi=bounds and bounds.hi)
    docs = 0
    try:
        for rid, raw in rows:
            after = bytes(rid)
            docs += 1
            doc = decode(raw)
            if match is None or match(doc):
                found.append((after, doc))
                if len(found) >= limit:
                    return found, after, False
            if budget.tick():
                return found, after, False
    finally:
        rows.close()
        stats["docs"] += docs
    return found, after, True


def _ranges(plan) -> list[tuple[str, Any, bool]]:
    """An index plan (or the branches of an OR plan) as (index name, interval, reverse) in scan order."""
    out: list[tuple[str, Any, bool]] = []
    for branch in plan.branches if plan.kind == "OR" else [plan]:
        intervals = reversed(branch.intervals) if branch.reverse else branch.intervals
        out.extend((branch.index["name"], iv, branch.reverse) for iv in intervals)
    return out


def _index_slice(w, info, plan, position, match, limit: int, budget: Budget, seen: set[bytes],
                 fresh: set[bytes], stats: dict[str, int]):
    """Index entries after ``position``: (matches, (range index, last (key, rid)), scan finished); the
    entries and records examined are added to ``stats["keys"]`` and ``stats["docs"]``."""
    found: list[tuple[bytes, dict]] = []
    ranges = _ranges(plan)
    index, after = position if position is not None else (0, None)
    names = {spec["name"] for spec in info.indexes}
    keys = docs = 0
    while index < len(ranges):
        name, iv, reverse = ranges[index]
        if name not in names:
            raise MongoError(ErrorCode.QueryPlanKilled, f"PlanExecutor killed: index '{name}' dropped")
        entries = w.index_scan(info, name, iv.lo, iv.hi, lo_inclusive=iv.lo_incl, hi_inclusive=iv.hi_incl,
                               reverse=reverse, start_after=after)
        try:
            for key, rid in entries:
                rid = bytes(rid)
                after = (bytes(key), rid)
                keys += 1
                if rid not in seen and rid not in fresh:
                    fresh.add(rid)
                    raw = w.get(info, rid)
                    if raw is not None:
                        docs += 1
                        doc = decode(raw)
                        if match is None or match(doc):
                            found.append((rid, doc))
                            if len(found) >= limit:
                                return found, (index, after), False
                if budget.tick():
                    return found, (index, after), False
        finally:
            entries.close()
            stats["keys"] += keys
            stats["docs"] += docs
            keys = docs = 0
        index, after = index + 1, None
    return found, (index, None), True
