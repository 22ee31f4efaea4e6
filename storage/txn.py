"""WriteTxn: what one queued write fn sees and changes (a nested transaction of the group).

Invariants:
- It only ever runs on the engine's writer thread, inside the group's parent transaction.
- Each public mutation is atomic on its own: it validates (uniqueness, namespace
  existence) before writing, or runs in its own nested transaction (``_atomic``), so a caller
  that catches a storage error inside its fn never leaves a half-applied operation behind.
- A CollectionInfo passed in must match the catalog in this transaction (``info.raw``);
  a stale one raises CatalogChanged instead of silently skipping a new index.
- LMDB handles opened here are published to the engine only after the group commits; data
  size deltas are summed per group and written once before its commit.
"""

from __future__ import annotations

import functools
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import lmdb

from tidemark.storage import catalog, chunks, indexes, journal, records
from tidemark.storage.catalog import (
    ID_INDEX_NAME,
    CollectionInfo,
    check_creatable,
    index_db_name,
    records_db_name,
    split_ns,
)
from tidemark.storage.errors import (
    CatalogChanged,
    DuplicateKey,
    IndexExists,
    IndexNotFound,
    NamespaceExists,
    NamespaceNotFound,
    StorageError,
    TooManyCollections,
)
from tidemark.storage.keys import (
    KEY_FORMAT,
    RECORD_IDS_SINCE,
    T_CODE_W_SCOPE,
    T_NUMBER,
    T_OBJECT,
    type_bracket,
)
from tidemark.storage.lmdb_types import Handle, Txn
from tidemark.storage.longkeys import LongKeys, drop_ident
from tidemark.storage.readview import ReadView, size_key

if TYPE_CHECKING:
    from tidemark.storage.engine import Engine, _Group

_NEXT_IDENT = b"next_ident"
GRAVEYARD = b"graveyard"  # meta key: NUL-separated sub-db names to delete at next open
# the collections whose records are view definitions: a write of one counts as a catalog change
# (Engine.catalog_generation), as mongod's durable view catalog is part of its catalog
_VIEWS_SUFFIX = ".system.views"

# index name -> (handle, unique, split layout, its long keys)
IndexHandles = dict[str, tuple[Handle, bool, bool, LongKeys]]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _index_shape(info: CollectionInfo) -> list[tuple[str, str, bool]]:
    return [(name, ident, info.is_unique(name)) for name, ident in info.index_idents.items()]


def _index_entry(fields: dict[str, Any], name: str) -> dict[str, Any]:
    """The catalog entry of index ``name`` among a collection's entry fields (``catalog.entry_fields``);
    its callers have checked that the collection has the index."""
    entry: dict[str, Any] = next(e for e in fields["indexes"] if e["spec"]["name"] == name)
    return entry


class _Resolved:
    """An info verified against the catalog, with its LMDB handles looked up once."""

    __slots__ = ("given", "info", "records", "indexes", "prepared_unique")

    def __init__(self, given: CollectionInfo, info: CollectionInfo, records_db: Handle,
                 index_map: IndexHandles) -> None:
        self.given = given  # the object the caller passed (kept alive: its id is the cache key)
        self.info = info  # the current catalog entry
        self.records = records_db
        self.indexes = index_map  # name -> (handle, unique, split layout, long keys)
        # non-unique indexes that refuse new duplicate keys (collMod's prepareUnique)
        self.prepared_unique = frozenset(spec["name"] for spec in info.indexes if spec.get("prepareUnique"))


def _guard(method: Callable[Concatenate[WriteTxn, _P], _R]) -> Callable[Concatenate[WriteTxn, _P], _R]:
    """Record LMDB map exhaustion on the group even if the caller's fn swallows the error:
    the engine then aborts the whole group, grows the map and runs the group again."""

    @functools.wraps(method)
    def wrapper(self: WriteTxn, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except lmdb.MapFullError:
            self._group.map_full = True
            raise
        except lmdb.TxnFullError:
            self._group.txn_full = True
            raise

    return wrapper


class WriteTxn(ReadView):
    """Everything a ReadView offers on the pending state, plus mutations. See module docstring."""

    def __init__(self, engine: Engine, group: _Group, parent: Txn) -> None:
        super().__init__(engine, parent)
        self._group = group
        self._handles: list[dict[bytes, Handle]] = [group.handles]
        self._sizes: list[dict[str, int]] = [group.sizes]  # data size deltas, flushed at group end
        # id(info) -> _Resolved for infos checked against the catalog in this scope stack
        self._verified: dict[int, _Resolved] = {}

    # --- scopes --------------------------------------------------------------------------------
    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """A nested transaction: everything inside commits together or not at all."""
        parent = self._txn
        child = self._engine._env.begin(write=True, parent=parent)
        self._txn = child
        self._handles.append({})
        self._sizes.append({})
        try:
            yield
            child.commit()
        except BaseException:
            child.abort()
            self._handles.pop()
            self._sizes.pop()
            self._verified.clear()
            raise
        finally:
            self._txn = parent
        self._handles[-2].update(self._handles.pop())
        sizes = self._sizes.pop()
        outer = self._sizes[-1]
        for ident, delta in sizes.items():
            outer[ident] = outer.get(ident, 0) + delta

    def _add_size(self, ident: str, delta: int) -> None:
        sizes = self._sizes[-1]
        sizes[ident] = sizes.get(ident, 0) + delta

    def data_size(self, info: CollectionInfo) -> int:
        return super().data_size(info) + sum(level.get(info.ident, 0) for level in self._sizes)

    # --- handles -----------------------------------------------------------------------------
    def _db(self, name: bytes) -> Handle:
        for level in reversed(self._handles):
            handle = level.get(name)
            if handle is not None:
                return handle
        return self._engine._published_handle(name)

    def _create_db(self, name: bytes, dupsort: bool = False) -> Handle:
        try:
            handle = self._engine._env.open_db(name, txn=self._txn, create=True, dupsort=dupsort)
        except lmdb.DbsFullError:
            raise TooManyCollections(self._engine.max_dbs) from None
        self._handles[-1][name] = handle
        return handle

    def _bury(self, name: bytes) -> None:
        """Empty a sub-database now; the engine deletes it once no reader can hold its handle
        (when idle after a group, or at the next open)."""
        self._txn.drop(self._db(name), delete=False)
        self._group.buried = True
        meta = self._engine._meta_db
        buried = self._txn.get(GRAVEYARD, db=meta) or b""
        self._txn.put(GRAVEYARD, buried + name + b"\x00", db=meta)

    def _new_ident(self, kind: str) -> str:
        meta = self._engine._meta_db
        raw = self._txn.get(_NEXT_IDENT, db=meta)
        n = int.from_bytes(raw, "big") if raw else 1
        self._txn.put(_NEXT_IDENT, (n + 1).to_bytes(8, "big"), db=meta)
        return f"{kind}{n}"

    # --- catalog -----------------------------------------------------------------------------
    def _put_entry(self, fields: dict[str, Any]) -> CollectionInfo:
        raw = catalog.encode_entry(fields)
        self._txn.put(fields["ns"].encode(), raw, db=self._engine._catalog_db)
        self._group.catalog = True
        self._verified.clear()
        return catalog.decode_entry(raw)

    def _check_current(self, info: CollectionInfo) -> _Resolved:
        """Resolve ``info`` against the catalog of this transaction (cached per info object).

        The resolved ``.info`` is the current catalog entry. An older ``info`` of the same
        collection is accepted as long as its indexes (names, idents, uniqueness) are unchanged,
        since index keys computed from it are still complete; otherwise CatalogChanged."""
        resolved = self._verified.get(id(info))
        if resolved is not None and resolved.given is info:
            return resolved
        raw = self._txn.get(info.ns.encode(), db=self._engine._catalog_db)
        if raw is None:
            raise NamespaceNotFound(info.ns)
        current = info if raw == info.raw else catalog.decode_entry(raw)
        if current is not info and (current.ident != info.ident or _index_shape(current) != _index_shape(info)):
            raise CatalogChanged(info.ns)
        cache = self._engine._resolved_cache
        handles = cache.get(raw)
        if handles is None:
            index_map: IndexHandles = {}
            for name in current.index_idents:
                handle, unique = self._index(current, name), current.is_unique(name)
                index_map[name] = (handle, unique, not unique and indexes.is_split(self._txn, handle),
                                   self._long(current.index_idents[name]))
            handles = (self._records(current), index_map)
            published = self._engine._handles
            if records_db_name(current.ident) in published and all(
                    index_db_name(i) in published for i in current.index_idents.values()):
                if len(cache) >= 4096:
                    cache.clear()
                cache[raw] = handles  # same catalog bytes -> same idents -> same handles
        resolved = _Resolved(info, current, handles[0], handles[1])
        if current.ns.endswith(_VIEWS_SUFFIX):  # view definitions: part of the catalog generation
            self._group.catalog = True
        self._verified[id(info)] = resolved
        return resolved

    def _current(self, info: CollectionInfo) -> CollectionInfo:
        """The catalog's entry for the collection ``info`` describes (for DDL on possibly older
        infos: same collection incarnation required, index changes since are fine)."""
        raw = self._txn.get(info.ns.encode(), db=self._engine._catalog_db)
        if raw is None:
            raise NamespaceNotFound(info.ns)
        current = catalog.decode_entry(raw)
        if current.ident != info.ident:
            raise CatalogChanged(info.ns)
        return current

    @_guard
    def create_collection(self, ns: str, options: dict[str, Any] | None = None, *, clustered: bool = False,
                          uuid: uuid_module.UUID | None = None) -> CollectionInfo:
        check_creatable(ns, options or {})
        if self._txn.get(ns.encode(), db=self._engine._catalog_db) is not None:
            raise NamespaceExists(ns)
        with self._atomic():
            ident = self._new_ident("c")
            self._create_db(records_db_name(ident))
            index_entries = []
            if not clustered:
                index_ident = self._new_ident("x")
                self._create_db(index_db_name(index_ident))
                index_entries.append({"spec": {"v": 2, "key": {"_id": 1}, "name": ID_INDEX_NAME},
                                      "ident": index_ident, "kf": KEY_FORMAT})
            return self._put_entry({"ns": ns, "uuid": uuid or uuid_module.uuid4(),
                                    "options": dict(options or {}), "clustered": clustered,
                                    "ident": ident, "kf": KEY_FORMAT, "indexes": index_entries})

    @_guard
    def drop_collection(self, ns: str) -> None:
        info = self.get_collection(ns)
        if info is None:
            raise NamespaceNotFound(ns)
        with self._atomic():
            self._bury(records_db_name(info.ident))
            for index_ident in info.index_idents.values():
                self._bury(index_db_name(index_ident))
                drop_ident(self._txn, self._engine._longkeys_db, index_ident)
            drop_ident(self._txn, self._engine._longkeys_db, info.ident)
            self._txn.delete(size_key(info.ident), db=self._engine._meta_db)
            chunks.drop_collection(self._txn, self._engine._chunks_db, self._engine._meta_db, info.ident)
            self._engine._dictionaries.forget(self._txn, self._engine._meta_db, info.ident)
            for level in self._sizes:
                level.pop(info.ident, None)
            self._txn.delete(ns.encode(), db=self._engine._catalog_db)
            self._group.catalog = True
            self._verified.clear()

    @_guard
    def drop_database(self, db: str) -> list[str]:
        """Drop every collection of ``db``; returns the dropped namespaces."""
        dropped = [info.ns for info in self.list_collections(db)]
        with self._atomic():
            for ns in dropped:
                self.drop_collection(ns)
        return dropped

    @_guard
    def rename_collection(self, src_ns: str, dst_ns: str) -> CollectionInfo:
        """Move a collection (across databases too): data stays, only the catalog key changes.
        The caller drops an existing target first (``dropTarget``)."""
        split_ns(dst_ns)
        info = self.get_collection(src_ns)
        if info is None:
            raise NamespaceNotFound(src_ns)
        if self._txn.get(dst_ns.encode(), db=self._engine._catalog_db) is not None:
            raise NamespaceExists(dst_ns, f"target namespace exists: {dst_ns}")
        with self._atomic():
            fields = catalog.entry_fields(info)
            fields["ns"] = dst_ns
            self._txn.delete(src_ns.encode(), db=self._engine._catalog_db)
            return self._put_entry(fields)

    @_guard
    def set_options(self, ns: str, options: dict[str, Any]) -> CollectionInfo:
        """Replace the collection's options document (collMod computes the new one)."""
        info = self.get_collection(ns)
        if info is None:
            raise NamespaceNotFound(ns)
        fields = catalog.entry_fields(info)
        fields["options"] = dict(options)
        return self._put_entry(fields)

    # --- records -----------------------------------------------------------------------------
    def _check_index_keys(self, res: _Resolved, index_keys: dict[str, set[bytes]], rid: bytes | None) -> None:
        """Validate before writing: known index names, uniqueness (a unique key held by a record
        other than ``rid`` is a duplicate; rid None: held by any record; the same for a key of an index
        prepared for uniqueness). Keys of any length are stored (storage/longkeys.py), as mongod has no
        index key size limit."""
        ns = res.info.ns
        prepared = res.prepared_unique
        for name, keys in index_keys.items():
            entry = res.indexes.get(name)
            if entry is None:
                raise IndexNotFound(ns, name)
            db, unique, _, long = entry
            if keys and unique:
                indexes.check_unique(self._txn, db, long, ns, name, keys, rid)
            elif keys and prepared and name in prepared:
                indexes.check_prepared_unique(self._txn, db, long, ns, name, keys, rid)

    @_guard
    def insert(self, info: CollectionInfo, bson: bytes, index_keys: dict[str, list[bytes]] | None = None,
               *, rid: bytes | None = None, bucket_form: Callable[[], bytes | None] | None = None) -> bytes:
        """Store one record and its index entries; returns its rid. Nothing is written on error.
        ``bucket_form``: see ``ValueCodec.pack``."""
        res = self._check_current(info)
        txn = self._txn
        records_db = res.records
        if rid is None and res.info.clustered:  # keyed by _id: a second _id is a DuplicateKey below
            rid = records.clustered_rid_of(bson)
        if rid is not None and txn.get(self._long(info.ident).stored(rid), db=records_db) is not None:
            raise DuplicateKey(ID_INDEX_NAME, rid, info.ns)
        keysets = {name: set(keys) for name, keys in index_keys.items()} if index_keys else {}
        if keysets:
            self._check_index_keys(res, keysets, None)
        packed = self._engine._pack_record(info.ident, bson, bucket_form)
        if rid is None:
            rid = self._engine._append_record(txn, info.ident, records_db, packed)
        else:
            txn.put(self._long(info.ident).remember(txn, rid), packed, db=records_db)
        for name, keys in keysets.items():
            if keys:
                db, unique, split, long = res.indexes[name]
                indexes.add(txn, db, long, keys, rid, unique, split)
        self._note_change(info.ident, rid)
        sizes = self._sizes[-1]
        sizes[info.ident] = sizes.get(info.ident, 0) + len(bson)
        return rid

    @_guard
    def update(self, info: CollectionInfo, rid: bytes, bson: bytes,
               old_keys: dict[str, list[bytes]] | None = None,
               new_keys: dict[str, list[bytes]] | None = None, *,
               bucket_form: Callable[[], bytes | None] | None = None) -> None:
        """Replace record ``rid``; index entries in old_keys but not new_keys are removed, those
        in new_keys but not old_keys added (unique checked first). ``bucket_form``: see
        ``ValueCodec.pack``."""
        res = self._check_current(info)
        record_key = self._long(info.ident).stored(rid)
        stored = self._txn.get(record_key, db=res.records)
        if stored is None:
            raise StorageError(f"record {rid.hex()} not found in {info.ns}")
        old_size = self._old_size(stored)
        old_keys, new_keys = old_keys or {}, new_keys or {}
        added, removed = {}, {}
        for name in set(old_keys) | set(new_keys):
            old, new = set(old_keys.get(name, ())), set(new_keys.get(name, ()))
            added[name], removed[name] = new - old, old - new
        self._check_index_keys(res, added, rid)
        packed = self._engine._pack_record(info.ident, bson, bucket_form)
        if stored[0] == chunks.TAG_CHUNKED:
            chunks.delete_pieces(self._txn, self._engine._chunks_db, stored)
        self._txn.put(record_key, packed, db=res.records)
        self._note_change(info.ident, rid)
        for name in removed:
            db, unique, split, long = res.indexes[name]
            if removed[name]:
                indexes.remove(self._txn, db, long, removed[name], rid, unique, split)
            if added[name]:
                indexes.add(self._txn, db, long, added[name], rid, unique, split)
        self._add_size(info.ident, len(bson) - old_size)

    @_guard
    def delete(self, info: CollectionInfo, rid: bytes,
               index_keys: dict[str, list[bytes]] | None = None) -> bool:
        """Remove record ``rid`` and the given index entries; False if it did not exist."""
        res = self._check_current(info)
        index_keys = index_keys or {}
        for name in index_keys:
            if name not in res.indexes:
                raise IndexNotFound(info.ns, name)
        record_long = self._long(info.ident)
        stored = self._txn.get(record_long.stored(rid), db=res.records)
        if stored is None:
            return False
        old_size = self._old_size(stored)
        if stored[0] == chunks.TAG_CHUNKED:
            chunks.delete_pieces(self._txn, self._engine._chunks_db, stored)
        self._txn.delete(record_long.stored(rid), db=res.records)
        record_long.forget(self._txn, rid)
        self._note_change(info.ident, rid)
        for name, keys in index_keys.items():
            if keys:
                db, unique, split, long = res.indexes[name]
                indexes.remove(self._txn, db, long, set(keys), rid, unique, split)
        self._add_size(info.ident, -old_size)
        return True

    def _note_change(self, ident: str, rid: bytes) -> None:
        """For the engine's ChangeLog (storage/changes.py); a rolled-back write stays noted (harmless)."""
        changed = self._group.changed.get(ident)
        if changed is None:
            changed = self._group.changed[ident] = set()
        changed.add(rid)

    def _old_size(self, stored: bytes) -> int:
        """BSON size of a stored value about to be replaced or deleted (a chunked value is
        reassembled first: its head alone may not hold the inner value's size header)."""
        if stored[0] == chunks.TAG_CHUNKED:
            stored = chunks.resolve(self._txn, self._engine._chunks_db, stored)
        return self._engine._codec.unpacked_size(stored)

    # --- indexes -----------------------------------------------------------------------------
    @_guard
    def create_index(self, info: CollectionInfo, spec: dict[str, Any],
                     entries: Iterable[tuple[bytes, bytes]] = ()) -> CollectionInfo:
        """Add an index (``spec`` as listIndexes shows it, with ``name``) and bulk-load its
        (key, rid) entries. A unique violation raises DuplicateKey and leaves no trace."""
        info = self._current(info)
        name = spec["name"]
        if name in info.index_idents:
            raise IndexExists(info.ns, name)
        with self._atomic():
            index_ident = self._new_ident("x")
            # non-unique: the split layout (indexes.py), one copy of each distinct first component
            unique = bool(spec.get("unique")) or (name == ID_INDEX_NAME and not info.clustered)
            handle = self._create_db(index_db_name(index_ident), dupsort=not unique)
            fields = catalog.entry_fields(info)
            fields["indexes"].append({"spec": dict(spec), "ident": index_ident, "kf": KEY_FORMAT})
            new_info = self._put_entry(fields)
            self._engine.faults.check("index")
            indexes.bulk_add(self._txn, handle, self._long(index_ident), info.ns, name, entries,
                             new_info.is_unique(name))
        return new_info

    @_guard
    def drop_index(self, info: CollectionInfo, name: str) -> CollectionInfo:
        info = self._current(info)
        if name not in info.index_idents:
            raise IndexNotFound(info.ns, name)
        with self._atomic():
            self._bury(index_db_name(info.index_idents[name]))
            drop_ident(self._txn, self._engine._longkeys_db, info.index_idents[name])
            fields = catalog.entry_fields(info)
            fields["indexes"] = [e for e in fields["indexes"] if e["spec"]["name"] != name]
            return self._put_entry(fields)

    @_guard
    def set_index_unique(self, info: CollectionInfo, name: str, unique: bool) -> CollectionInfo:
        """Convert index ``name`` to unique (its spec gains ``unique: true`` and loses ``prepareUnique``)
        or back to non-unique (loses ``unique``): its entries move to a new sub-database of the other
        layout, in its place in the index list. A duplicate key when converting to unique raises
        DuplicateKey and changes nothing (the caller reports the duplicates first). The entries are
        read whole before the new ones are written: both use the shared long-key table."""
        info = self._current(info)
        if name not in info.index_idents or name == ID_INDEX_NAME:
            raise IndexNotFound(info.ns, name)
        old_ident = info.index_idents[name]
        entries = list(indexes.scan(self._txn, self._index(info, name), self._long(old_ident),
                                    info.is_unique(name)))
        with self._atomic():
            new_ident = self._new_ident("x")
            handle = self._create_db(index_db_name(new_ident), dupsort=not unique)
            fields = catalog.entry_fields(info)
            entry = _index_entry(fields, name)
            spec = {k: v for k, v in entry["spec"].items() if k not in ("unique", "prepareUnique")}
            if unique:
                spec["unique"] = True
            entry["spec"], entry["ident"] = spec, new_ident
            new_info = self._put_entry(fields)
            indexes.bulk_add(self._txn, handle, self._long(new_ident), info.ns, name, entries, unique)
            self._bury(index_db_name(old_ident))
            drop_ident(self._txn, self._engine._longkeys_db, old_ident)
        return new_info

    @_guard
    def rebuild_index(self, info: CollectionInfo, name: str, entries: Iterable[tuple[bytes, bytes]],
                      spec_changes: dict[str, Any] | None = None, *, key_format: int = KEY_FORMAT) -> CollectionInfo:
        """Replace every entry of index ``name`` by ``entries`` (key, rid), encoded in ``key_format``
        (the current ``KEY_FORMAT``; tests write older ones), which the index is stamped with
        (``spec_changes`` merged into its spec too, as ``set_index_options``): the upgrade of an index
        whose keys an older format encoded. Atomic: a crash before the commit leaves the old entries
        and the old format, to be rebuilt again."""
        info = self._current(info)
        if name not in info.index_idents:
            raise IndexNotFound(info.ns, name)
        ident = info.index_idents[name]
        with self._atomic():
            handle = self._index(info, name)
            self._txn.drop(handle, delete=False)
            drop_ident(self._txn, self._engine._longkeys_db, ident)
            fields = catalog.entry_fields(info)
            entry = _index_entry(fields, name)
            entry["kf"] = key_format
            if spec_changes:
                entry["spec"] = {**entry["spec"], **spec_changes}
            new_info = self._put_entry(fields)
            indexes.bulk_add(self._txn, handle, self._long(ident), info.ns, name, entries, new_info.is_unique(name))
        return new_info

    @_guard
    def set_index_key_format(self, info: CollectionInfo, name: str, key_format: int = KEY_FORMAT) -> CollectionInfo:
        """Stamp index ``name`` with ``key_format`` and keep its entries: the upgrade of an index whose
        stored keys read the same in the current format (``keyspan.reads_the_same_as_format_1``)."""
        info = self._current(info)
        if name not in info.index_idents:
            raise IndexNotFound(info.ns, name)
        fields = catalog.entry_fields(info)
        _index_entry(fields, name)["kf"] = key_format
        return self._put_entry(fields)

    @_guard
    def rekey_records(self, info: CollectionInfo, *, key_format: int = KEY_FORMAT) -> tuple[CollectionInfo, int]:
        """Stamp the collection's record ids with the current ``KEY_FORMAT``; a clustered collection's
        records whose ``_id`` the current format encodes otherwise (a double no 34-digit decimal holds,
        alone or inside a document) first move to their new record id (from a format before
        ``RECORD_IDS_SINCE``; a later one only gets the stamp). Returns (info, records moved):
        when any moved, every index still names the old ids and must be rebuilt in this transaction.
        An older ``key_format`` only stamps it (tests make a collection of an older format)."""
        info = self._current(info)
        moves: list[tuple[bytes, bytes, bytes]] = []
        if info.clustered and key_format == KEY_FORMAT and info.key_format < RECORD_IDS_SINCE:
            for tag in (T_NUMBER, T_OBJECT, T_CODE_W_SCOPE):  # (no other _id holds a number)
                lo, hi = type_bracket(tag)
                for rid, bson in self.scan(info, lo=lo, hi=hi, hi_inclusive=False):
                    new_rid = records.clustered_rid_of(bson)
                    if new_rid != rid:
                        moves.append((bytes(rid), new_rid, bytes(bson)))
        with self._atomic():
            for rid, _new_rid, _bson in moves:
                self.delete(info, rid, {})
            for _rid, new_rid, bson in moves:
                self.insert(info, bson, {}, rid=new_rid)
            fields = catalog.entry_fields(self._current(info))
            fields["kf"] = key_format
            return self._put_entry(fields), len(moves)

    @_guard
    def set_index_options(self, info: CollectionInfo, name: str,
                          changes: dict[str, Any]) -> CollectionInfo:
        """Merge ``changes`` into the index spec (a value of None removes the option)."""
        info = self._current(info)
        if name not in info.index_idents:
            raise IndexNotFound(info.ns, name)
        fields = catalog.entry_fields(info)
        entry = _index_entry(fields, name)
        spec = dict(entry["spec"])
        for option, value in changes.items():
            if value is None:
                spec.pop(option, None)
            else:
                spec[option] = value
        entry["spec"] = spec
        return self._put_entry(fields)

    # --- journal -----------------------------------------------------------------------------
    @_guard
    def journal_append(self, stream: bytes, payload: bytes) -> int:
        """Append a durable record to ``stream``; returns its seq (strictly increasing)."""
        self._engine.faults.check("journal")
        seq = self._engine._next_journal_seq(self._txn, stream)
        journal.append(self._txn, self._engine._journal_db, stream, seq, payload, self._engine._codec)
        return seq

    @_guard
    def journal_trim(self, stream: bytes, upto_seq: int) -> int:
        return journal.trim(self._txn, self._engine._journal_db, self._engine._meta_db, stream, upto_seq)

    @_guard
    def journal_drop(self, stream: bytes) -> int:
        return journal.drop_stream(self._txn, self._engine._journal_db, self._engine._meta_db, stream)


__all__ = ["ReadView", "WriteTxn"]  # ReadView re-exported: it used to live here
