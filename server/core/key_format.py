"""Start-up upgrade of stored keys encoded in an older ``storage.keys.KEY_FORMAT``.

Format 1 (before the catalog recorded formats) keyed a double as its 34-digit decimal rounding (equal to
a Decimal128 the matcher finds unequal) and an empty array as null; format 2 orders every number by its
exact value and keys an empty array as undefined; format 3 keys a wildcard index's empty array as
undefined too (format 2's wildcard keys held the array itself). An index of an older format would answer
differently from the collection scan, so it is rebuilt from its collection's documents before the server
listens (the time-series journal is replayed after it, with keys of the current format) — unless its
keys read the same in the current format: then it is only stamped with it. That is every index but a
wildcard one from format 2, and, from format 1, one none of whose stored keys holds a null or a non-zero
number, whose bytes the formats share (``keyspan.reads_the_same_as_format_1``); a wildcard index of an
older format is always rebuilt.

Crash safety: each index is rebuilt and stamped with the current format in one write transaction (a
clustered collection whose record ids change: all of it in one), so a kill at any point leaves each
index either rebuilt or as it was, and the next start rebuilds what is left.
"""

from __future__ import annotations

import time
from typing import Any

from tidemark import log
from tidemark.core.collection import build_index_entries
from tidemark.query.index_keys import MULTIKEY_FLAG
from tidemark.query.wildcard import is_wildcard
from tidemark.storage.keys import KEY_FORMAT
from tidemark.storage.keyspan import reads_the_same_as_format_1

_BTREE_SAME_SINCE = 2  # an index but a wildcard one keys every document as format 2 did


def _stale(info: Any) -> bool:
    return (info.clustered and info.key_format < KEY_FORMAT
            or any(info.index_formats[spec["name"]] < KEY_FORMAT for spec in info.indexes))


def upgrade_stored_keys(engine: Any) -> int:
    """Rebuild every index (and re-key every clustered collection) of an older key format, or only
    stamp it when its stored keys already read the same in the current format; returns the number of
    indexes rebuilt. Runs before the server accepts connections."""
    with engine.read() as r:
        namespaces = [info.ns for db in r.list_databases() for info in r.list_collections(db) if _stale(info)]
    rebuilt = 0
    for ns in namespaces:
        rebuilt += _upgrade_collection(engine, ns)
    return rebuilt


def _upgrade_collection(engine: Any, ns: str) -> int:
    started = time.monotonic()

    def rekey(w: Any) -> tuple[list[str], int]:
        info = w.get_collection(ns)
        if info.key_format >= KEY_FORMAT:
            return [], 0
        info, moved = w.rekey_records(info)
        names = [spec["name"] for spec in info.indexes]
        if moved:  # every entry names the old record ids: all indexes now, in this transaction
            for name in names:
                info = _rebuild(w, info, name)
            return names, moved
        return [], 0

    done, moved = engine.write_sync(rekey)
    if moved:
        log.info("STORAGE", 7960001, "Moved records to the record ids of the current key format",
                 ctx="initandlisten", namespace=ns, records=moved, keyFormat=KEY_FORMAT)
    for name in done:
        _log_rebuilt(ns, name)
    with engine.read() as r:
        info = r.get_collection(ns)
        stale = [spec["name"] for spec in info.indexes
                 if info.index_formats[spec["name"]] < KEY_FORMAT and spec["name"] not in done]
    rebuilt = list(done)
    for name in stale:
        directions = info.index_directions(name)
        wildcard = is_wildcard(info.index_spec(name)["key"])
        if not wildcard and info.index_formats[name] >= _BTREE_SAME_SINCE:
            engine.write_sync(lambda w, name=name: w.set_index_key_format(w.get_collection(ns), name))
            continue  # (its keys are the current format's: only wildcard keys changed since)
        if not wildcard and all(reads_the_same_as_format_1(key, len(directions))
                                for key, _rid in engine.index_scan_stream(ns, name)):
            # no null, no number: the stored keys are already the current format's (a time-series
            # index on a meta of strings and the time, e.g.): no need to read every document
            engine.write_sync(lambda w, name=name: w.set_index_key_format(w.get_collection(ns), name))
            log.info("INDEX", 7960004, "Index of an older key format holds the same keys in the current one",
                     ctx="initandlisten", namespace=ns, index=name, keyFormat=KEY_FORMAT)
            continue
        engine.write_sync(lambda w, name=name: _rebuild(w, w.get_collection(ns), name))  # one transaction each
        rebuilt.append(name)
        _log_rebuilt(ns, name)
    if stale or done:
        log.info("INDEX", 7960003, "Upgraded the stored keys of a collection", ctx="initandlisten",
                 namespace=ns, rebuilt=len(rebuilt), durationMillis=int((time.monotonic() - started) * 1000))
    return len(rebuilt)


def _log_rebuilt(ns: str, name: str) -> None:
    log.info("INDEX", 7960002, "Rebuilt index of an older key format", ctx="initandlisten",
             namespace=ns, index=name, keyFormat=KEY_FORMAT)


def _rebuild(w: Any, info: Any, name: str) -> Any:
    spec = dict(info.index_spec(name))
    entries = build_index_entries(w, info, spec)  # (flags the copy multikey when a document is)
    changes = {MULTIKEY_FLAG: True} if spec.get(MULTIKEY_FLAG) else None
    return w.rebuild_index(info, name, entries, changes)
