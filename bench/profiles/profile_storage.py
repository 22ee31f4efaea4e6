"""Where the bytes on disk go after a clean shutdown, and what a column-aware bucket codec would give.

    .venv/bin/python -m bench.profiles.profile_storage DBPATH [--rows 864000] [--sample 200]

DBPATH: a Tidemark data directory after a clean shutdown (e.g. from
`profile_ingest --frames 0 --keep DIR`). The server must not be running. Reads the LMDB file directly
(read-only): pages per sub-database (records, indexes, journal, meta, catalog), free pages, value sizes
and compression tags; then re-encodes a sample of real v1 bucket documents with prototype codecs:

- zstd levels 1/3/19 of the v1 BSON (what the engine does today is level 1 without a dictionary);
- "columnar": time as delta-of-delta zigzag varints, each double column as integer deltas (TSBS values are
  integral) zigzag varints, then zstd-1 over the concatenated column streams; meta as a 4-byte id into a
  per-collection meta dictionary; control min/max kept as raw doubles (the pruning summary);
- "gorilla": Facebook Gorilla bit cost (XOR of consecutive doubles, leading/trailing zeros), computed, not
  packed, as a general-purpose double codec that does not rely on integral values.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import Counter, defaultdict

import bson
import lmdb
import numpy as np
import zstandard
from bson.objectid import ObjectId

from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.storage.compression import ValueCodec
from tidemark.storage.dictionaries import PREFIX as DICT_PREFIX
from tidemark.storage.dictionaries import dict_id_of

PAGE = 4096


def zigzag(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.int64)
    return ((a << 1) ^ (a >> 63)).astype(np.uint64)


def varint_bytes(values: np.ndarray) -> bytes:
    out = bytearray()
    for v in values.tolist():
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def gorilla_bits(values: np.ndarray) -> int:
    """Bits Gorilla's XOR scheme needs for a double column (first value 64 bits)."""
    bits = np.asarray(values, dtype=np.float64).view(np.uint64)
    total = 64
    prev_lead, prev_trail = -1, -1
    for a, b in zip(bits[:-1].tolist(), bits[1:].tolist(), strict=True):
        x = a ^ b
        if x == 0:
            total += 1
            continue
        lead = 64 - x.bit_length()
        trail = (x & -x).bit_length() - 1
        if prev_lead >= 0 and lead >= prev_lead and trail >= prev_trail:
            total += 2 + (64 - prev_lead - prev_trail)
        else:
            total += 2 + 5 + 6 + (64 - lead - trail)
            prev_lead, prev_trail = lead, trail
    return total


def _oid_stream(ids: list) -> bytes:
    """ObjectIds as delta-coded (timestamp, counter) varints plus the 5 process bytes when they change."""
    ts = np.array([int.from_bytes(i.binary[:4], "big") for i in ids], dtype=np.int64)
    counter = np.array([int.from_bytes(i.binary[9:], "big") for i in ids], dtype=np.int64)
    procs = {i.binary[4:9] for i in ids}
    return (varint_bytes(zigzag(np.diff(ts, prepend=0))) + varint_bytes(zigzag(np.diff(counter, prepend=0)))
            + b"".join(sorted(procs)))


def column_stream(field: str, values: list) -> tuple[str, bytes]:
    """(kind, bytes) of one data column in the prototype codec."""
    first = values[0]
    if all(isinstance(v, dt.datetime) for v in values):
        ms = np.array([int(v.replace(tzinfo=dt.UTC).timestamp() * 1000) for v in values], dtype=np.int64)
        dod = np.diff(np.diff(ms, prepend=ms[0]), prepend=0)
        return "time (delta-of-delta)", varint_bytes(zigzag(np.concatenate(([ms[0]], dod[1:]))))
    if all(isinstance(v, ObjectId) for v in values):
        return "_id (ObjectId deltas)", _oid_stream(values)
    if all(isinstance(v, str) for v in values):
        if all(v == first for v in values):
            return "constant strings (RLE)", first.encode() + varint_bytes(np.array([len(values)], dtype=np.uint64))
        table = {v: i for i, v in enumerate(dict.fromkeys(values))}
        return "strings (dictionary)", b"\0".join(k.encode() for k in table) + bytes(table[v] & 0xFF for v in values)
    if all(isinstance(v, float) for v in values):
        arr = np.array(values, dtype=np.float64)
        if np.all(arr == np.round(arr)) and np.all(np.abs(arr) < 2**53):
            return "doubles (integral: int deltas)", varint_bytes(zigzag(np.diff(arr.astype(np.int64), prepend=0)))
        return "doubles (raw)", arr.tobytes()
    return "other (BSON)", bson.encode({"v": values})


def columnar(doc: dict, meta_ids: dict) -> tuple[int, dict[str, int]]:
    """Bytes of the prototype column-aware encoding of one v1 bucket, and per column kind."""
    data = doc["data"]
    key = bson.encode({"m": doc.get("meta")})
    meta_ids.setdefault(key, len(meta_ids))
    header = 12 + 4 + 4 + 2 * 8 * len(data)  # bucket _id, meta id, count, control min/max per column
    sizes: dict[str, int] = defaultdict(int)
    sizes["header: _id, meta id, count, control"] = header
    zc = zstandard.ZstdCompressor(level=1)
    total = header
    for field, column in data.items():
        kind, raw = column_stream(field, list(column.values()))
        packed = min(len(zc.compress(raw)), len(raw)) + 2  # + a column tag/length
        sizes[kind] += packed
        total += packed
    return total, sizes


def v1_breakdown(raw_doc: dict) -> dict[str, int]:
    """BSON bytes of the v1 bucket by top-level part and data column."""
    out = {k: len(bson.encode({k: v})) - 5 for k, v in raw_doc.items() if k != "data"}
    zc = zstandard.ZstdCompressor(level=1)
    for field, column in raw_doc["data"].items():
        raw = bson.encode({field: column})
        out[f"data.{field}"] = len(raw) - 5
        out[f"zstd-1 alone: data.{field}"] = len(zc.compress(raw))
    return out


def analyse(dbpath: str, rows: int, sample: int) -> None:
    env = lmdb.open(dbpath, readonly=True, lock=False, subdir=True, max_dbs=8192)
    info = env.info()
    main_stat = env.stat()
    file_pages = info["last_pgno"] + 1
    import os

    disk = sum(os.lstat(os.path.join(dbpath, f)).st_blocks * 512 for f in os.listdir(dbpath))
    print(f"disk {disk:,} B = {disk / rows:.2f} B/row; LMDB pages used by the file {file_pages:,} "
          f"({file_pages * PAGE / rows:.2f} B/row)")
    codec = bucket_dictionaries(env, ValueCodec("zstd"))
    dbs: list[tuple[bytes, dict, int, Counter]] = []
    used_pages = main_stat["branch_pages"] + main_stat["leaf_pages"] + main_stat["overflow_pages"]
    with env.begin() as txn:
        names = [k for k, _ in txn.cursor()]
    for name in names:
        try:
            db = env.open_db(name, create=False)
        except lmdb.Error:
            continue
        with env.begin() as txn:
            st = txn.stat(db)
            value_bytes = 0
            tags: Counter = Counter()
            for k, v in txn.cursor(db=db):
                value_bytes += len(v)
                if name.startswith(b"r:") or name == b"_journal":
                    tags[v[0]] += 1
                if name == b"_meta" and k.startswith(DICT_PREFIX):
                    codec.register_dictionary(dict_id_of(k[len(DICT_PREFIX):].decode()), bytes(v))
        pages = st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]
        used_pages += pages
        dbs.append((name, st, value_bytes, tags))
    print(f"free/unused pages inside the file: {file_pages - used_pages:,} "
          f"({(file_pages - used_pages) * PAGE / rows:.2f} B/row)\n")
    print(f"{'sub-db':12s} {'entries':>9s} {'pages':>8s} {'B/row':>7s} {'value B':>12s}  tags")
    for name, st, value_bytes, tags in sorted(dbs, key=lambda d: -(d[1]['leaf_pages'] + d[1]['overflow_pages'])):
        pages = st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]
        print(f"{name.decode(errors='replace'):12s} {st['entries']:9,d} {pages:8,d} {pages * PAGE / rows:7.2f} "
              f"{value_bytes:12,d}  {dict(tags) if tags else ''}")

    # the bucket record store: the r: db with the largest values
    records = max((d for d in dbs if d[0].startswith(b"r:")), key=lambda d: d[2])
    db = env.open_db(records[0], create=False)
    totals: dict[str, float] = defaultdict(float)
    parts_total: dict[str, float] = defaultdict(float)
    v1_parts: dict[str, float] = defaultdict(float)
    measurements = 0
    meta_ids: dict = {}
    n = 0
    with env.begin() as txn:
        entries = txn.stat(db)["entries"]
        step = max(1, entries // sample)
        for i, (_, stored) in enumerate(txn.cursor(db=db)):
            if i % step:
                continue
            raw = codec.unpack(bytes(stored))
            doc = bson.decode(raw, CODEC_OPTIONS)
            if "data" not in doc or "control" not in doc:
                continue
            count = len(doc["data"]["time"])
            measurements += count
            n += 1
            totals["stored (as on disk)"] += len(stored)
            totals["v1 BSON"] += len(raw)
            for level in (1, 3, 19):
                totals[f"v1 BSON zstd-{level}"] += len(zstandard.ZstdCompressor(level=level).compress(raw))
            for k, v in v1_breakdown(doc).items():
                v1_parts[k] += v
            size, parts = columnar(doc, meta_ids)
            totals["columnar prototype"] += size
            for k, v in parts.items():
                parts_total[k] += v
            bits = sum(gorilla_bits(np.array(list(c.values()), dtype=np.float64))
                       for c in doc["data"].values() if all(isinstance(v, float) for v in c.values()))
            totals["gorilla doubles only (values part)"] += bits / 8
    print(f"\nbucket sample: {n} buckets, {measurements / n:.0f} measurements each "
          f"({entries} buckets in the store)")
    print(f"{'encoding':38s} {'B/bucket':>9s} {'B/row':>7s} {'ratio vs BSON':>13s}")
    for k, v in totals.items():
        print(f"{k:38s} {v / n:9.0f} {v / measurements:7.2f} {totals['v1 BSON'] / v:13.1f}x")
    print("v1 BSON parts (B/row): " + ", ".join(f"{k} {v / measurements:.2f}" for k, v in v1_parts.items()
                                                if not k.startswith("zstd")))
    print("v1 columns compressed one by one with zstd-1 (B/row): " + ", ".join(
        f"{k[14:]} {v / measurements:.2f}" for k, v in v1_parts.items() if k.startswith("zstd")))
    print("columnar parts (B/row): " + ", ".join(f"{k} {v / measurements:.2f}" for k, v in parts_total.items()))
    tag4_decode_costs(env, db, codec)
    print(f"distinct meta values in the sample: {len(meta_ids)} (a per-collection meta table: "
          f"{sum(len(k) for k in meta_ids)} B once)")


def bucket_dictionaries(env: lmdb.Environment, codec: ValueCodec) -> ValueCodec:
    """``codec`` with the collections' bucket dictionaries registered (tag-4 frames may name one)."""
    from tidemark.storage.dictionaries import BUCKET_PREFIX

    with env.begin() as txn:
        meta = env.open_db(b"_meta", txn=txn, create=False)
        for key, value in txn.cursor(db=meta):
            if key.startswith(BUCKET_PREFIX):
                codec.register_bucket_dictionary(value)
    return codec


def tag4_decode_costs(env: lmdb.Environment, db, codec: ValueCodec) -> None:
    """CPU per tag-4 bucket: zstd, rebuilding v1 BSON, and slicing the raw prefix (_id/control/meta) only.

    Uses the codec's private helpers (layout: u8 version | varint len(prefix) | prefix | ...): a
    measurement of what a prefix-only / column-selective decoder would save, not an API."""
    import time

    from tidemark.storage.bucket_codec import _get_varint, _unpool, decode_raw, decompress

    with env.begin() as txn:
        packed = [bytes(v)[5:] for _, v in txn.cursor(db=db) if v[0] == 0x04]
    if not packed:
        return
    dz = [codec.bucket_decompressor(p) for p in packed]
    t0 = time.process_time()
    raws = [_unpool(decompress(p, d)) for d, p in zip(dz, packed, strict=True)]
    t1 = time.process_time()
    for r in raws:
        decode_raw(r)
    t2 = time.process_time()
    prefixes = []
    for r in raws:
        n, pos = _get_varint(r, 1)
        body = r[pos + 4:pos + n]  # the elements before `data`: full length first, `data`'s header last
        if body.endswith(b"\x03data\x00"):
            body = body[:-6]
        prefixes.append(bson.decode((len(body) + 5).to_bytes(4, "little") + body + b"\0", CODEC_OPTIONS))
    t3 = time.process_time()
    k = len(packed)
    print(f"\ntag-4 decode, {k} buckets (CPU us/bucket): zstd {1e6 * (t1 - t0) / k:.0f}, rebuild v1 BSON "
          f"{1e6 * (t2 - t1) / k:.0f}, raw prefix (_id/control/meta) sliced + bson-decoded {1e6 * (t3 - t2) / k:.0f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dbpath")
    p.add_argument("--rows", type=int, default=864_000)
    p.add_argument("--sample", type=int, default=200)
    args = p.parse_args(argv)
    analyse(args.dbpath, args.rows, args.sample)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
