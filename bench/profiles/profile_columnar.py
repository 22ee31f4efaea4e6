"""Throwaway prototype: column-at-a-time evaluation of TSBS queries over real Tidemark bucket documents.

    .venv/bin/python -m bench.profiles.profile_columnar DBPATH [--scale 100] [--runs 5]

DBPATH: a Tidemark data directory (server stopped) holding `benchmark.cpu`. The buckets are read straight
from the LMDB file. For each query the same answer is computed four ways and checked against the bench's
naive checker, and each stage is timed (median of --runs):

1. cold, today's format: LMDB read of the buckets whose control time range meets the window, zstd
   decompression, decode of only the needed `data` columns (RawBSONDocument -> bson.decode of that column),
   numpy arrays per bucket, vectorized window mask and per-bucket `bincount` grouping by
   floor(time / unit), merged per (time bucket, meta);
2. warm, a decoded-column cache: the per-bucket numpy arrays are kept (keyed by bucket _id) and only the
   mask + grouping run;
3. cold, a column codec: the needed columns stored as zstd(int16 deltas) / zstd(int64 time deltas), so the
   decode is `zstd -> np.frombuffer -> cumsum` (the encoding is done once, outside the timing);
4. one segment: every bucket of the collection concatenated into flat arrays with a host index (what a
   cache of closed buckets could hold): a single vectorized pass.

It is a measurement instrument, not server code: nothing here handles live buckets, other types, or
arbitrary pipelines.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import bson
import lmdb
import numpy as np
import zstandard
from bson.raw_bson import RawBSONDocument

from bench.generator import generate, parse_duration
from bench.naive import NaiveChecker
from bench.queries import QUERY_TYPES, UNIT_MS, compare, make_params
from tidemark.protocol.codec import CODEC_OPTIONS
from tidemark.storage.compression import ValueCodec

HOUR_MS = 3_600_000


def epoch_ms(values) -> np.ndarray:
    """BSON dates decoded as naive-UTC datetimes -> int64 epoch ms."""
    return (np.array(values, dtype="datetime64[ms]")).astype(np.int64)


class Buckets:
    """The raw bucket records of the largest record store, with their time range and hostname."""

    def __init__(self, dbpath: str):
        self.env = lmdb.open(dbpath, readonly=True, lock=False, subdir=True, max_dbs=8192)
        with self.env.begin() as txn:
            names = [k for k, _ in txn.cursor() if k.startswith(b"r:")]
        stores = []
        for name in names:
            db = self.env.open_db(name, create=False)
            with self.env.begin() as txn:
                stores.append((txn.stat(db)["entries"], db))
        self.db = max(stores, key=lambda s: s[0])[1]
        self.codec = ValueCodec("zstd")
        self.index: list[tuple[bytes, int, int, str]] = []  # (rid, min ms, max ms, hostname)
        with self.env.begin() as txn:
            for rid, stored in txn.cursor(db=self.db):
                head = RawBSONDocument(self.codec.unpack(bytes(stored)))
                control = bson.decode(head["control"].raw, CODEC_OPTIONS)
                lo = int(epoch_ms([control["min"]["time"]])[0])
                hi = int(epoch_ms([control["max"]["time"]])[0])
                self.index.append((bytes(rid), lo, hi, bson.decode(head["meta"].raw)["hostname"]))

    def select(self, start_ms: int, end_ms: int, hosts: tuple[str, ...]) -> list[tuple[bytes, str]]:
        """Buckets whose [min, max] time meets [start, end) (the summary prune the server also does)."""
        wanted = set(hosts)
        return [(rid, host) for rid, lo, hi, host in self.index
                if hi >= start_ms and lo < end_ms and (not wanted or host in wanted)]


def decode_columns(raw: bytes, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    data = RawBSONDocument(raw)["data"]
    out = {}
    for field in fields:
        values = list(bson.decode(data[field].raw, CODEC_OPTIONS).values())
        out[field] = epoch_ms(values) if field == "time" else np.array(values, dtype=np.float64)
    return out


_KEYLEN = np.array([len(str(i)) for i in range(100_000)], dtype=np.int64)
_ELEM_START = 4 + np.concatenate(([0], np.cumsum(1 + _KEYLEN + 1 + 8)))  # element i starts here (dense 8-byte)


def bson_column_numpy(raw: bytes) -> np.ndarray:
    """A v1 data column ({"0": v, "1": v, ...}, all doubles or all dates) parsed with numpy, no Python objects:
    keys are "0".."n-1", so element offsets are known from n alone."""
    n = int(np.searchsorted(_ELEM_START, len(raw) - 1))
    if _ELEM_START[n] != len(raw) - 1:
        raise ValueError("not a dense 8-byte column")
    buf = np.frombuffer(raw, dtype=np.uint8)
    starts = _ELEM_START[:n]
    kind = buf[starts]
    if not (np.all(kind == kind[0]) and kind[0] in (0x01, 0x09)):
        raise ValueError("mixed or non-8-byte types")
    pos = starts + 2 + _KEYLEN[:n]
    values = buf[pos[:, None] + np.arange(8)].copy().view("<i8" if kind[0] == 0x09 else "<f8").ravel()
    return values


def decode_columns_numpy(raw: bytes, fields: tuple[str, ...]) -> dict[str, np.ndarray]:
    data = RawBSONDocument(raw)["data"]
    return {field: bson_column_numpy(data[field].raw) for field in fields}


def group_bucket(cols: dict, start_ms: int, end_ms: int, unit_ms: int, metric: str, how: str,
                 host: str, acc: dict) -> None:
    t = cols["time"]
    mask = (t >= start_ms) & (t < end_ms)
    if not mask.any():
        return
    t = t[mask]
    v = cols[metric][mask]
    keys = t // unit_ms
    base = keys[0]
    slot = keys - base
    n = int(slot[-1]) + 1 if len(slot) else 0
    if how == "avg":
        sums = np.bincount(slot, weights=v, minlength=n)
        counts = np.bincount(slot, minlength=n)
        for i in np.nonzero(counts)[0].tolist():
            a = acc[((base + i) * unit_ms, host)]
            a[0] += sums[i]
            a[1] += counts[i]
    else:
        out = np.full(n, -np.inf)
        np.maximum.at(out, slot, v)
        for i in np.nonzero(out > -np.inf)[0].tolist():
            key = ((base + i) * unit_ms, None)
            acc[key] = max(acc.get(key, -np.inf), out[i])


def finish(query: str, acc: dict) -> list[tuple]:
    if query.startswith("double-groupby"):
        return [(t, h, (a[0] / a[1],)) for (t, h), a in sorted(acc.items())]
    rows = [(t, (float(m),)) for (t, _), m in sorted(acc.items())]
    return rows[::-1][:5] if query == "groupby-orderby-limit" else rows


def spec(query: str) -> tuple[str, str, int]:
    q = QUERY_TYPES[query]
    how = "avg" if query.startswith("double-groupby") else "max"
    return q.metrics[0], how, UNIT_MS[q.unit] if q.unit in UNIT_MS else HOUR_MS


def run_cold(b: Buckets, query: str, p, timings: dict) -> list[tuple]:
    metric, how, unit_ms = spec(query)
    acc = defaultdict(lambda: [0.0, 0]) if how == "avg" else {}
    t0 = time.perf_counter()
    selected = b.select(p.start_ms, p.end_ms, p.hosts)
    with b.env.begin() as txn:
        stored = [(bytes(txn.get(rid, db=b.db)), host) for rid, host in selected]
    t1 = time.perf_counter()
    raws = [(b.codec.unpack(s), host) for s, host in stored]
    t2 = time.perf_counter()
    decoded = [(decode_columns(raw, ("time", metric)), host) for raw, host in raws]
    t3 = time.perf_counter()
    for cols, host in decoded:
        group_bucket(cols, p.start_ms, p.end_ms, unit_ms, metric, how, host, acc)
    out = finish(query, acc)
    t4 = time.perf_counter()
    numpy_decoded = [(decode_columns_numpy(raw, ("time", metric)), host) for raw, host in raws]
    t5 = time.perf_counter()
    for (a, _), (c, _) in zip(decoded, numpy_decoded, strict=True):
        assert np.array_equal(a["time"], c["time"]) and np.array_equal(a[metric], c[metric])
    for k, v in (("select + LMDB read", t1 - t0), ("zstd decompress", t2 - t1), ("BSON decode 2 columns -> numpy", t3 - t2),
                 ("vectorized mask + group", t4 - t3), ("alt: numpy parse of the BSON columns", t5 - t4)):
        timings[k].append(v * 1000)
    timings["buckets"].append(len(selected))
    return out


def run_cached(b: Buckets, cache: dict, query: str, p, timings: dict) -> list[tuple]:
    metric, how, unit_ms = spec(query)
    acc = defaultdict(lambda: [0.0, 0]) if how == "avg" else {}
    t0 = time.perf_counter()
    for rid, host in b.select(p.start_ms, p.end_ms, p.hosts):
        group_bucket(cache[rid], p.start_ms, p.end_ms, unit_ms, metric, how, host, acc)
    out = finish(query, acc)
    timings["column cache: select + mask + group"].append((time.perf_counter() - t0) * 1000)
    return out


def run_codec(b: Buckets, encoded: dict, query: str, p, timings: dict) -> list[tuple]:
    metric, how, unit_ms = spec(query)
    acc = defaultdict(lambda: [0.0, 0]) if how == "avg" else {}
    dz = zstandard.ZstdDecompressor()
    t0 = time.perf_counter()
    for rid, host in b.select(p.start_ms, p.end_ms, p.hosts):
        t_blob, v_blob = encoded[rid]
        t = np.cumsum(np.frombuffer(dz.decompress(t_blob), dtype=np.int64))
        v = np.cumsum(np.frombuffer(dz.decompress(v_blob), dtype=np.int16)).astype(np.float64)
        group_bucket({"time": t, metric: v}, p.start_ms, p.end_ms, unit_ms, metric, how, host, acc)
    out = finish(query, acc)
    timings["column codec: decode + mask + group"].append((time.perf_counter() - t0) * 1000)
    return out


def run_segment(seg: dict, hosts: list[str], query: str, p, timings: dict) -> list[tuple]:
    metric, how, unit_ms = spec(query)
    t0 = time.perf_counter()
    t, v, h = seg["time"], seg[metric], seg["host"]
    mask = (t >= p.start_ms) & (t < p.end_ms)
    if p.hosts:
        mask &= np.isin(h, [hosts.index(x) for x in p.hosts])
    tk = t[mask] // unit_ms
    if how == "avg":
        hk = h[mask]
        key = (tk - tk.min()) * len(hosts) + hk
        sums = np.bincount(key, weights=v[mask])
        counts = np.bincount(key)
        nz = np.nonzero(counts)[0]
        base = tk.min()
        out = sorted((int(base + k // len(hosts)) * unit_ms, hosts[k % len(hosts)], (sums[k] / counts[k],))
                      for k in nz.tolist())
    else:
        uniq, inv = np.unique(tk, return_inverse=True)
        m = np.full(len(uniq), -np.inf)
        np.maximum.at(m, inv, v[mask])
        out = [(int(k) * unit_ms, (float(x),)) for k, x in zip(uniq.tolist(), m.tolist(), strict=True)]
        if query == "groupby-orderby-limit":
            out = out[::-1][:5]
    timings["one segment: vectorized pass"].append((time.perf_counter() - t0) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dbpath")
    p.add_argument("--scale", type=int, default=100)
    p.add_argument("--duration", default="1d")
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--queries", default="single-groupby-1-1-1,double-groupby-1,groupby-orderby-limit")
    args = p.parse_args(argv)
    dataset = generate(args.scale, parse_duration(args.duration), args.seed)
    naive = NaiveChecker(dataset)
    b = Buckets(args.dbpath)
    print(f"{len(b.index)} buckets indexed")
    for query in args.queries.split(","):
        metric = QUERY_TYPES[query].metrics[0]
        cache: dict = {}
        encoded: dict = {}
        dz_all = {}
        with b.env.begin() as txn:
            for rid, _, _, _ in b.index:
                cols = decode_columns(b.codec.unpack(bytes(txn.get(rid, db=b.db))), ("time", metric))
                cache[rid] = cols
                zc = zstandard.ZstdCompressor(level=1)
                tdelta = np.diff(cols["time"], prepend=0).astype(np.int64)
                vdelta = np.diff(cols[metric].astype(np.int64), prepend=0).astype(np.int16)
                encoded[rid] = (zc.compress(tdelta.tobytes()), zc.compress(vdelta.tobytes()))
                dz_all[rid] = cols
        hosts = sorted({h for *_, h in b.index})
        host_of = {rid: hosts.index(h) for rid, _, _, h in b.index}
        seg = {"time": np.concatenate([c["time"] for c in cache.values()]),
               metric: np.concatenate([c[metric] for c in cache.values()]),
               "host": np.concatenate([np.full(len(c["time"]), host_of[rid]) for rid, c in cache.items()])}
        codec_bytes = sum(len(a) + len(v) for a, v in encoded.values())
        timings: dict = defaultdict(list)
        for params in make_params(query, dataset, args.seed, args.runs):
            expected = naive.expected(query, params)
            compare("cold", query, params, run_cold(b, query, params, timings), expected)
            compare("cache", query, params, run_cached(b, cache, query, params, timings), expected)
            compare("codec", query, params, run_codec(b, encoded, query, params, timings), expected)
            compare("segment", query, params, run_segment(seg, hosts, query, params, timings), expected)
        print(f"\n{query} (median of {args.runs}; every result checked against the naive checker); "
              f"codec columns: {codec_bytes / seg['time'].size:.2f} B/row for time + {metric}")
        cold = sum(statistics.median(timings[k]) for k in ("select + LMDB read", "zstd decompress",
                                                              "BSON decode 2 columns -> numpy", "vectorized mask + group"))
        for k, v in timings.items():
            unit = "" if k == "buckets" else " ms"
            print(f"  {k:45s} {statistics.median(v):9.2f}{unit}")
        print(f"  {'cold total (today format, column-at-a-time)':45s} {cold:9.2f} ms")
        fast = cold - statistics.median(timings["BSON decode 2 columns -> numpy"]) + statistics.median(
            timings["alt: numpy parse of the BSON columns"])
        print(f"  {'cold total, numpy parse of the BSON columns':45s} {fast:9.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
