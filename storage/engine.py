"""The storage engine: one LMDB environment per dbpath, one writer thread, group commit.

Invariants (the LMDB discipline of the architecture):
- All write transactions run on the writer thread. ``write(fn)`` queues fn; the writer drains
  everything queued into ONE parent transaction, runs the fns in order, commits once (sync and
  metasync on, no writemap), and only then resolves the futures. An acknowledged write is durable.
- A raising fn rolls back only itself: fns first run directly in the parent (cheap); if one
  raises, the group is aborted and rerun with a nested transaction per fn.
- If the map fills, the whole group is aborted, the map grown and the group run again. So a fn
  may run more than once: it must not have side effects outside its WriteTxn.
- Read transactions pass through a gate. The map is only resized while no read transaction is
  open in this process (LMDB requires it). A dropped sub-database's handle is marked dying (reads
  begun from then on get StorageDropped for it) and unpublished, closed and deleted once no read
  begun before the mark is open (a snapshot begun before the drop may read through it until
  then): tried after each group and as soon as the last such read leaves (the gate's on_idle
  queues a reclaim marker), whatever later reads are open and whether or not anything is written.
- LMDB handles opened by a group are published only after its commit; readers never open any, and
  a read transaction begun while such a commit runs is begun again (``_opening``, a seqlock).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import lmdb

from tidemark.storage import compact, records
from tidemark.storage import journal as journal_mod
from tidemark.storage.catalog import decode_entry, index_db_name, records_db_name
from tidemark.storage.changes import ChangeLog
from tidemark.storage.chunks import CHUNKS_DB
from tidemark.storage.compression import ValueCodec
from tidemark.storage.dbpath import FILE_MODE, lock_dbpath, prepare_dbpath, unlock_dbpath
from tidemark.storage.dictionaries import CollectionDictionaries
from tidemark.storage.errors import (
    DbPathUnusable,
    EngineClosed,
    OutOfDiskSpace,
    StorageDropped,
    StorageError,
    TransactionTooLarge,
    storage_failure,
)
from tidemark.storage.faults import CommitFaults
from tidemark.storage.gate import ReadGate
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.longkeys import LONGKEYS_DB, LongKeysByIdent, Presence
from tidemark.storage.readview import ReadView, flush_sizes
from tidemark.storage.txn import GRAVEYARD, IndexHandles, WriteTxn

T = TypeVar("T")

DEFAULT_MAP_SIZE = (64 << 30) if sys.maxsize > 2**32 else (1 << 30)
DEFAULT_MAX_DBS = 8192  # LMDB allocates per-transaction arrays of this size: keep it moderate
MAX_GROUP = 10_000
GROW_AT = 0.8  # grow the map before a group once this fraction is used
_STOP = object()
_HOLD = object()  # a write hold marker (``hold_writes``): queued as (_HOLD, future)
_RECLAIM = object()  # queued by the read gate when the reads that held back a reclaim have left
# A queued write: the fn and the future its result (or exception) goes to.
_Write = tuple[Callable[[WriteTxn], Any], concurrent.futures.Future[Any]]


class _Group:
    """State of one group transaction shared by its WriteTxns."""

    __slots__ = ("handles", "sizes", "changed", "map_full", "txn_full", "needs_isolation", "buried",
                 "storage_failed", "catalog")

    def __init__(self) -> None:
        self.handles: dict[bytes, Handle] = {}
        self.sizes: dict[str, int] = {}  # ident -> data size delta of the committed fns
        self.changed: dict[str, set[bytes]] = {}  # ident -> rids written (for ChangeLog: may over-report)
        self.map_full = False  # LMDB map exhausted: grow and run the group again
        self.txn_full = False  # too many dirty pages for one transaction: split the group
        self.needs_isolation = False  # a fn raised on the fast path: rerun with nested txns
        self.buried = False
        # a fn wrote the catalog or a ``system.views`` record (may over-report: a rolled-back one counts)
        self.catalog = False
        # (future, error) of a fn that hit an LMDB/OS failure on the fast path (e.g. ENOSPC): it is not
        # run again, the rest of the group is (the parent transaction may be unusable after it)
        self.storage_failed: tuple[concurrent.futures.Future[Any], Exception] | None = None


def _commit_error(exc: BaseException) -> Exception:
    """What the futures of a group that could not commit receive (nothing of the group was written):
    tidemark.storage.errors.storage_failure, the one mapping (no space -> OutOfDiskSpace 14031)."""
    return storage_failure(exc)


class _ReadContext:
    """Context manager of engine.read() (a class: cheaper than a generator-based one).

    On exit the view is detached from its transaction: py-lmdb frees a reader slot only when the
    Transaction object is freed (abort alone does not), and a generator suspended after its
    ``with engine.read() as r`` block still holds ``r``. Detaching makes "a suspended cursor holds
    no transaction" hold for every stream, whatever its frame keeps. (No ``__init__``: ``Engine.read``
    sets ``_engine`` on the object it makes, one Python frame fewer per read.)"""

    __slots__ = ("_engine", "_txn", "_view")
    _engine: Engine
    _txn: Txn
    _view: ReadView

    def __enter__(self) -> ReadView:
        engine = self._engine
        generation = engine.catalog_generation  # (before the begin: see Engine.catalog_generation)
        engine._gate.enter()
        try:
            while True:
                # LMDB makes a commit visible before it adds the sub-databases it opened to the
                # handle table a new read transaction copies: a read begun in between sees the new
                # collection but cannot use its handle (EINVAL). Begin again if one overlapped.
                opening = engine._opening
                txn = engine._env.begin(buffers=False)
                if not opening & 1 and opening == engine._opening:
                    break
                txn.abort()
                del txn
                with engine._publish_lock:  # held by the writer until it has published: wait, do not spin
                    pass
            self._txn = txn
        except BaseException:
            engine._gate.leave()
            raise
        self._view = view = ReadView(engine, self._txn, {})
        view.catalog_generation = generation
        return view

    def __exit__(self, *exc: object) -> None:
        txn = self._txn
        del self._txn
        # the view forgets its transaction: kept past its block it must not keep an LMDB reader slot, and
        # using it then fails loudly (AttributeError: the view has no ``_txn`` any more)
        del self._view._txn
        del self._view
        try:
            txn.abort()
        finally:
            del txn
            self._engine._gate.leave()


class Engine:
    """See the module docstring and storage/README.md for the contract."""

    def __init__(self, dbpath: str, compressor: str = "zstd", map_size: int | None = None,
                 max_dbs: int = DEFAULT_MAX_DBS, compact_on_close: bool | None = None):
        self.dbpath = dbpath
        self.compact_on_close = compact_on_close  # None: when worth it (storage/compact.py)
        self.last_compaction: compact.Report | None = None
        self._codec = ValueCodec(compressor)
        self._dictionaries = CollectionDictionaries(self._codec)
        prepare_dbpath(dbpath)
        self._lock_fd = lock_dbpath(dbpath)
        compact.remove_leftover(dbpath)  # a compaction that did not finish never touched data.mdb
        try:
            self._env = lmdb.open(dbpath, map_size=map_size or DEFAULT_MAP_SIZE, subdir=True,
                                  max_dbs=max_dbs, sync=True, metasync=True, writemap=False,
                                  lock=True, max_readers=512, meminit=False, mode=FILE_MODE,
                                  # readahead on: cold sequential scans measured 4x faster with it
                                  readahead=True,
                                  max_spare_txns=64)  # reuse read txns: begin() costs O(max_dbs) otherwise
        except lmdb.Error as exc:
            unlock_dbpath(self._lock_fd)
            raise DbPathUnusable(f"cannot open the data files in {dbpath}: {exc}") from exc
        self._env.reader_check()  # clear reader slots left by a killed process (they pin old pages)
        self.max_key_size = self._env.max_key_size()
        self.max_dbs = max_dbs
        self._handles: dict[bytes, Handle] = {}
        # buried sub-databases not reclaimed yet -> the gate epoch from which reads may not use them
        self._dying: dict[bytes, int] = {}
        self._publish_lock = threading.Lock()
        # odd while a group that opened sub-databases commits (a seqlock for read transactions' begin)
        self._opening = 0
        self._gate = ReadGate(on_idle=self._reclaim_soon)
        self._rid_cache: dict[str, int] = {}
        # writer thread: catalog bytes -> (records handle, {index: (handle, unique, split)}), published only
        self._resolved_cache: dict[bytes, tuple[Handle, IndexHandles]] = {}
        self._jseq_cache: dict[bytes, int] = {}
        # Bumped by the writer after each commit that wrote the catalog (a collection created, dropped or
        # renamed, its options, its indexes and their flags) or a ``system.views`` record, before that
        # commit's writes are answered. A read transaction begun after reading generation g sees every
        # such commit counted in g (ReadView.catalog_generation), so what was derived from the catalog
        # and the views in a snapshot that carried g is still what the catalog says while the generation
        # is g (a commit not counted yet is already visible: it may be in that snapshot or not — either
        # state was current at some instant). Readers compare it without opening a transaction.
        self.catalog_generation = 0
        self._maybe_graveyard = False
        self.faults = CommitFaults()  # injected commit failures (tests): storage/faults.py
        self.stats = {"commits": 0, "writes": 0, "max_group": 0, "retries": 0, "isolated_reruns": 0,
                      "map_size": self._env.info()["map_size"]}
        try:
            self._open_catalog()
        except BaseException as exc:
            self._env.close()
            unlock_dbpath(self._lock_fd)
            if isinstance(exc, lmdb.Error | OSError):  # e.g. a full disk: a clear error, not a traceback
                error = storage_failure(exc)
                if not isinstance(error, OutOfDiskSpace):
                    error = DbPathUnusable(f"cannot open the catalog in {dbpath}: {exc}")
                raise error from exc
            raise
        # the records each commit changes, by snapshot id (storage/changes.py): known from here on
        self.changes = ChangeLog(self._env.info()["last_txnid"])
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()  # _Write items, _STOP, _RECLAIM
        self._closed = False
        # Called (no arguments) before every read transaction: the server installs its interruption
        # check, so every scan stream — one read transaction per chunk — stops at the next chunk once
        # its operation is killed or past maxTimeMS. It may raise; nothing is open yet.
        self.interrupt_check: Callable[[], None] | None = None
        self._close_lock = threading.Lock()
        # Set unless the writer is held (fsync lock): a held writer waits on it after its last group.
        self._writes_released = threading.Event()
        self._writes_released.set()
        self._writer = threading.Thread(target=self._writer_loop, name="storage-writer", daemon=True)
        self._writer.start()

    # --- start-up ----------------------------------------------------------------------------
    def _open_catalog(self) -> None:
        env = self._env
        with env.begin(write=True) as txn:
            self._catalog_db = env.open_db(b"_catalog", txn=txn, create=True)
            self._meta_db = env.open_db(b"_meta", txn=txn, create=True)
            self._journal_db = env.open_db(b"_journal", txn=txn, create=True)
            self._chunks_db = env.open_db(CHUNKS_DB, txn=txn, create=True)
            self._longkeys_db = env.open_db(LONGKEYS_DB, txn=txn, create=True)
            # ident -> its LongKeys (no transaction held); no full key held at the open: index reads skip
            # the compact-key seek until one is recorded (Presence)
            self._long_keys = LongKeysByIdent(self._longkeys_db, self.max_key_size,
                                              Presence(txn.stat(self._longkeys_db)["entries"] > 0))
            self._delete_graveyard(txn, {})
            self._dictionaries.load(txn, self._meta_db)
            with txn.cursor(db=self._catalog_db) as cur:
                for _, raw in cur.iternext(keys=True, values=True):
                    info = decode_entry(raw)
                    names = [records_db_name(info.ident)]
                    names += [index_db_name(i) for i in info.index_idents.values()]
                    for name in names:
                        self._handles[name] = env.open_db(name, txn=txn, create=True)

    def _delete_graveyard(self, txn: Txn, handles: dict[bytes, Handle]) -> None:
        """Delete buried sub-databases for good (their handles are no longer reachable)."""
        buried = txn.get(GRAVEYARD, db=self._meta_db)
        if not buried:
            return
        for name in filter(None, buried.split(b"\x00")):
            handle = handles.get(name)
            if handle is None and txn.get(name) is not None:
                handle = self._env.open_db(name, txn=txn, create=False)
            if handle is not None:
                txn.drop(handle, delete=True)
        txn.delete(GRAVEYARD, db=self._meta_db)

    # --- reads -------------------------------------------------------------------------------
    def read(self) -> _ReadContext:
        """One short read transaction: ``with engine.read() as r``. Never wait for a write()
        inside it (map growth waits for open reads to finish). Calls ``interrupt_check`` first."""
        if self._closed:
            raise EngineClosed()
        if self.interrupt_check is not None:
            self.interrupt_check()
        context = _ReadContext()
        context._engine = self
        return context

    def reading(self) -> bool:
        """This thread is inside ``engine.read()`` (holds a read transaction and a place in the gate)."""
        return self._gate.held()

    def _published_handle(self, name: bytes) -> Handle:
        # dying first, then published: a read that finds it no longer dying finds it unpublished
        if self._dying and name in self._dying:
            epoch = self._gate.epoch()
            if epoch is None or epoch >= self._dying.get(name, 0):
                raise StorageDropped(name.decode())
        handle = self._handles.get(name)
        if handle is None:
            # a snapshot that sees a new collection may start between commit and publication
            with self._publish_lock:
                handle = self._handles.get(name)
            if handle is None:
                raise StorageDropped(name.decode())
        return handle

    def scan_stream(self, ns: str, *, reverse: bool = False, chunk: int = 512,
                    start_after: bytes | None = None, lo: bytes | None = None,
                    hi: bytes | None = None, lo_inclusive: bool = True,
                    hi_inclusive: bool = True) -> Iterator[tuple[bytes, bytes]]:
        """(rid, bson) of a whole collection, a fresh read transaction per chunk: nothing is
        held while the generator is suspended. Stops early if the collection is dropped (or
        replaced by another with the same name) between chunks."""
        collection_uuid = None
        after = start_after
        while True:
            with self.read() as r:
                info = r.get_collection(ns)
                if info is None or (collection_uuid is not None and info.uuid != collection_uuid):
                    return
                collection_uuid = info.uuid
                batch = list(itertools.islice(
                    r.scan(info, start_after=after, reverse=reverse, lo=lo, hi=hi,
                           lo_inclusive=lo_inclusive, hi_inclusive=hi_inclusive), chunk))
            yield from batch
            if len(batch) < chunk:
                return
            after = batch[-1][0]

    def index_scan_stream(self, ns: str, index_name: str, lo: bytes | None = None,
                          hi: bytes | None = None, *, lo_inclusive: bool = True,
                          hi_inclusive: bool = True, reverse: bool = False, chunk: int = 512,
                          start_after: tuple[bytes, bytes] | None = None
                          ) -> Iterator[tuple[bytes, bytes]]:
        """(index key, rid) like ReadView.index_scan, a fresh read transaction per chunk."""
        collection_uuid = None
        after = start_after
        while True:
            with self.read() as r:
                info = r.get_collection(ns)
                if info is None or (collection_uuid is not None and info.uuid != collection_uuid):
                    return
                if index_name not in info.index_idents:
                    return
                collection_uuid = info.uuid
                batch = list(itertools.islice(
                    r.index_scan(info, index_name, lo, hi, lo_inclusive=lo_inclusive,
                                 hi_inclusive=hi_inclusive, reverse=reverse, start_after=after),
                    chunk))
            yield from batch
            if len(batch) < chunk:
                return
            after = batch[-1]

    # --- writes ------------------------------------------------------------------------------
    def write(self, fn: Callable[[WriteTxn], T]) -> concurrent.futures.Future[T]:
        """Queue fn for the next group commit; the future resolves after the durable commit
        (or carries fn's exception). fn's result must not reference the transaction."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._close_lock:
            if self._closed:
                raise EngineClosed()
            self._queue.put((fn, future))
        return future

    def write_sync(self, fn: Callable[[WriteTxn], T]) -> T:
        """write(fn) and wait: for start-up code and tests (never from inside engine.read())."""
        if threading.current_thread() is self._writer:
            raise StorageError("write_sync called from a write fn: it would wait for itself")
        return self.write(fn).result()

    def hold_writes(self) -> concurrent.futures.Future[None]:
        """Stop the writer once every write queued so far is committed (the future resolves then):
        later writes queue up, uncommitted, until :meth:`release_writes` (or :meth:`close`). For the
        fsync lock: while held the files do not change."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        with self._close_lock:
            if self._closed:
                raise EngineClosed()
            self._writes_released.clear()
            self._queue.put((_HOLD, future))
        return future

    def release_writes(self) -> None:
        """Let a held writer go on (no effect when it is not held)."""
        self._writes_released.set()

    def _writer_loop(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            if item is _STOP:
                break
            if item is _RECLAIM:
                if self._maybe_graveyard:
                    self._reclaim_graveyard()
                continue
            batch = [item] if item[0] is not _HOLD else []
            hold = item if not batch else None
            while batch and len(batch) < MAX_GROUP:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                if item is _RECLAIM:
                    continue  # the batch's own reclaim attempt follows it
                if item[0] is _HOLD:
                    hold = item
                    break
                batch.append(item)
            if hold is not None:
                if batch:
                    self._run_batch(batch)
                hold[1].set_result(None)
                self._writes_released.wait()
            else:
                self._run_batch(batch)
            # what ran is let go now, not when the next write arrives (a quiet server may wait long): a
            # write's function names what it writes (a time-series commit: the buckets it wrote in full
            # and their arrays), its future holds the result (their documents)
            del item, batch, hold

    def _run_batch(self, batch: list[_Write]) -> None:
        try:
            self._run_group(batch)
        except BaseException as exc:  # the writer thread must survive anything
            error = storage_failure(exc)
            if not isinstance(error, StorageError):
                error = StorageError(f"write group failed: {exc!r}")
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(error)
        if self._maybe_graveyard:
            self._reclaim_graveyard()
        try:
            self._dictionaries.train_ready(self._env, self._meta_db)
        except lmdb.Error:
            pass  # compression without a dictionary still works; retried by later samples

    def _run_group(self, batch: list[_Write]) -> None:
        live = [(fn, fut) for fn, fut in batch if fut.set_running_or_notify_cancel()]
        if live:
            self._commit_group(live)

    def _commit_group(self, live: list[_Write], isolated: bool = False) -> None:
        """Run fns in one parent txn and commit once.

        Fast path: fns run directly in the parent (a nested txn per fn costs O(max_dbs)). If one
        raises, the group is aborted and run again ``isolated``: each fn in its own nested txn,
        so the raising one rolls back alone. On map exhaustion the map grows and the group runs
        again; a group too big for one LMDB transaction is split in halves."""
        for attempt in itertools.count():
            try:
                self._grow_if_needed(force=attempt > 0)  # a re-attempt follows map exhaustion
            except Exception as exc:  # e.g. ENOSPC while resizing: nothing of the group ran
                error = storage_failure(exc)
                for _, fut in live:
                    fut.set_exception(error)
                return
            group = _Group()
            outcomes: list[tuple[concurrent.futures.Future[Any], Any, BaseException | None]] = []
            parent = self._env.begin(write=True)
            committed = False
            try:
                for fn, fut in live:
                    w = WriteTxn(self, group, parent)
                    try:
                        if isolated:
                            with w._atomic():
                                result = fn(w)
                        else:
                            result = fn(w)
                        outcomes.append((fut, result, None))
                    except Exception as exc:
                        if isinstance(exc, lmdb.MapFullError):
                            group.map_full = True
                        elif isinstance(exc, lmdb.TxnFullError):
                            group.txn_full = True
                        else:
                            # an LMDB/OS failure inside fn (e.g. ENOSPC writing spilled pages of a journal
                            # append or an index build) reaches the caller as a storage error
                            if isinstance(exc, lmdb.Error | OSError):
                                exc = storage_failure(exc)
                                if not isolated:
                                    group.storage_failed = (fut, exc)
                            if not isolated:
                                group.needs_isolation = True
                        outcomes.append((fut, None, exc))
                    if group.map_full or group.txn_full or group.needs_isolation:
                        break
                if not (group.map_full or group.txn_full or group.needs_isolation):
                    flush_sizes(parent, self._meta_db, group.sizes)
                    # noted before the commit: a reader that sees the commit finds its notes
                    self.changes.add(parent.id(), group.changed)
                    self.faults.check("commit")
                    if group.handles:
                        with self._publish_lock:
                            self._opening += 1  # odd: see _ReadContext.__enter__
                            try:
                                parent.commit()
                                committed = True
                                self._handles.update(group.handles)
                            finally:
                                self._opening += 1
                    else:
                        parent.commit()
                        committed = True
            except lmdb.MapFullError:
                group.map_full = True
            except lmdb.TxnFullError:
                group.txn_full = True
            except BaseException as exc:
                if not committed:
                    parent.abort()
                error = _commit_error(exc)
                for _, fut in live:
                    fut.set_exception(error)
                return
            if committed:
                break
            parent.abort()
            if group.needs_isolation and not (group.map_full or group.txn_full):
                self.stats["isolated_reruns"] += 1
                if group.storage_failed is not None:
                    failed, error = group.storage_failed
                    failed.set_exception(error)
                    live = [item for item in live if item[1] is not failed]
                if live:
                    self._commit_group(live, isolated=True)
                return
            self.stats["retries"] += 1
            if group.txn_full:
                if len(live) == 1:
                    live[0][1].set_exception(TransactionTooLarge())
                    return
                half = len(live) // 2
                self._commit_group(live[:half], isolated)
                self._commit_group(live[half:], isolated)
                return
            if attempt >= 20:
                error = OutOfDiskSpace("the write does not fit in the storage map even after growing it")
                for _, fut in live:
                    fut.set_exception(error)
                return
        if group.catalog:  # (committed; before the replies: a command sent after a DDL's reply sees it)
            self.catalog_generation += 1
        self._maybe_graveyard = self._maybe_graveyard or group.buried
        if group.buried:  # before the replies: a read begun once the drop is answered cannot reach it
            self._mark_dying(self._graveyard())
        self.stats["commits"] += 1
        self.stats["writes"] += len(live)
        self.stats["max_group"] = max(self.stats["max_group"], len(live))
        for fut, result, failure in outcomes:
            if failure is None:
                fut.set_result(result)
            else:
                fut.set_exception(failure)

    def _pack_record(self, ident: str, bson: bytes, bucket_form: Callable[[], bytes | None] | None = None) -> bytes:
        dictionaries = self._dictionaries
        packed = self._codec.pack(bson, dictionaries.for_record(ident, bson), bucket_form=bucket_form,
                                  bucket_dict=dictionaries.for_bucket(ident))
        dictionaries.sample_bucket(ident, packed)
        return packed

    def _append_record(self, txn: Txn, ident: str, records_db: Handle, packed: bytes) -> bytes:
        """Put a record under the next counter rid with MDB_APPEND (full pages, no search);
        resynchronise the cached counter if the append is refused (key not the largest)."""
        last = self._rid_cache.get(ident)
        if last is None:
            last = records.last_rid(txn, records_db)
        rid = records.rid_from_int(last + 1)
        if not txn.put(rid, packed, db=records_db, append=True):
            last = max(last, records.last_rid(txn, records_db))
            rid = records.rid_from_int(last + 1)
            if not txn.put(rid, packed, db=records_db, overwrite=False):
                raise StorageError(f"could not allocate a record id in {ident}")
        self._rid_cache[ident] = last + 1
        return rid

    def _next_journal_seq(self, txn: Txn, stream: bytes) -> int:
        last = self._jseq_cache.get(stream)
        if last is None:
            last = journal_mod.last_seq(txn, self._journal_db, self._meta_db, stream)
        self._jseq_cache[stream] = last + 1
        return last + 1

    # --- maintenance (writer thread, no write transaction open) ------------------------------
    def _grow_if_needed(self, force: bool = False) -> None:
        info = self._env.info()
        psize = self._env.stat()["psize"]
        used = (info["last_pgno"] + 1) * psize
        if not force and used < info["map_size"] * GROW_AT:
            return
        new_size = max(info["map_size"] * 2, used * 2)
        self.faults.check("grow")
        with self._gate.exclusive():
            self._env.set_mapsize(new_size)
        self.stats["map_size"] = self._env.info()["map_size"]

    def _graveyard(self) -> list[bytes]:
        """The names of the buried sub-databases (committed)."""
        with self._env.begin(buffers=False) as txn:
            buried = txn.get(GRAVEYARD, db=self._meta_db)
        return [name for name in (buried or b"").split(b"\x00") if name]

    def _mark_dying(self, names: list[bytes]) -> None:
        """Reads begun from a new gate epoch on get StorageDropped for these (_published_handle)."""
        new = [name for name in names if name not in self._dying]
        if new:
            self._gate.advance(lambda epoch: self._dying.update(dict.fromkeys(new, epoch)))

    def _reclaim_soon(self) -> None:
        """The read gate's on_idle (any thread): the reads that held back a reclaim have left."""
        self._queue.put(_RECLAIM)

    def _reclaim_graveyard(self) -> None:
        """Delete the buried sub-databases once no read begun before they were marked dying is
        open; otherwise the gate calls _reclaim_soon once those reads have left."""
        names = self._graveyard()
        if not names:
            self._maybe_graveyard = False
            return
        self._mark_dying(names)  # done by their group already (unless it failed after its commit)
        taken: dict[bytes, Any] = {}

        def unpublish() -> None:
            for name in names:
                handle = self._handles.pop(name, None)
                if handle is not None:
                    taken[name] = handle

        if not self._gate.if_drained(max(self._dying[name] for name in names), unpublish):
            return  # a read might hold one of the handles: again when it leaves (or after a group)
        try:
            with self._env.begin(write=True) as txn:
                self._delete_graveyard(txn, taken)
        except lmdb.Error:
            return  # left for the next attempt or the next start-up
        self._maybe_graveyard = False
        for name in names:
            self._dying.pop(name, None)  # unpublished (and closed): reads get StorageDropped anyway
        self._resolved_cache.clear()  # may reference the handles just closed
        for name in names:
            if name.startswith(b"r:"):
                self._rid_cache.pop(name[2:].decode(), None)

    # --- shutdown ----------------------------------------------------------------------------
    def close(self) -> None:
        """Run every queued write (a held writer is released), then close the environment and
        release the dbpath lock."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._writes_released.set()
            self._queue.put(_STOP)
        self._writer.join()
        while True:  # nothing can be queued after _closed; fail anything the writer left
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP and item is not _RECLAIM and item[1].set_running_or_notify_cancel():
                item[1].set_exception(EngineClosed())
        with self._gate.exclusive():
            compacted = self._compact()
            self._env.close()
        try:
            if compacted:
                compact.swap(self.dbpath)
        finally:
            unlock_dbpath(self._lock_fd)

    def _compact(self) -> bool:
        """Write a packed copy at close (writer stopped, no read open) when asked or worth it."""
        if self.compact_on_close is False:
            return False
        handles = {b"_catalog": self._catalog_db, b"_meta": self._meta_db, b"_journal": self._journal_db,
                   CHUNKS_DB: self._chunks_db, LONGKEYS_DB: self._longkeys_db}
        handles.update(self._handles)
        self.last_compaction = compact.at_close(self._env, self.dbpath, handles, self._catalog_db,
                                                max_dbs=self.max_dbs, force=bool(self.compact_on_close))
        return self.last_compaction is not None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_engine(dbpath: str, compressor: str = "zstd", map_size: int | None = None,
                max_dbs: int = DEFAULT_MAX_DBS, compact_on_close: bool | None = None) -> Engine:
    """Open (creating if needed) the engine on ``dbpath``. Raises DbPathInUse/DbPathUnusable.
    ``compact_on_close``: None compacts at close when worth it, True always, False never."""
    return Engine(dbpath, compressor=compressor, map_size=map_size, max_dbs=max_dbs,
                  compact_on_close=compact_on_close)
