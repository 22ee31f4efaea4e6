"""Per-collection zstd dictionaries: sampled from a collection's first records, trained once,
stored durably, then used to compress that collection's new records (compression tag 3).

Schema: ``_meta`` key ``b"zdict:" + ident`` -> dictionary bytes (``compression.stored_dictionary``:
one zstd frame of them when shorter; raw ones, stored before, read the same); the dictionary id is the
number in the collection ident (``c12`` -> 12), unique because idents are never reused.

Bucket dictionaries (tag-4 values, storage/bucket_codec.py): ``_meta`` key ``b"bdict:" + ident`` ->
a zstd dictionary trained on the column streams of the collection's first ``BUCKET_TRAIN_AFTER``
bucket values, of zstd id ``BUCKET_DICT_BASE`` + the ident's number (recorded in every frame
compressed with it: the value names its dictionary). Values written before it stay as they are.
``_meta`` key ``b"bpool:" + ident`` -> the collection's static pool code (``bucket_codec.PoolCode``,
trained on the same streams' pools, written in the same transaction; none when they had no pool),
registered with the dictionary, before it.

Invariants: only the writer thread samples and trains; a dictionary is registered with the
codec only after the transaction storing it committed, so no record can reference a dictionary
that is not on disk; dictionaries of dropped collections stay registered in memory until the
process ends (an old snapshot may still read those records) but leave the disk with the drop.
"""

from __future__ import annotations

import lmdb
import zstandard

from tidemark.storage import bucket_codec
from tidemark.storage.compression import TAG_BUCKET, ValueCodec, stored_dictionary, train_dictionary
from tidemark.storage.lmdb_types import Handle, Txn

PREFIX = b"zdict:"
BUCKET_PREFIX = b"bdict:"
POOL_PREFIX = b"bpool:"
BUCKET_TRAIN_AFTER = 64  # bucket values per collection before training (more train no better: bucket_codec)
BUCKET_MAX_SAMPLE = 64 * 1024  # stream bytes (a 1,000-row TSBS bucket: ~37 KB): larger ones are not sampled
BUCKET_MAX_SAMPLING = 8  # collections sampled at once: at most 8 x 64 x 64 KiB = 32 MiB held (TSBS: 0.9 MB each)
BUCKET_DICT_BASE = bucket_codec.DICT_ID_BASE  # zstd ids below 32768 are reserved for a public registry; 0 means none
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
        # bucket dictionaries: the same life cycle, on the streams of tag-4 values
        self._bucket_by_ident: dict[str, int] = {}
        self._bucket_samples: dict[str, list[bytes]] = {}
        self._bucket_given_up: set[str] = set()
        self._bucket_ready: set[str] = set()
        self.buckets_enabled = codec.compressor != "none"  # tag 4 is written unless "none"

    def load(self, txn: Txn, meta_db: Handle) -> None:
        with txn.cursor(db=meta_db) as cur:
            for prefix in (POOL_PREFIX, PREFIX, BUCKET_PREFIX):
                if not cur.set_range(prefix):
                    continue
                for key, value in cur.iternext(keys=True, values=True):
                    if not key.startswith(prefix):
                        break
                    ident = key[len(prefix):].decode()
                    if prefix == POOL_PREFIX:
                        self._codec.register_pool_code(BUCKET_DICT_BASE + dict_id_of(ident), value)
                    elif prefix == PREFIX:
                        self._codec.register_dictionary(dict_id_of(ident), value)
                        self._by_ident[ident] = dict_id_of(ident)
                    else:
                        self._bucket_by_ident[ident] = self._codec.register_bucket_dictionary(value)

    def for_bucket(self, ident: str) -> int | None:
        """The bucket dictionary (zstd id) to compress the collection's tag-4 values with, if any."""
        return self._bucket_by_ident.get(ident)

    def sample_bucket(self, ident: str, packed: bytes) -> None:
        """Keep the stream of a tag-4 value ``packed`` (as stored) while the collection has no bucket
        dictionary yet (writer thread)."""
        if (not self.buckets_enabled or packed[0] != TAG_BUCKET or ident in self._bucket_by_ident
                or ident in self._bucket_given_up):
            return
        samples = self._bucket_samples.get(ident)
        if samples is None:
            if len(self._bucket_samples) >= BUCKET_MAX_SAMPLING:
                return
            samples = self._bucket_samples[ident] = []
        if len(samples) < BUCKET_TRAIN_AFTER:
            stream = bucket_codec.stream(packed[5:])
            if len(stream) <= BUCKET_MAX_SAMPLE:
                samples.append(stream)
                if len(samples) == BUCKET_TRAIN_AFTER:
                    self._bucket_ready.add(ident)

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
        while self._bucket_ready:
            ident = self._bucket_ready.pop()
            streams = self._bucket_samples.pop(ident, None)
            dict_id = BUCKET_DICT_BASE + dict_id_of(ident)
            if not streams or dict_id >= 1 << 31:  # ids from 2**31 are reserved by zstd
                self._bucket_given_up.add(ident)
                continue
            try:
                data = bucket_codec.train_dictionary(streams, dict_id)
            except zstandard.ZstdError:
                self._bucket_given_up.add(ident)
                continue
            pool_code = bucket_codec.train_pool_code(streams)
            with env.begin(write=True) as txn:
                txn.put(BUCKET_PREFIX + ident.encode(), stored_dictionary(data), db=meta_db)
                if pool_code is not None:
                    txn.put(POOL_PREFIX + ident.encode(), pool_code, db=meta_db)
            if pool_code is not None:
                self._codec.register_pool_code(dict_id, pool_code)
            self._bucket_by_ident[ident] = self._codec.register_bucket_dictionary(data)
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
                txn.put(PREFIX + ident.encode(), stored_dictionary(data), db=meta_db)
            self._codec.register_dictionary(dict_id_of(ident), data)
            self._by_ident[ident] = dict_id_of(ident)

    def forget(self, txn: Txn, meta_db: Handle, ident: str) -> None:
        """Inside the drop's transaction: remove the dictionary from disk."""
        txn.delete(PREFIX + ident.encode(), db=meta_db)
        txn.delete(BUCKET_PREFIX + ident.encode(), db=meta_db)
        txn.delete(POOL_PREFIX + ident.encode(), db=meta_db)
        self._samples.pop(ident, None)
        self._ready.discard(ident)
        self._bucket_samples.pop(ident, None)
        self._bucket_ready.discard(ident)

