"""Per-collection zstd dictionaries: sampled from a collection's first records, trained once,
stored durably, then used to compress that collection's new records (compression tag 3).

Schema: ``_meta`` key ``b"zdict:" + ident`` -> dictionary bytes; the dictionary id is the
number in the collection ident (``c12`` -> 12), unique because idents are never reused.

Invariants: only the writer thread samples and trains; a dictionary is registered with the
codec only after the transaction storing it committed, so no record can reference a dictionary
that is not on disk; dictionaries of dropped collections stay registered in memory until the
process ends (an old snapshot may still read those records) but leave the disk with the drop.
"""

from __future__ import annotations

import lmdb
import zstandard

from tidemark.storage.compression import ValueCodec, train_dictionary
from tidemark.storage.lmdb_types import Handle, Txn

PREFIX = b"zdict:"
TRAIN_AFTER = 1000  # samples per collection before training
MIN_SAMPLE = 64
MAX_SAMPLE = 8192  # larger values compress well enough alone
MAX_SAMPLING = 256  # collections sampled at once (bounds memory)


def dict_id_of(ident: str) -> int:
    return int(ident[1:])


class CollectionDictionaries:
    """The ident -> dictionary id map plus the samples still being collected."""

    def __init__(self, codec: ValueCodec) -> None:
        self._codec = codec
        self._by_ident: dict[str, int] = {}
        self._samples: dict[str, list[bytes]] = {}
        self._given_up: set[str] = set()
        self._ready: set[str] = set()  # idents with TRAIN_AFTER samples
        self.enabled = codec.compressor == "zstd"

    def load(self, txn: Txn, meta_db: Handle) -> None:
        with txn.cursor(db=meta_db) as cur:
            if not cur.set_range(PREFIX):
                return
            for key, value in cur.iternext(keys=True, values=True):
                if not key.startswith(PREFIX):
                    break
                ident = key[len(PREFIX):].decode()
                self._codec.register_dictionary(dict_id_of(ident), value)
                self._by_ident[ident] = dict_id_of(ident)

    def for_record(self, ident: str, value: bytes) -> int | None:
        """The dictionary to compress ``value`` with, sampling it while there is none yet."""
        dict_id = self._by_ident.get(ident)
        if dict_id is None and self.enabled and MIN_SAMPLE <= len(value) <= MAX_SAMPLE:
            samples = self._samples.get(ident)
            if samples is None:
                if ident in self._given_up or len(self._samples) >= MAX_SAMPLING:
                    return None
                samples = self._samples[ident] = []
            if len(samples) < TRAIN_AFTER:
                samples.append(value)
                if len(samples) == TRAIN_AFTER:
                    self._ready.add(ident)
        return dict_id

    def train_ready(self, env: lmdb.Environment, meta_db: Handle) -> None:
        """Train and durably store dictionaries for collections with enough samples (writer
        thread, no write transaction open)."""
        while self._ready:
            ident = self._ready.pop()
            samples = self._samples.pop(ident, None)
            if not samples:
                continue
            try:
                data = train_dictionary(samples)
            except zstandard.ZstdError:
                self._given_up.add(ident)
                continue
            with env.begin(write=True) as txn:
                txn.put(PREFIX + ident.encode(), data, db=meta_db)
            self._codec.register_dictionary(dict_id_of(ident), data)
            self._by_ident[ident] = dict_id_of(ident)

    def forget(self, txn: Txn, meta_db: Handle, ident: str) -> None:
        """Inside the drop's transaction: remove the dictionary from disk."""
        txn.delete(PREFIX + ident.encode(), db=meta_db)
        self._samples.pop(ident, None)
        self._ready.discard(ident)

