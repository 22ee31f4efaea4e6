"""Compaction at clean shutdown: rewrite the environment into a fresh, densely packed file, then swap.

Why: after a load, ``data.mdb`` holds free pages (copy-on-write, journal trims, bucket rewrites:
~25 % of the file), half-empty leaf pages (LMDB splits pages in the middle unless appending) and
values rounded up to whole overflow pages (a 2.46 KB bucket takes 4 KiB). ``mdb_env_copy2(COMPACT)``
only drops the free pages; a rebuild also repacks. The rebuild reads every live sub-database in key
order and appends it (``MDB_APPEND``: split pages stay full) into a new environment; a value too large
for a leaf node, or of at least a quarter page and larger than the room left in the current leaf page,
is chunked (storage/chunks.py): a head sized to fill the current leaf page, pieces in ``_chunks``
sized to fill theirs. ``PageModel`` tracks the free bytes of the page being filled with
LMDB's own node arithmetic (mdb_node_add), so heads and pieces end exactly at page boundaries.

Crash safety (the swap): the copy is built in ``<dbpath>/compact.tmp/``, synced, verified (entry
counts per sub-database) and closed; the live environment is closed; then ``rename(tmp/data.mdb,
data.mdb)`` (atomic) and an fsync of the directory. A crash before the rename leaves the old file,
which holds every acknowledged write (all were committed before compaction starts); a crash after
it leaves the new, complete and synced file. A leftover ``compact.tmp`` is removed at the next open.
The engine calls this only after its writer thread stopped, with the dbpath lock held, and never
while another process has the environment open (its reader table shows other pids).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

import lmdb

from tidemark.storage import chunks, indexes
from tidemark.storage.catalog import decode_entry, index_db_name, records_db_name
from tidemark.storage.errors import is_out_of_space
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.longkeys import LONGKEYS_DB, LongKeys
from tidemark.storage.txn import GRAVEYARD

log = logging.getLogger("tidemark.storage")

TMP_DIR = "compact.tmp"
DATA_FILE = "data.mdb"
# Compact only when the estimated reclaimable space (free pages + half of the overflow pages, the
# average rounding loss) is both large in bytes and a large share of the file: a test database of a
# few hundred KiB shuts down without paying for a copy and two extra fsyncs.
MIN_WASTE_PAGES = 256  # 1 MiB with 4 KiB pages
MIN_WASTE_SHARE = 0.10
# The copy costs ~5 ms per MB here (300 ms for 65 MB): above this many live pages (4 GiB) a shutdown
# would outlast service managers' stop timeouts, so only compact_on_close=True compacts.
MAX_AUTO_PAGES = 1 << 20
TXN_BYTES = 64 << 20  # commit the copy in steps: one LMDB write txn keeps its dirty pages in memory

_PAGE_HEADER = 16  # PAGEHDRSZ
_NODE_HEADER = 8  # NODESIZE
_SLOT = 2  # sizeof(indx_t): the node's entry in the page's offset array
_MIN_PIECE = 64  # no head/piece shorter than this: start on a fresh page instead
_SUBDB_RECORD = 48  # sizeof(MDB_db): a dupsort node's data once its duplicates have a sub-database
# A value that fits a leaf node but not what is left of the current page is chunked too when it is at
# least this share of a page: inline, LMDB would leave the rest of the page empty (with 1.5 KB TSBS
# buckets, two per page: 26 % of the records' pages). Smaller values waste less than they would cost
# in extra piece reads.
_CHUNK_PAST_ROOM = 4  # value >= psize / 4


def node_max(psize: int) -> int:
    """Largest leaf node (header + key + data) LMDB keeps inline (me_nodemax)."""
    return (((psize - _PAGE_HEADER) // 2) & ~1) - _SLOT


def node_cost(key_len: int, data_len: int) -> int:
    """Bytes an inline leaf node takes from its page, offset slot included."""
    return ((_NODE_HEADER + key_len + data_len + 1) & ~1) + _SLOT


class PageModel:
    """Free bytes in the last leaf page of one sub-database being appended to."""

    def __init__(self, psize: int):
        self.psize = psize
        self.node_max = node_max(psize)
        self.room = psize - _PAGE_HEADER

    def data_room(self, key_len: int) -> int:
        """Most data bytes a node with this key can hold inline in the current page."""
        return min(self.room - _SLOT - _NODE_HEADER - key_len, self.node_max - _NODE_HEADER - key_len)

    def add(self, key_len: int, data_len: int) -> None:
        cost = node_cost(key_len, data_len)
        if cost > self.room:  # LMDB appends into a fresh page
            self.room = self.psize - _PAGE_HEADER
        self.room -= cost

    def new_page(self) -> None:
        self.room = self.psize - _PAGE_HEADER

    def unknown(self) -> None:
        """After a put the model cannot follow: assume the page is full."""
        self.room = 0


@dataclass
class Waste:
    file_pages: int
    free_pages: int
    overflow_pages: int
    # leaf pages beyond what their entries fill at the copy's ~full pages: values of 1-2 KB (compressed
    # time-series buckets) written out of key order leave each leaf page about half empty after splits
    # (2,400 TSBS buckets took 2,399 leaf pages), waste neither free nor overflow pages show
    slack_leaf_pages: float = 0.0

    @property
    def reclaimable(self) -> float:
        return self.free_pages + self.overflow_pages / 2 + self.slack_leaf_pages

    def worth_it(self) -> bool:
        return (self.reclaimable >= MIN_WASTE_PAGES
                and self.reclaimable >= MIN_WASTE_SHARE * self.file_pages
                and self.file_pages - self.free_pages <= MAX_AUTO_PAGES)


@dataclass
class Report:
    pages_before: int = 0
    pages_after: int = 0
    chunked: int = 0
    counts: dict[bytes, int] = field(default_factory=dict)  # sub-database -> entries copied


def at_close(env: lmdb.Environment, dbpath: str, handles: Mapping[bytes, Handle],
             catalog_db: Handle, *, max_dbs: int, force: bool = False) -> Report | None:
    """Build the packed copy in ``<dbpath>/compact.tmp`` if ``force`` or worth it; the caller then
    closes ``env`` and calls ``swap``. ``handles``: the engine's sub-databases by name (buried ones
    are left out: only what the catalog references is copied). None when nothing was built; any
    failure leaves the live file as it is (compaction only saves space)."""
    started = time.monotonic()
    try:
        live, non_unique = live_handles(env, handles, catalog_db)
        waste = measure(env, live)
        if not force and not waste.worth_it():
            return None
        if other_processes(env):
            log.info("compaction skipped: another process has %s open", dbpath)
            return None
        copy_bytes = (waste.file_pages - waste.free_pages) * env.stat()["psize"]
        if not force and shutil.disk_usage(dbpath).free < copy_bytes * 1.1:
            log.warning("compaction skipped: %s has no room for a %d-byte copy", dbpath, copy_bytes)
            return None
        remove_leftover(dbpath)
        report = rebuild(env, live, os.path.join(dbpath, TMP_DIR), max_dbs=max_dbs, split=non_unique)
    except Exception as exc:
        if is_out_of_space(exc):  # a full disk is no bug: one line, no traceback
            log.warning("compaction of %s stopped: the disk is full (%s); the data file is left as it was",
                        dbpath, exc)
        else:
            log.exception("compaction of %s failed; the data file is left as it was", dbpath)
        remove_leftover(dbpath)
        return None
    log.info("compacted %s: %d -> %d pages (%d values chunked) in %.2f s", dbpath, report.pages_before,
             report.pages_after, report.chunked, time.monotonic() - started)
    return report


def live_handles(env: lmdb.Environment, handles: Mapping[bytes, Handle],
                 catalog_db: Handle) -> tuple[dict[bytes, Handle], set[bytes]]:
    """The engine's own sub-databases plus every one the catalog references (not buried ones), and
    the names of the non-unique indexes among them (their copy uses the split layout)."""
    live = {name: handles[name] for name in (b"_catalog", b"_meta", b"_journal", chunks.CHUNKS_DB, LONGKEYS_DB)}
    non_unique: set[bytes] = set()
    with env.begin() as txn:
        for _, raw in txn.cursor(db=catalog_db).iternext(keys=True, values=True):
            info = decode_entry(raw)
            live[records_db_name(info.ident)] = handles[records_db_name(info.ident)]
            for name, ident in info.index_idents.items():
                live[index_db_name(ident)] = handles[index_db_name(ident)]
                if not info.is_unique(name):
                    non_unique.add(index_db_name(ident))
    return live, non_unique


def measure(env: lmdb.Environment, handles: Mapping[bytes, Handle]) -> Waste:
    """Free and overflow pages of the environment (``handles``: every named sub-database)."""
    file_pages = env.info()["last_pgno"] + 1
    main = env.stat()
    used = 2 + main["branch_pages"] + main["leaf_pages"] + main["overflow_pages"]  # 2 meta pages
    overflow = 0
    slack = 0.0
    psize = main["psize"]
    with env.begin() as txn:
        for handle in handles.values():
            st = txn.stat(handle)
            used += st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]
            overflow += st["overflow_pages"]
            if st["entries"] and st["leaf_pages"]:
                node = _sampled_node_bytes(txn, handle, psize)
                needed = st["entries"] * node / ((psize - _PAGE_HEADER) * FULL_PAGE_SHARE)
                slack += max(0.0, st["leaf_pages"] - needed)
    return Waste(file_pages, max(0, file_pages - used), overflow, slack)


# what a copy's appended leaf pages hold of their room (MDB_APPEND fills a page before starting the next)
FULL_PAGE_SHARE = 0.9
NODE_SAMPLE = 256  # entries read per sub-database to estimate its mean leaf node size


def _sampled_node_bytes(txn: Txn, handle: Handle, psize: int) -> float:
    """Mean bytes a leaf node of ``handle`` takes (header, key, value or its overflow page number,
    offset slot) over its first ``NODE_SAMPLE`` entries: a bounded read, whatever the database size."""
    nodemax = (psize - _PAGE_HEADER) // 2  # a larger node's value lives on overflow pages
    total = count = 0
    for key, value in txn.cursor(db=handle):
        size = _NODE_HEADER + len(key) + len(value)
        total += (_NODE_HEADER + len(key) + 8 if size > nodemax else size) + _SLOT
        count += 1
        if count == NODE_SAMPLE:
            break
    return total / count if count else 0.0


def other_processes(env: lmdb.Environment) -> bool:
    """True if the reader table shows a process other than this one (it may read the file)."""
    me = os.getpid()
    for line in env.readers().splitlines()[1:]:
        fields = line.split()
        if fields and fields[0].isdigit() and int(fields[0]) != me:
            return True
    return False


def remove_leftover(dbpath: str) -> None:
    """Delete an unfinished copy (a crash during compaction); the live file was never touched."""
    shutil.rmtree(os.path.join(dbpath, TMP_DIR), ignore_errors=True)


def _fsync_path(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Copier:
    """Appends into the new environment, committing every TXN_BYTES."""

    def __init__(self, env: lmdb.Environment) -> None:
        self.env = env
        self.txn = env.begin(write=True)
        self.pending = 0
        self.placeholders: list[tuple[bytes, Handle]] = []  # see _append_dupsort

    def put(self, key: bytes, value: bytes, db: Handle) -> None:
        if not self.txn.put(key, value, db=db, append=True):
            # not above the last key (a comparator LMDB applies differently): a normal put
            self.txn.put(key, value, db=db)
        self.pending += len(key) + len(value)
        if self.pending >= TXN_BYTES:
            self.commit()
            self.txn = self.env.begin(write=True)
            self.pending = 0

    def drop_placeholders(self) -> None:
        for key, db in self.placeholders:
            if not self.txn.delete(key, db=db):
                raise RuntimeError(f"compaction placeholder {key!r} missing")
        self.placeholders.clear()

    def commit(self) -> None:
        self.drop_placeholders()
        self.txn.commit()


def _copy_db(src_txn: Txn, src_db: Handle, copier: _Copier, dst_db: Handle, dupsort: bool) -> None:
    with src_txn.cursor(db=src_db) as cur:
        entries = cur.iternext(keys=True, values=True)
        if dupsort:
            _append_dupsort(entries, copier, dst_db, PageModel(copier.env.stat()["psize"]))
        else:
            for key, value in entries:
                copier.put(key, value, dst_db)


def _copy_split(src_txn: Txn, src_db: Handle, copier: _Copier, dst_db: Handle, long: LongKeys) -> None:
    """Copy a plain non-unique index into the split layout (same order: appends stay appends; a
    compact form, storage/longkeys.py, keeps its place: it is placed as the split layout places it)."""
    with src_txn.cursor(db=src_db) as cur:
        entries = (indexes.place_split(stored, full, indexes.split_entry(full)[0], long.max_key)
                   for stored, full in ((stored, long.full(src_txn, stored))
                                        for stored, _ in cur.iternext(keys=True, values=True)))
        _append_dupsort(entries, copier, dst_db, PageModel(copier.env.stat()["psize"]))


def dupsort_node_cost(key_len: int, data_lens: list[int], psize: int) -> int:
    """Bytes the leaf node of one dupsort key with these duplicates takes from its page: one
    duplicate is a plain node; more live in a sub-page (a page header + one node per duplicate,
    offset slot included), or, past LMDB's node_max, in a sub-database (the node holds its
    48-byte MDB_db record)."""
    if len(data_lens) == 1:
        return node_cost(key_len, data_lens[0])
    sub = _PAGE_HEADER + sum(node_cost(0, n) for n in data_lens)
    if _NODE_HEADER + key_len + sub > node_max(psize):
        return node_cost(key_len, _SUBDB_RECORD)
    return node_cost(key_len, sub)


def separator(lo: bytes, hi: bytes) -> bytes | None:
    """A short key strictly between ``lo`` and ``hi`` (bytewise order), or None."""
    for i in range(len(lo)):
        if lo[i] < 0xFF:
            s = lo[:i] + bytes([lo[i] + 1])
            if lo < s < hi:
                return s
    s = lo + b"\0"
    return s if s < hi else None


def _append_dupsort(entries: Iterable[tuple[bytes, bytes]], copier: _Copier, dst_db: Handle,
                    page: PageModel) -> None:
    """Append a dupsort sub-database's entries (key order, duplicates in order) so leaf pages fill.

    LMDB grows a key's node one duplicate at a time, and with MDB_APPENDDUP (py-lmdb offers no
    MDB_APPEND on a dupsort database) a node that outgrows its page splits off *with the node before
    it*: a page of 1.2 KB nodes (a time-series meta key and its 24 buckets) kept two, not three. So
    when a key's whole node will not fit in what is left of the current page (``PageModel``, LMDB's
    arithmetic), a short placeholder key (between the previous key and this one) is appended first:
    the split moves the placeholder, not the previous key, and every placeholder is deleted once the
    sub-database is copied (in the same write transaction: ``_Copier`` deletes them before it
    commits). Only the page layout depends on this; the entries are the source's."""
    def flush(key: bytes, values: list[bytes]) -> None:
        cost = dupsort_node_cost(len(key), [len(v) for v in values], page.psize)
        if cost > page.room and prev is not None:
            spacer = separator(prev, key)
            if spacer is not None and node_cost(len(spacer), 1) <= page.room:
                copier.put(spacer, b"\0", dst_db)  # dupsort data may not be empty
                copier.placeholders.append((spacer, dst_db))
                page.new_page()
                page.room -= node_cost(len(spacer), 1)
        if cost > page.room:
            page.new_page()
        page.room -= cost
        for value in values:
            copier.put(key, value, dst_db)

    prev: bytes | None = None
    key: bytes | None = None
    values: list[bytes] = []
    for k, v in entries:
        k = bytes(k)
        if k != key:
            if key is not None:
                flush(key, values)
                prev = key
            key, values = k, []
        values.append(bytes(v))
    if key is not None:
        flush(key, values)
    copier.drop_placeholders()


def _copy_records(src_txn: Txn, src_db: Handle, src_chunks: Handle,
                  copier: _Copier, dst_db: Handle, dst_chunks: Handle, next_piece: int,
                  pieces_page: PageModel) -> tuple[int, int, int]:
    """Append every record, chunking values too large for a leaf node (or large values past the room
    left in the current page); returns (records, chunked records, next free piece id)."""
    records_page = PageModel(pieces_page.psize)
    large = pieces_page.psize // _CHUNK_PAST_ROOM
    n = chunked = 0
    cur = src_txn.cursor(db=src_db)
    for rid, stored in cur.iternext(keys=True, values=True):
        n += 1
        value = chunks.resolve(src_txn, src_chunks, stored)
        key_len = len(rid)
        if _NODE_HEADER + key_len + len(value) <= records_page.node_max and (
                len(value) < large or node_cost(key_len, len(value)) <= records_page.room
                or records_page.data_room(key_len) - chunks.HEAD_SIZE < _MIN_PIECE):
            copier.put(rid, value, dst_db)
            records_page.add(key_len, len(value))
            continue
        room = records_page.data_room(key_len) - chunks.HEAD_SIZE
        if room < _MIN_PIECE:
            records_page.new_page()
            room = records_page.data_room(key_len) - chunks.HEAD_SIZE
        rest = memoryview(value)[room:]
        first = next_piece
        while rest:
            piece_room = pieces_page.data_room(8)
            if piece_room < _MIN_PIECE:
                pieces_page.new_page()
                piece_room = pieces_page.data_room(8)
            piece = bytes(rest[:piece_room])
            copier.put(chunks.piece_key(next_piece), piece, dst_chunks)
            pieces_page.add(8, len(piece))
            next_piece += 1
            rest = rest[len(piece):]
        head = chunks.make_head(len(value), first, next_piece - first, value[:room])
        copier.put(rid, head, dst_db)
        records_page.add(key_len, len(head))
        chunked += 1
    cur.close()
    return n, chunked, next_piece


def rebuild(env: lmdb.Environment, handles: Mapping[bytes, Handle], dst_dir: str, *, max_dbs: int,
            split: AbstractSet[bytes] = frozenset()) -> Report:
    """Write a packed copy of ``env`` into ``dst_dir`` (created; synced and closed on return).

    ``handles``: the live sub-databases by name, with ``_catalog``, ``_meta``, ``_journal`` and
    ``_chunks`` among them; buried (graveyard) sub-databases must not be passed. ``split``: the
    non-unique indexes; one still in the plain layout (created before the split layout existed) is
    converted to it. Raises if a sub-database of the copy does not hold as many entries as the
    source's."""
    os.makedirs(dst_dir, mode=0o700)
    psize = env.stat()["psize"]
    report = Report(pages_before=env.info()["last_pgno"] + 1)
    dst = lmdb.open(dst_dir, map_size=env.info()["map_size"], subdir=True, max_dbs=max_dbs, sync=False,
                    metasync=False, lock=False, writemap=False, meminit=False, readahead=False,
                    mode=0o600)  # renamed over data.mdb: as private as the live file
    try:
        src_chunks = handles[chunks.CHUNKS_DB]
        meta_db = handles[b"_meta"]
        copier = _Copier(dst)
        dst_handles: dict[bytes, Handle] = {}
        pieces_page = PageModel(psize)  # one _chunks sub-database for all collections
        with env.begin() as src:
            convert: set[bytes] = set()
            for name in sorted(handles):
                flags = handles[name].flags()  # fixed when the handle was opened
                dupsort = flags["dupsort"] or name in split
                if dupsort and not flags["dupsort"]:
                    convert.add(name)
                dst_handles[name] = dst.open_db(
                    name, txn=copier.txn, create=True, reverse_key=flags["reverse_key"], dupsort=dupsort,
                    integerkey=flags["integerkey"], integerdup=flags["integerdup"],
                    dupfixed=flags["dupfixed"])
            dst_chunks = dst_handles[chunks.CHUNKS_DB]
            ranges: dict[bytes, bytes] = {}
            next_piece = 1
            for name in sorted(handles):
                if name in (chunks.CHUNKS_DB, b"_meta"):
                    continue  # pieces are rewritten with their records; _meta last (chunk ranges)
                report.counts[name] = src.stat(handles[name])["entries"]
                if name.startswith(b"r:"):
                    first = next_piece
                    _, chunked, next_piece = _copy_records(src, handles[name], src_chunks, copier,
                                                           dst_handles[name], dst_chunks, next_piece,
                                                           pieces_page)
                    report.chunked += chunked
                    if next_piece > first:
                        ranges[chunks.range_key(name[2:].decode())] = (
                            first.to_bytes(8, "big") + next_piece.to_bytes(8, "big"))
                elif name in convert:
                    long = LongKeys(handles[LONGKEYS_DB], name[2:].decode(), env.max_key_size())
                    _copy_split(src, handles[name], copier, dst_handles[name], long)
                else:
                    # placeholders need bytewise key order and free-size duplicates
                    flags = handles[name].flags()
                    plain_dupsort = flags["dupsort"] and not any(
                        flags[f] for f in ("reverse_key", "integerkey", "integerdup", "dupfixed"))
                    _copy_db(src, handles[name], copier, dst_handles[name], plain_dupsort)
            meta = {bytes(k): bytes(v) for k, v in src.cursor(db=meta_db).iternext(keys=True, values=True)
                    if k != GRAVEYARD and not bytes(k).startswith(chunks.RANGE_PREFIX)}
            meta.update(ranges)
            for key in sorted(meta):
                copier.put(key, meta[key], dst_handles[b"_meta"])
            report.counts[b"_meta"] = len(meta)
            report.counts[chunks.CHUNKS_DB] = next_piece - 1
        copier.commit()
        with dst.begin() as check:
            for name, expected in report.counts.items():
                got = check.stat(dst_handles[name])["entries"]
                if got != expected:
                    raise RuntimeError(f"compaction copy of {name!r}: {got} entries, expected {expected}")
        dst.sync(True)
        report.pages_after = dst.info()["last_pgno"] + 1
    finally:
        dst.close()
    _fsync_path(os.path.join(dst_dir, DATA_FILE))
    return report


def swap(dbpath: str) -> bool:
    """Put the synced copy in place of the live file (the live environment must be closed).
    Never raises: whatever fails, one complete file holds the data (logged, False)."""
    tmp = os.path.join(dbpath, TMP_DIR)
    try:
        os.replace(os.path.join(tmp, DATA_FILE), os.path.join(dbpath, DATA_FILE))
        _fsync_path(dbpath, directory=True)
    except OSError:
        log.exception("compaction of %s: the swap failed; the data file is the old or the new one, "
                      "both complete", dbpath)
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True
