"""Index usage counters: what ``$indexStats`` reports as ``accesses: {ops, since}``, and the collection
scans ``$collStats``' ``queryExecStats`` reports as ``collectionScans: {total, nonTailable}``.

Like mongod's per-collection index usage tracker, the counters live in memory only (a restart starts
them again) and count *operations*: a read, or an update, delete or findAndModify statement, whose
chosen plan scans an index adds one to that index (an ``$or`` plan to each index it unions), however
many keys it reads, and one whose plan scans the collection adds one collection scan (``nonTailable``
too unless it is a tailable find). mongod records both from one place at the end of an operation
(``CollectionQueryInfo::notifyOfQuery``, fed by the plan's summary): here :meth:`IndexUsage.record_plan`,
called where a plan is chosen (a write's once its transaction committed); explain does not count.

An entry belongs to one index *definition*: it is keyed by the index's storage ident (unique for
the life of the data files, so a dropped and re-created index starts again at 0) and by its public
spec (so hiding or unhiding an index through collMod resets its counters, as in mongod). Entries of
indexes that no longer exist are dropped when their collection's stats are next read.

Reads run on pool threads: one lock guards the table (a few dictionary operations per read).
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import threading
from collections.abc import Iterable
from typing import Any

from bson.int64 import Int64

from tidemark.core.collection import public_index_spec
from tidemark.protocol.codec import encode
from tidemark.query.scoped import Scoped

# Where a read's accesses go (one variable, read once per access): None, counted now; a list, held
# there while the read runs inline on the event loop (tidemark.context.CommandContext.run_read), counted
# when the run is kept, dropped when it moves to the pool and runs again there (which counts them then):
# one read, one access, wherever it ran; _NOT_COUNTED while explain plans a read: explain never counts
# an access (mongod: explain does not bump the counters), even when it runs the read for executionStats.
_NOT_COUNTED: list[Any] = []  # (compared by identity, never filled)
_sink: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("index_accesses", default=None)


def not_counted() -> Scoped[list[Any] | None]:
    """Reads planned inside this block (explain) count no index access."""
    return Scoped(_sink, _NOT_COUNTED)


# One operation's use of a collection: (CollectionInfo, index names it scans, collection scans, of which
# not tailable).
_Use = tuple[Any, tuple[str, ...], int, int]


class held:  # noqa: N801 - used as a function: ``with held(usage) as accesses``
    """Reads inside this block hold their accesses; at its end they are counted — unless the caller
    emptied the list it yields (a run to be made again). Inside ``not_counted`` they stay uncounted;
    inside another ``held`` they join its list. (A class: every inline read enters one, and a generator
    context manager costs three times the calls.)"""

    __slots__ = ("_outer", "_pending", "_token", "_usage")

    def __init__(self, usage: IndexUsage):
        self._usage = usage
        self._pending: list[_Use] = []
        self._token: contextvars.Token[list[Any] | None] | None = None

    def __enter__(self) -> list[_Use]:
        self._outer = outer = _sink.get()
        if outer is not _NOT_COUNTED:
            self._token = _sink.set(self._pending)
        return self._pending

    def __exit__(self, *exc: Any) -> None:
        if self._token is None:
            return
        _sink.reset(self._token)
        if self._pending:
            if self._outer is None:
                self._usage._tally(self._pending)
            else:
                self._outer.extend(self._pending)


# (catalog value, index name) -> the access-count key: encoded once per catalog version, not per read
_KEYS: dict[tuple[bytes, str], tuple[str, bytes] | None] = {}
_KEYS_MAX = 4096
_MISSING = object()


def _definition(spec: dict) -> bytes:
    # the multikey flag is storage bookkeeping, not part of the definition a user changes
    return encode(public_index_spec(spec))


class IndexUsage:
    """``(ops, since)`` per index of each collection (by namespace)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # ns -> (index ident, definition) -> [ops, since]
        self._entries: dict[str, dict[tuple[str, bytes], list[Any]]] = {}
        # collection UUID -> [collection scans, of which not tailable]: the counters belong to the
        # collection (mongod's decoration of it), so a rename keeps them and a re-created one starts at 0
        self._scans: dict[Any, list[int]] = {}

    def record(self, info: Any, index_names: Iterable[str]) -> None:
        """One access to each named index of ``info`` (a storage CollectionInfo), unless explaining."""
        self._count((info, tuple(index_names), 0, 0))

    def record_plan(self, info: Any, plan: Any, *, tailable: bool = False) -> None:
        """The plan (``access_path.Plan``) one read or write statement of ``info`` ran: an access to
        each index it scans, or a collection scan (mongod's PlanSummaryStats: a COLLSCAN stage, the
        bounded scan of a clustered collection included; an EOF plan of a missing collection is none)."""
        # (``plan_index_names`` inline: every read records its plan)
        if plan is None:
            use: _Use = (info, (), 0, 0)
        elif plan.kind == "COLLSCAN":
            use = (info, (), 1, 0 if tailable else 1)
        elif plan.kind == "OR":
            use = (info, tuple(plan_index_names(plan)), 0, 0)
        else:
            use = (info, () if plan.index is None else (plan.index["name"],), 0, 0)
        sink = _sink.get()  # (``_count`` inline)
        if sink is None:
            self._tally((use,))
        elif sink is not _NOT_COUNTED:
            sink.append(use)

    def query_exec_stats(self, info: Any) -> dict[str, Any]:
        """``$collStats``' queryExecStats section for ``info`` (None: a view, which scans nothing): the
        collection scans since the server started, as longs (mongod's appendQueryExecStats)."""
        with self._lock:
            total, non_tailable = self._scans.get(info.uuid, (0, 0)) if info is not None else (0, 0)
        return {"collectionScans": {"total": Int64(total), "nonTailable": Int64(non_tailable)}}

    def _count(self, use: _Use) -> None:
        sink = _sink.get()
        if sink is None:
            self._tally((use,))
        elif sink is not _NOT_COUNTED:
            sink.append(use)

    def _tally(self, uses: Iterable[_Use]) -> None:
        with self._lock:
            for info, index_names, scans, non_tailable in uses:
                if scans:
                    counts = self._scans.setdefault(info.uuid, [0, 0])
                    counts[0] += scans
                    counts[1] += non_tailable
                if not index_names:
                    continue
                entries = self._entries.setdefault(info.ns, {})
                raw = info.raw  # (``_key`` inline: every kept inline read counts here)
                for name in index_names:
                    key: Any = _KEYS.get((raw, name), _MISSING) if raw else _MISSING
                    if key is _MISSING:
                        key = self._key(info, name)
                    if key is None:
                        continue
                    entry = entries.get(key)
                    if entry is None:
                        entry = entries[key] = [0, _now()]
                    entry[0] += 1

    def accesses(self, info: Any) -> dict[str, dict[str, Any]]:
        """Index name -> ``{ops, since}`` for every index of ``info``, as ``$indexStats`` shows it;
        forgets the entries of indexes ``info`` no longer has."""
        out: dict[str, dict[str, Any]] = {}
        with self._lock:
            old = self._entries.get(info.ns, {})
            fresh: dict[tuple[str, bytes], list[Any]] = {}
            for spec in info.indexes:
                key = self._key(info, spec["name"])
                if key is None:
                    continue
                entry = fresh[key] = old.get(key) or [0, _now()]
                out[spec["name"]] = {"ops": Int64(entry[0]), "since": entry[1]}
            self._entries[info.ns] = fresh
        return out

    @staticmethod
    def _key(info: Any, name: str) -> tuple[str, bytes] | None:
        raw = info.raw  # the catalog value ``info`` was decoded from (b"": none): it decides the key
        if not raw:
            return IndexUsage._fresh_key(info, name)
        hit: Any = _KEYS.get((raw, name), _MISSING)
        if hit is _MISSING:
            if len(_KEYS) >= _KEYS_MAX:
                _KEYS.clear()
            hit = _KEYS[(raw, name)] = IndexUsage._fresh_key(info, name)
        return hit

    @staticmethod
    def _fresh_key(info: Any, name: str) -> tuple[str, bytes] | None:
        spec = info.index_spec(name)
        ident = info.index_idents.get(name)
        if spec is None or ident is None:
            return None
        return ident, _definition(spec)


def _now() -> _dt.datetime:
    """Milliseconds, as a BSON date holds them (a reply shows the same value as the stored one)."""
    now = _dt.datetime.now(_dt.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000, tzinfo=None)


def plan_index_names(plan: Any) -> list[str]:
    """The indexes a chosen plan (``access_path.Plan``) scans."""
    if plan is None:
        return []
    if plan.kind == "OR":
        return [b.index["name"] for b in plan.branches if b.index is not None]
    return [plan.index["name"]] if plan.kind != "COLLSCAN" and plan.index is not None else []
