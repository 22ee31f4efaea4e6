"""The time-series engine in memory, for unit tests: a bucket catalog and one collection, measurements
routed the way an insert routes them (ingest.prepare -> router.route), no storage."""

from __future__ import annotations

import datetime as dt
from typing import Any

import bson
import numpy as np

from harness.server_state import InProcessServer
from tidemark.protocol.codec import CODEC_OPTIONS, decode
from tidemark.protocol.messages import RawDocuments
from tidemark.timeseries import ingest, router, rules
from tidemark.timeseries.batch import ColumnBatch
from tidemark.timeseries.bucketdoc import MISSING, date_ms, meta_key, normalize_meta
from tidemark.timeseries.catalog import BucketCatalog
from tidemark.timeseries.options import parse_timeseries

PARAMS = {"timeseriesBucketMaxCount": 1000, "timeseriesBucketMaxSize": 128_000, "timeseriesBucketMinCount": 10,
          "timeseriesIdleBucketExpiryMaxCountPerAttempt": 3}


class Engine:
    """``put(measurement)`` routes one measurement (as a one-document insert would, through the
    per-document parse) and returns the bucket it joined; ``put_many`` a batch of dicts;
    ``put_raw`` a batch of documents as BSON bytes (the column-wise parse when they share a layout)."""

    def __init__(self, memory_threshold: int = 1 << 40, params: dict | None = None, **spec: Any):
        spec.setdefault("timeField", "t")
        spec.setdefault("metaField", "m")
        if spec["metaField"] is None:
            del spec["metaField"]
        self.options = parse_timeseries("db.c", spec)
        self.catalog = BucketCatalog(memory_threshold=memory_threshold)
        self.state = self.catalog.collection("db.system.buckets.c", self.options)
        self.params = {**PARAMS, **(params or {})}

    @property
    def limits(self) -> rules.Limits:
        return rules.Limits.of(self.params, self.options, self.catalog.memory_threshold)

    @property
    def stats(self) -> dict:
        return self.state.stats

    def _route(self, batch: Any) -> None:
        self.catalog.release_series()  # as the insert command does before computing series ids
        assert ingest.series_ids(self.state.series, batch)  # the insert path's own series ids
        router.route(self.catalog, self.state, batch, np.arange(batch.n), self.limits, None)
        self.catalog.expire_idle(self.limits)

    def put_many(self, docs: list[dict]) -> None:
        prepared = ingest.prepare_rows([dict(d) for d in docs], None, self.options, True)
        assert not prepared.errors, prepared.errors
        if prepared.batch is not None:
            self._route(prepared.batch)

    def put(self, measurement: dict) -> Any:
        self.put_many([measurement])
        meta_field = self.options.meta_field
        return self.open_bucket(measurement[meta_field] if meta_field in measurement else _ABSENT)

    def put_raw(self, docs: list[dict]) -> bool:
        """True when the documents took the column-wise parse."""
        buffer = b"".join(bson.encode(d, codec_options=CODEC_OPTIONS) for d in docs)
        raw = RawDocuments(buffer, 0, len(buffer), "documents")
        prepared = ingest.prepare({"insert": "c", "documents": raw}, self.options, True, self.state.last_layout)
        assert not prepared.errors, prepared.errors
        if isinstance(prepared.batch, ColumnBatch):
            self.state.last_layout = prepared.batch.layout
        self._route(prepared.batch)
        return isinstance(prepared.batch, ColumnBatch)

    def open_bucket(self, meta: Any) -> Any:
        """The open bucket of the series of ``meta`` (``_ABSENT``: measurements without meta)."""
        key = MISSING if meta is _ABSENT else meta_key(normalize_meta(meta))
        sid = self.state.series.sid_of_key[key]
        return self.state.series.open[sid]

    def commit_all(self) -> None:
        """As if a commit made every row durable (no storage): rows become visible, buckets idle."""
        for bucket in self.buckets():
            bucket.table.durable[bucket.slot] = bucket.in_flight = bucket.count
            bucket.committed = True
        self.catalog.take_dirty()
        self.catalog.commits += 1  # as commit.Committer counts each commit (catalog.make_room)

    def flush(self) -> None:
        """As if commits made every row durable and wrote every pending full document: closed and
        retired buckets leave memory (what ``CollectionPlan.finish`` does, without storage)."""
        pending = [bucket for bucket in self.buckets() if bucket.needs_full]
        self.commit_all()
        for bucket in pending:
            bucket.needs_full = False
            bucket.stored_count = bucket.count
            self.catalog.written(self.state, bucket, b"")
        self.catalog.dirty.clear()
        self.catalog.deferred = 0

    def buckets(self) -> list:
        return list(self.state.live.values())

    def documents(self) -> list[dict]:
        return [document(b) for b in self.buckets()]


_ABSENT = object()


def document(bucket: Any) -> dict:
    """The v1 document of every row a bucket holds (committed or not)."""
    return decode(bucket.document_parts(bucket.count).bson())


def row(t: dt.datetime, **fields: Any) -> dict:
    return {"t": t, **fields}


def t_ms(value: dt.datetime) -> int:
    return date_ms(value)


# What the time-series commands need of the server: a real ServerState over a real storage engine.
Server = InProcessServer
