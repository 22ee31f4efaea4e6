"""Large and compressed frames reach every handler as ordinary requests: inserts of several MB, plain
and compressed with each compressor, into regular and time-series collections (a large frame is taken
over by the connection without a copy, a compressed one decompressed into a buffer of exactly its
declared size; both become the same immutable request)."""

from __future__ import annotations

import datetime

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("compressor", ["none", "zlib", "snappy"])  # pymongo's zstd needs backports.zstd
@pytest.mark.commands("insert", "find", "create")
def test_multi_megabyte_inserts_into_regular_and_timeseries_collections(server, compressor):
    kw = {} if compressor == "none" else {"compressors": compressor}
    client = server.client(**kw)
    db = client[f"big_frames_{compressor}"]
    db.drop_collection("ts")
    db.drop_collection("regular")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    base = datetime.datetime(2024, 1, 1)
    docs = [{"t": base + datetime.timedelta(seconds=i), "m": {"host": f"h{i % 7}"}, "v": float(i), "pad": "x" * 200}
            for i in range(20_000)]  # ~5 MB per insert message
    assert len(db.ts.insert_many([dict(d) for d in docs]).inserted_ids) == 20_000
    assert len(db.regular.insert_many([dict(d) for d in docs]).inserted_ids) == 20_000
    assert db.ts.count_documents({}) == 20_000 and db.regular.count_documents({}) == 20_000
    assert db.ts.find_one({"v": 19_999.0}, {"_id": 0, "m": 1}) == {"m": {"host": f"h{19_999 % 7}"}}
    assert len(list(db.regular.find({}, batch_size=20_000))) == 20_000  # large replies, compressed too
    client.drop_database(db.name)
    client.close()


@pytest.mark.commands("insert", "create")
def test_zstd_compressed_timeseries_insert_over_the_wire(server):
    from wire_client import WireClient

    from tidemark.protocol import compression

    client = server.client()
    client.drop_database("big_frames_zstd")
    client.big_frames_zstd.create_collection("ts", timeseries={"timeField": "t"})
    base = datetime.datetime(2024, 1, 1)
    with WireClient(server.port) as wire:
        frame = wire.command_frame({"insert": "ts", "$db": "big_frames_zstd"}, sequences={"documents": [
            {"t": base + datetime.timedelta(seconds=i), "v": i, "pad": "z" * 200} for i in range(20_000)]})
        wire.send(compression.compress(frame, compression.ZSTD))
        assert wire.recv() == {"n": 20_000, "ok": 1.0}
    assert client.big_frames_zstd.ts.count_documents({}) == 20_000
    client.drop_database("big_frames_zstd")
    client.close()
