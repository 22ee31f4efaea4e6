"""Per-namespace usage and command latencies: what ``top``, ``$collStats: {latencyStats}``,
serverStatus ``opLatencies`` and the metrics endpoint read.

Like mongod's Top, every command that names a collection is recorded when it finishes: its time in
microseconds and a count, under ``total``, its lock kind (``readLock``/``writeLock``) and its operation
kind (``queries``, ``getmore``, ``insert``, ``update``, ``remove``, ``commands``). Latencies are also kept
per namespace and server-wide as ``reads``/``writes``/``commands`` histograms (power-of-two microsecond
buckets, as mongod's latency histograms), and per command name for the metrics endpoint.

Only the event-loop thread records (dispatch), so plain integers need no lock; readers on the loop see
a consistent snapshot. Recording costs a few dictionary updates per command.
"""

from __future__ import annotations

from typing import Any

from tidemark.core.collection import check_collection_name, check_db_name
from tidemark.protocol.errors import MongoError

NOTE = "round trip time in microseconds"
USAGE_KEYS = ("total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands")
LATENCY_KINDS = ("reads", "writes", "commands", "transactions")

# command name -> (top operation kind, lock kind, latency kind)
_KINDS: dict[str, tuple[str, str, str]] = {
    "find": ("queries", "readLock", "reads"),
    "getMore": ("getmore", "readLock", "reads"),
    "aggregate": ("commands", "readLock", "reads"),
    "count": ("commands", "readLock", "reads"),
    "distinct": ("commands", "readLock", "reads"),
    "insert": ("insert", "writeLock", "writes"),
    "update": ("update", "writeLock", "writes"),
    "delete": ("remove", "writeLock", "writes"),
    "findAndModify": ("commands", "writeLock", "writes"),
    # mongod's killCursors tracks its collection unlocked (Top::LockType::NotLocked) as the killCursors
    # logical op, which has no usage counter of its own: only total and the commands histogram
    "killCursors": ("", "", "commands"),
}
_WRITE_COMMANDS = frozenset({
    "create", "drop", "dropDatabase", "createIndexes", "dropIndexes", "collMod", "renameCollection",
    "convertToCapped", "cloneCollectionAsCapped", "compact",
})
# The commands that work on the collection their first field names (mongod's Top sees only operations
# that lock a collection): others whose first value is a string (``getLog: "global"``, ``getParameter:
# "*"``, ``dbHash``...) must not become namespaces (mongotop would list ``admin.global``).
_COLLECTION_COMMANDS = frozenset({
    *_KINDS, "create", "drop", "createIndexes", "listIndexes", "dropIndexes", "collMod", "collStats",
    "validate", "convertToCapped", "cloneCollectionAsCapped", "compact", "reIndex", "explain", "dataSize",
})
_BUCKETS = 40  # 2^0 .. 2^39 microseconds (~6 days): the last bucket takes everything longer


def _kinds(name: str) -> tuple[str, str, str]:
    kinds = _KINDS.get(name)
    if kinds is None:
        kinds = ("commands", "writeLock" if name in _WRITE_COMMANDS else "readLock", "commands")
    return kinds


def command_target(name: str, cmd: dict[str, Any], db: str) -> tuple[str, str] | None:
    """The (database, collection) a command works on, None for commands on no collection: the first
    value's, getMore's ``collection``, the explained command's collection, dataSize's full namespace."""
    if name == "getMore":
        target = cmd.get("collection")
    elif name == "explain":
        inner = cmd.get("explain")
        target = next(iter(inner.values()), None) if isinstance(inner, dict) and inner else None
    else:
        target = cmd.get(name)
        if name == "dataSize" and type(target) is str:
            db, _, target = target.partition(".")
    if type(target) is str and target:
        return db, target
    return None


def command_namespace(name: str, cmd: dict[str, Any], db: str) -> str | None:
    """The collection namespace a command works on (None for commands on no collection)."""
    target = command_target(name, cmd, db)
    return f"{target[0]}.{target[1]}" if target is not None else None


class Histogram:
    """Counts per power-of-two microsecond bucket, plus the sum (mongod's latency histogram shape)."""

    __slots__ = ("counts", "latency", "ops")

    def __init__(self) -> None:
        self.counts = [0] * _BUCKETS
        self.latency = 0
        self.ops = 0

    def add(self, micros: int) -> None:
        self.counts[min(micros.bit_length(), _BUCKETS - 1)] += 1
        self.latency += micros
        self.ops += 1

    def buckets(self) -> list[tuple[int, int]]:
        """(lower bound in microseconds, count) of the non-empty buckets, ascending."""
        return [((1 << (i - 1)) if i else 0, n) for i, n in enumerate(self.counts) if n]

    def document(self, histograms: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {"latency": self.latency, "ops": self.ops}
        if histograms:
            doc["histogram"] = [{"micros": lower, "count": n} for lower, n in self.buckets()]
        return doc


class Top:
    """Usage and latencies of this process, by namespace and by command."""

    def __init__(self) -> None:
        self.usage: dict[str, dict[str, list[int]]] = {}  # ns -> key -> [time, count]
        self.latency: dict[str, dict[str, Histogram]] = {}  # ns -> reads/writes/commands -> Histogram
        self.server: dict[str, Histogram] = {kind: Histogram() for kind in LATENCY_KINDS}
        self.by_command: dict[str, Histogram] = {}
        # (db, collection) -> the usage entries and histogram a command of that name touches: built on a
        # namespace's first command, so the per-command cost is a few lookups and additions.
        self._targets: dict[tuple[str, str, str], tuple[list[int], list[int], list[int], Histogram]] = {}
        self._commands: dict[str, tuple[Histogram, Histogram]] = {}

    def record(self, name: str, cmd: dict[str, Any], db: str, seconds: float) -> None:
        micros = int(seconds * 1_000_000)
        bucket = micros.bit_length()
        if bucket >= _BUCKETS:
            bucket = _BUCKETS - 1
        command = self._commands.get(name)
        if command is None:
            command = self._command(name)
        for histogram in command:
            histogram.counts[bucket] += 1
            histogram.latency += micros
            histogram.ops += 1
        if name == "drop" or name not in _COLLECTION_COMMANDS:
            return  # a drop leaves no usage behind; a command on no collection has none
        found = command_target(name, cmd, db)
        if found is None:
            return
        db, target = found
        entries = self._targets.get((name, db, target))
        if entries is None:
            if not _valid_namespace(db, target):
                return  # refused before it touched the namespace (and a NUL byte would break top's reply)
            entries = self._target(name, f"{db}.{target}", (name, db, target))
        total, lock, op, histogram = entries
        total[0] += micros
        total[1] += 1
        lock[0] += micros
        lock[1] += 1
        op[0] += micros
        op[1] += 1
        histogram.counts[bucket] += 1
        histogram.latency += micros
        histogram.ops += 1

    def record_unknown(self, seconds: float) -> None:
        """A command that is not one (CommandNotFound): mongod's handleRequest still adds its time to the
        server-wide ``commands`` latency (jstests/noPassthrough/global_operation_latency_histogram.js),
        but it has no namespace, and its name, any client text, gets no figures of its own."""
        micros = int(seconds * 1_000_000)
        histogram = self.server["commands"]
        histogram.counts[min(micros.bit_length(), _BUCKETS - 1)] += 1
        histogram.latency += micros
        histogram.ops += 1

    def _command(self, name: str) -> tuple[Histogram, Histogram]:
        histogram = self.by_command[name] = Histogram()
        command = self._commands[name] = (histogram, self.server[_kinds(name)[2]])
        return command

    def _target(self, name: str, ns: str, key: tuple[str, str, str]):
        op_kind, lock_kind, latency_kind = _kinds(name)
        usage = self.usage.get(ns)
        if usage is None:
            usage = self.usage[ns] = {k: [0, 0] for k in USAGE_KEYS}
            self.latency[ns] = {kind: Histogram() for kind in LATENCY_KINDS}
        if len(self._targets) > 100_000:
            self._targets.clear()
        unkept = [0, 0]  # (the usage a kind without a counter of its own adds to)
        entries = self._targets[key] = (usage["total"], usage[lock_kind] if lock_kind else unkept,
                                        usage[op_kind] if op_kind else unkept, self.latency[ns][latency_kind])
        return entries

    def forget(self, ns: str) -> None:
        """Drop a namespace's figures (the collection was dropped), like mongod's Top."""
        self.usage.pop(ns, None)
        self.latency.pop(ns, None)
        self._targets.clear()

    def totals(self) -> dict[str, Any]:
        """The ``top`` command's ``totals`` document."""
        totals: dict[str, Any] = {"note": NOTE}
        for ns in sorted(self.usage):
            totals[ns] = {key: {"time": t, "count": n} for key, (t, n) in self.usage[ns].items()}
        return totals

    def latency_stats(self, ns: str, histograms: bool = False) -> dict[str, Any]:
        """``$collStats``' ``latencyStats`` of one namespace."""
        kinds = self.latency.get(ns)
        if kinds is None:
            return {kind: Histogram().document(histograms) for kind in LATENCY_KINDS}
        return {kind: kinds[kind].document(histograms) for kind in LATENCY_KINDS}

    def op_latencies(self) -> dict[str, Any]:
        """serverStatus ``opLatencies``."""
        return {kind: self.server[kind].document() for kind in LATENCY_KINDS}


def _valid_namespace(db: str, collection: str) -> bool:
    """Whether mongod could have locked ``db.collection``: a command on an invalid name is refused
    before it touches the namespace, so the name gets no usage (checked once per name)."""
    try:
        check_db_name(db, dollar=True)
        check_collection_name(db, collection)
    except MongoError:
        return False
    return True
