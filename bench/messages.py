"""Pre-encoded insert messages: the bytes the replay loader sends, built once and cached on disk.

Every TSBS document has the same layout, so it is packed with one ``struct`` call per row plus the host's
pre-encoded ``tags`` sub-document, which is byte-for-byte what ``bson.encode`` produces for the equivalent
dict (a test checks this). A batch becomes one OP_MSG: header, flagBits 0, a kind-0 body
``{insert: "cpu", ordered: false, $db: "benchmark"}`` and a kind-1 ``documents`` sequence.

The cache file is the concatenation of the frames; each frame starts with its own int32 length, so a
reader walks it without an index. Files are written to a temporary name and renamed, so a half-written
cache is never reused.
"""

from __future__ import annotations

import datetime as dt
import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import bson

from bench.generator import FIELDS, INTERVAL_MS, START_MS, Dataset

OP_MSG = 2013
DB = "benchmark"
COLLECTION = "cpu"
BATCH = 1000
CACHE_FORMAT = 1  # bump when the bytes written change

_HEADER = struct.Struct("<iiii")
_INT32 = struct.Struct("<i")


def _cstring(s: str) -> bytes:
    return s.encode() + b"\x00"


_MEASUREMENT = b"\x02" + _cstring("measurement") + _INT32.pack(4) + b"cpu\x00"
_TIME = b"\x09" + _cstring("time")
_FIELD_NAMES = [b"\x01" + _cstring(f) for f in FIELDS]
# int32 length | measurement | time: int64 | 10 x (name, double) | tags element | 0x00
_FIXED = struct.Struct(
    "<i" + f"{len(_MEASUREMENT)}s" + f"{len(_TIME)}sq" + "".join(f"{len(n)}sd" for n in _FIELD_NAMES)
)


class DocumentEncoder:
    """Packs rows of a Dataset into BSON documents equal to ``bson.encode(document_dict(...))``."""

    def __init__(self, dataset: Dataset):
        self.dataset = dataset
        self._tags = [b"\x03" + _cstring("tags") + bson.encode(t) for t in dataset.tags]
        self._lengths = [_FIXED.size + len(t) + 1 for t in self._tags]

    def encode_tick(self, tick: int, hosts: range) -> list[bytes]:
        block = self.dataset.values[tick].astype(float).tolist()
        ms = START_MS + tick * INTERVAL_MS
        pack, tags, lengths, names = _FIXED.pack, self._tags, self._lengths, _FIELD_NAMES
        out = []
        for h in hosts:
            v = block[h]
            fixed = pack(
                lengths[h], _MEASUREMENT, _TIME, ms,
                names[0], v[0], names[1], v[1], names[2], v[2], names[3], v[3], names[4], v[4],
                names[5], v[5], names[6], v[6], names[7], v[7], names[8], v[8], names[9], v[9],
            )  # fmt: skip
            out.append(fixed + tags[h] + b"\x00")
        return out

    def iter_batches(self, batch: int = BATCH) -> Iterator[list[bytes]]:
        """Lists of ``batch`` encoded documents (the last may be shorter), in load order."""
        scale = self.dataset.scale
        pending: list[bytes] = []
        for tick in range(self.dataset.ticks):
            pos = 0
            while pos < scale:
                take = min(batch - len(pending), scale - pos)
                pending.extend(self.encode_tick(tick, range(pos, pos + take)))
                pos += take
                if len(pending) == batch:
                    yield pending
                    pending = []
        if pending:
            yield pending


def document_dict(dataset: Dataset, tick: int, host: int) -> dict:
    """The same document as a dict (what a pymongo user would insert)."""
    doc = {"measurement": "cpu", "time": dt.datetime(2016, 1, 1) + dt.timedelta(seconds=10 * tick)}
    for name, v in zip(FIELDS, dataset.values[tick, host].tolist(), strict=True):
        doc[name] = float(v)
    doc["tags"] = dict(dataset.tags[host])
    return doc


def insert_message(documents: list[bytes], request_id: int, *, collection: str = COLLECTION) -> bytes:
    """One OP_MSG insert frame carrying ``documents`` as a kind-1 sequence."""
    body = bson.encode({"insert": collection, "ordered": False, "$db": DB})
    seq_payload = b"documents\x00" + b"".join(documents)
    sections = b"\x00" + body + b"\x01" + _INT32.pack(4 + len(seq_payload)) + seq_payload
    length = _HEADER.size + 4 + len(sections)
    return _HEADER.pack(length, request_id, 0, OP_MSG) + b"\x00\x00\x00\x00" + sections


def cache_path(cache_dir: Path, dataset: Dataset, batch: int = BATCH) -> Path:
    name = f"cpu-v{CACHE_FORMAT}-s{dataset.scale}-d{dataset.duration_s}-seed{dataset.seed}-b{batch}.opmsg"
    return cache_dir / name


def build_cache(dataset: Dataset, cache_dir: Path, batch: int = BATCH, progress=None) -> Path:
    """Write (once) the file of insert frames for ``dataset``; returns its path."""
    path = cache_path(cache_dir, dataset, batch)
    if path.exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    encoder = DocumentEncoder(dataset)
    with open(tmp, "wb") as f:
        for request_id, docs in enumerate(encoder.iter_batches(batch), start=1):
            f.write(insert_message(docs, request_id))
            if progress is not None:
                progress(len(docs))
    os.replace(tmp, path)
    return path


def frame_offsets(buf) -> list[tuple[int, int]]:
    """(offset, length) of each frame in a buffer of concatenated messages."""
    out, pos, end = [], 0, len(buf)
    while pos < end:
        (length,) = _INT32.unpack_from(buf, pos)
        if length < _HEADER.size or pos + length > end:
            raise ValueError(f"corrupt message file at offset {pos}")
        out.append((pos, length))
        pos += length
    return out


def open_frames(path: Path) -> tuple[mmap.mmap, list[tuple[int, int]]]:
    """Map a cache file read-only; returns the map and its frame boundaries."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return mm, frame_offsets(mm)


def op_msg_sections(frame) -> tuple[bytes | None, dict[str, list[memoryview]]]:
    """Split one OP_MSG frame into its kind-0 body (raw BSON) and its kind-1 sequences.

    Kind-1 documents are found by walking int32 lengths, without decoding them.
    """
    view = memoryview(frame)
    (flags,) = _INT32.unpack_from(view, _HEADER.size)
    pos, end = _HEADER.size + 4, len(view) - (4 if flags & 1 else 0)
    body: bytes | None = None
    sequences: dict[str, list[memoryview]] = {}
    while pos < end:
        kind = view[pos]
        pos += 1
        if kind == 0:
            (n,) = _INT32.unpack_from(view, pos)
            body = bytes(view[pos : pos + n])
            pos += n
        elif kind == 1:
            (size,) = _INT32.unpack_from(view, pos)
            stop = pos + size
            name_end = bytes(view[pos + 4 : min(stop, pos + 260)]).index(b"\x00") + pos + 4
            docs = sequences.setdefault(bytes(view[pos + 4 : name_end]).decode(), [])
            pos = name_end + 1
            while pos < stop:
                (n,) = _INT32.unpack_from(view, pos)
                docs.append(view[pos : pos + n])
                pos += n
        else:
            raise ValueError(f"unknown OP_MSG section kind {kind}")
    return body, sequences
