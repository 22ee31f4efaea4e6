"""Per-record value compression with a 1-byte tag, so every stored value says how to read it.

A database written with one ``--storageCompressor`` stays readable after a restart with another:
the compressor only decides how *new* values are written. Values shorter than ``MIN_COMPRESS``
bytes, or values that do not shrink, are stored raw (tag 0).

    tag 0x00  raw bytes follow
    tag 0x01  one zstd frame follows (the frame header records the content size)
    tag 0x02  raw snappy block follows (it starts with the uncompressed length as a varint)
    tag 0x03  dictionary id (u32 BE), then one zstd frame compressed with that dictionary

    tag 0x04  original length (u32 LE), then storage/bucket_codec.py's compact form of a BSON document
              shaped like a version-1 time-series bucket (column-aware, lossless, byte-exact)
    tag 0x05  a chunked value (storage/chunks.py): written only by the compaction and resolved by
              storage/records.py into the value it stands for before unpack ever sees it

Buckets (tag 4): a document starting ``{_id: ObjectId, control: {...}`` (how every v1 bucket starts)
of at least ``BUCKET_MIN`` bytes is offered to the bucket codec, which returns None unless it
reproduces the exact bytes; zstd alone packs a 360-measurement TSBS bucket to ~28 B per measurement,
the codec to ~5.2, ~4.2 with the collection's bucket dictionary. Applies to any collection (the shape decides, not the namespace): storage needs
no flag from the server, and a regular collection holding such documents still round-trips exactly.

Dictionaries (tag 3): small records compress poorly on their own (a 470-byte TSBS row only
shrinks to ~314 bytes) but well against a dictionary trained on their collection (~70 bytes).
The engine trains one per collection from its first records and registers it here; a dictionary
is registered only after it is durably stored, so every tag-3 value on disk can be read.

Bucket dictionaries (tag 4): a collection's bucket streams share most of their bytes (the head's
field names and tags, column names, the codec's structure); a dictionary trained on its first
buckets' streams takes a TSBS bucket from ~1,860 to ~1,510 bytes. A tag-4 value records the id of
the dictionary it needs (0: none; its zstd frame's header before stream version 5, the codec's own
header since), so the tag and its layout are unchanged and values written before the dictionary
stay readable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import snappy
import zstandard

from tidemark.storage import bucket_codec

TAG_RAW = 0x00
TAG_ZSTD = 0x01
TAG_SNAPPY = 0x02
TAG_ZSTD_DICT = 0x03
TAG_BUCKET = 0x04
TAG_CHUNKED = 0x05  # storage/chunks.py

BUCKET_MIN = 1024
_BUCKET_HEAD = b"\x07_id\x00"  # bytes 4..9 of a v1 bucket; bytes 21..30 are _BUCKET_CONTROL
_BUCKET_CONTROL = b"\x03control\x00"

COMPRESSORS = ("none", "snappy", "zstd")
MIN_COMPRESS = 64
# Level 1 measured best here: a 142 KB v1 bucket of 1000 TSBS rows packs to 22.4 KB at level 1
# vs 26.1 KB at 3 (and 0.5 vs 0.9 ms); small records pack the same at both.
ZSTD_LEVEL = 1
ZSTD_FAST_LEVEL = 1  # short-lived values (journal records): speed over ratio
DICT_LEVEL = 1  # with a dictionary, level 1 compresses small records as well as 3, faster
DICT_SIZE = 16 * 1024
# A trained dictionary is stored as one zstd frame (level 19): the 16 KiB bucket dictionary of the TSBS
# day packs to ~2 KB, an inline _meta node instead of 5 overflow pages. A stored zstd dictionary starts
# with its own magic, never with a frame's, so dictionaries stored raw before still read as they are.
_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
_DICT_STORE_LEVEL = 19


def train_dictionary(samples: list[bytes]) -> bytes:
    """A zstd dictionary for values like ``samples``; raises zstandard.ZstdError if the
    samples are too few or too uniform to train on."""
    buffers: list[bytes | bytearray | memoryview] = list(samples)  # the list type zstandard takes
    return zstandard.train_dictionary(DICT_SIZE, buffers).as_bytes()


class _ZstdContexts(threading.local):
    """zstandard's (de)compressor objects are not thread-safe: one set per thread, made on the
    thread's first use."""

    def __init__(self) -> None:
        self.dict_compressors: dict[int, zstandard.ZstdCompressor] = {}
        self.dict_decompressors: dict[int, zstandard.ZstdDecompressor] = {}
        self.bucket_compressors: dict[int, bucket_codec.Compressor] = {}
        self.bucket_decompressors: dict[tuple[int, int], bucket_codec.Decompressor] = {}
        self.zc = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=False)
        self.zc_fast = zstandard.ZstdCompressor(level=ZSTD_FAST_LEVEL, write_checksum=False)
        self.zd = zstandard.ZstdDecompressor()


class ValueCodec:
    """Packs values with the configured compressor; unpacks values of any tag.
    Thread-safe: zstd contexts are per thread (they are not thread-safe objects)."""

    def __init__(self, compressor: str = "zstd"):
        if compressor not in COMPRESSORS:
            raise ValueError(f"unknown storage compressor {compressor!r}; expected one of {COMPRESSORS}")
        self.compressor = compressor
        self._dicts: dict[int, zstandard.ZstdCompressionDict] = {}
        self._bucket_dicts: dict[int, zstandard.ZstdCompressionDict] = {}  # by zstd dictionary id
        self._pool_codes: dict[int, bucket_codec.PoolCode] = {}  # by the bucket dictionary's zstd id
        self._local = _ZstdContexts()

    # --- dictionaries ------------------------------------------------------------------------
    def register_dictionary(self, dict_id: int, data: bytes) -> None:
        """``data``: the dictionary as stored (``stored_dictionary``) or as trained."""
        self._dicts[dict_id] = zstandard.ZstdCompressionDict(dictionary_of_stored(data))

    def has_dictionary(self, dict_id: int) -> bool:
        return dict_id in self._dicts

    def _dict_compressor(self, dict_id: int) -> zstandard.ZstdCompressor:
        compressors = self._local.dict_compressors
        c = compressors.get(dict_id)
        if c is None:
            c = compressors[dict_id] = zstandard.ZstdCompressor(
                level=DICT_LEVEL, dict_data=self._dicts[dict_id], write_checksum=False,
                write_dict_id=False)
        return c

    def _dict_decompressor(self, dict_id: int) -> zstandard.ZstdDecompressor:
        decompressors = self._local.dict_decompressors
        d = decompressors.get(dict_id)
        if d is None:
            if dict_id not in self._dicts:
                raise ValueError(f"stored value needs compression dictionary {dict_id}, which is missing")
            d = decompressors[dict_id] = zstandard.ZstdDecompressor(dict_data=self._dicts[dict_id])
        return d

    def register_bucket_dictionary(self, data: bytes) -> int:
        """Register a bucket-stream dictionary (as stored or as trained); returns its zstd id."""
        zdict = zstandard.ZstdCompressionDict(dictionary_of_stored(data))
        dict_id = int(zdict.dict_id())
        self._bucket_dicts[dict_id] = zdict
        return dict_id

    def register_pool_code(self, dict_id: int, stored: bytes) -> None:
        """Register the static pool code (``bucket_codec.PoolCode``, as stored) of the collection whose
        bucket dictionary has the zstd id ``dict_id``; register it before the dictionary is used."""
        self._pool_codes[dict_id] = bucket_codec.PoolCode(stored)

    def bucket_decompressor(self, packed: bytes) -> bucket_codec.Decompressor | None:
        """The decompressor of a tag-4 value's frame (the bytes after the 5-byte header): None when it
        names no dictionary (the codec's default serves), else one of its frame's format
        (``bucket_codec.frame_format``) holding that dictionary."""
        dict_id = bucket_codec.frame_dictionary(packed)
        if not dict_id:
            return None
        key = (dict_id, packed[0])
        decompressors = self._local.bucket_decompressors
        d = decompressors.get(key)
        if d is None:
            zdict = self._bucket_dicts.get(dict_id)
            if zdict is None:
                raise ValueError(f"stored bucket needs compression dictionary {dict_id}, which is missing")
            d = decompressors[key] = bucket_codec.make_decompressor(
                zdict, bucket_codec.frame_format(packed), self._pool_codes.get(dict_id))
        return d

    def _bucket_compressor(self, dict_id: int | None) -> bucket_codec.Compressor | None:
        if dict_id is None or dict_id not in self._bucket_dicts:
            return None
        compressors = self._local.bucket_compressors
        c = compressors.get(dict_id)
        if c is None:
            c = compressors[dict_id] = bucket_codec.make_compressor(self._bucket_dicts[dict_id],
                                                                  self._pool_codes.get(dict_id))
        return c

    # --- values ------------------------------------------------------------------------------
    def pack(self, data: bytes, dict_id: int | None = None, fast: bool = False,
             bucket_form: Callable[[], bytes | None] | None = None, bucket_dict: int | None = None) -> bytes:
        """Tagged value; ``dict_id`` (a registered dictionary) is used when compressing with zstd;
        ``fast`` picks a faster zstd level for short-lived values; ``bucket_form``: a function giving
        ``bucket_codec.encode(data)`` computed another way (e.g. from a bucket's columns, verified by
        the caller), used instead of encoding ``data``; ``bucket_dict``: the registered bucket
        dictionary (zstd id) a tag-4 value is compressed with."""
        if (self.compressor != "none" and not fast and len(data) >= BUCKET_MIN
                and data[4:9] == _BUCKET_HEAD and data[21:30] == _BUCKET_CONTROL):
            with bucket_codec.compressing_with(self._bucket_compressor(bucket_dict)):
                packed = bucket_form() if bucket_form is not None else bucket_codec.encode(data)
            if packed is not None and len(packed) + 5 < len(data):
                return bytes((TAG_BUCKET,)) + len(data).to_bytes(4, "little") + packed
        if self.compressor != "none" and len(data) >= MIN_COMPRESS:
            if self.compressor == "zstd":
                if dict_id is not None:
                    packed = self._dict_compressor(dict_id).compress(data)
                    if len(packed) + 5 < len(data):
                        return bytes((TAG_ZSTD_DICT,)) + dict_id.to_bytes(4, "big") + packed
                    return b"\x00" + data
                packed = (self._local.zc_fast if fast else self._local.zc).compress(data)
                tag = TAG_ZSTD
            else:
                packed = snappy.compress(data)
                tag = TAG_SNAPPY
            if len(packed) + 1 < len(data):
                return bytes((tag,)) + packed
        return b"\x00" + data

    def unpack(self, stored: bytes) -> bytes:
        tag = stored[0]
        if tag == TAG_RAW:
            return stored[1:]
        if tag == TAG_ZSTD_DICT:
            return self._dict_decompressor(int.from_bytes(stored[1:5], "big")).decompress(stored[5:])
        if tag == TAG_ZSTD:
            return self._local.zd.decompress(stored[1:])
        if tag == TAG_BUCKET:
            packed = stored[5:]
            return bucket_codec.decode(packed, self.bucket_decompressor(packed))
        if tag == TAG_SNAPPY:
            raw: bytes = snappy.uncompress(stored[1:])  # python-snappy is untyped
            return raw
        if tag == TAG_CHUNKED:
            raise ValueError("a chunked value (tag 5) must be read through tidemark.storage.records")
        raise ValueError(f"stored value has an unknown compression tag {tag:#x}")

    def unpacked_size(self, stored: bytes) -> int:
        """Length of the original value, read from the header without decompressing."""
        tag = stored[0]
        if tag == TAG_RAW:
            return len(stored) - 1
        if tag == TAG_BUCKET:
            return int.from_bytes(stored[1:5], "little")
        if tag in (TAG_ZSTD, TAG_ZSTD_DICT):
            frame = stored[1:] if tag == TAG_ZSTD else stored[5:]
            size = zstandard.frame_content_size(frame)
            if size >= 0:
                return size
            return len(self.unpack(stored))
        if tag == TAG_SNAPPY:
            size = shift = 0
            for byte in stored[1:11]:
                size |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    return size
        raise ValueError(f"stored value has an unknown compression tag {tag:#x}")


def stored_dictionary(data: bytes) -> bytes:
    """The form a trained zstd dictionary is stored in (``_meta`` ``zdict:``/``bdict:``): one zstd
    frame when that is shorter, else the dictionary itself."""
    packed = zstandard.ZstdCompressor(level=_DICT_STORE_LEVEL).compress(data)
    return packed if len(packed) < len(data) or data.startswith(_FRAME_MAGIC) else data


def dictionary_of_stored(stored: bytes) -> bytes:
    """The dictionary of its stored form (``stored_dictionary``; a raw dictionary is itself)."""
    if bytes(stored[:4]) == _FRAME_MAGIC:
        return zstandard.ZstdDecompressor().decompress(bytes(stored))
    return bytes(stored)
