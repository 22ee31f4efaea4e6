"""getMore batch boundaries (tidemark.cursors ``_fill_batch``): a cursor over a columnar ``$group`` of a
time-series collection (its documents made as BSON from the group arrays, groupbson) and one over the
same ``$group`` of a regular collection holding the same measurements answer every sequence of
batch sizes alike: the same documents byte for byte in each batch, a batch as long as its size asks
(or what is left), and the cursor reported exhausted (id 0) as mongod reports it: in the batch that
runs out, which is an empty one when the batch before it ended exactly at the last document (a cursor
draws nothing past a full batch, and a pipeline learns its end only by drawing)."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("aggregate", "getMore", "insert", "create")

T0 = dt.datetime(2024, 3, 1)
RAW = CodecOptions(document_class=RawBSONDocument)
HOSTS = 6
MINUTES = 90  # 6 hosts x 90 minutes: 540 groups, well above the columnar BSON output's minimum
PIPELINE = [
    {"$group": {"_id": {"h": "$m.h", "t": {"$dateTrunc": {"date": "$t", "unit": "minute"}}},
                "n": {"$count": {}}, "hi": {"$max": "$v"}}},
    {"$sort": {"_id.h": 1, "_id.t": 1}},
]


@pytest.fixture(scope="module")
def colls(client):
    db = client["t_cursor_batch_boundaries"]
    db.drop_collection("ts")
    db.drop_collection("reg")
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    rows = [{"t": T0 + dt.timedelta(minutes=minute, seconds=s), "m": {"h": f"h{h}"}, "v": float((h * 7 + minute + s) % 11)}
            for h in range(HOSTS) for minute in range(MINUTES) for s in (0, 20, 40)]
    db.ts.insert_many(rows)
    db.reg.insert_many(rows)
    yield db.get_collection("ts", codec_options=RAW), db.get_collection("reg", codec_options=RAW)
    client.drop_database("t_cursor_batch_boundaries")


def _batches(coll, first: int | None, sizes: list[int | None]) -> list[tuple[list[bytes], bool]]:
    """(the documents' bytes, exhausted) of each reply: the aggregate's, then getMores of ``sizes``
    (the last size repeated) until the cursor is exhausted."""
    cursor = {} if first is None else {"batchSize": first}
    reply = coll.database.command("aggregate", coll.name, pipeline=PIPELINE, cursor=cursor, codec_options=RAW)
    out = [([d.raw for d in reply["cursor"]["firstBatch"]], reply["cursor"]["id"] == 0)]
    cursor_id, i = reply["cursor"]["id"], 0
    while cursor_id:
        size = sizes[min(i, len(sizes) - 1)]
        i += 1
        more = {} if size is None else {"batchSize": size}
        reply = coll.database.command("getMore", cursor_id, collection=coll.name, codec_options=RAW, **more)
        out.append(([d.raw for d in reply["cursor"]["nextBatch"]], reply["cursor"]["id"] == 0))
        cursor_id = reply["cursor"]["id"]
    return out


def _expected_lengths(total: int, first: int | None, sizes: list[int | None]) -> list[int]:
    """mongod's batch lengths: each batch takes what its size asks or what is left; an aggregate's
    pipeline learns its end only by drawing past its last document, so a batch full by its size leaves
    the cursor open, and the batch that runs out (empty when the last one ended exactly) closes it."""
    lengths, left, i = [], total, 0
    size = 101 if first is None else first
    while True:
        n = left if size is None else min(left, size)
        lengths.append(n)
        left -= n
        if size is None or n < size:
            return lengths
        size = sizes[min(i, len(sizes) - 1)]
        i += 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.one_of(st.none(), st.integers(0, 600)),
       sizes=st.lists(st.one_of(st.none(), st.integers(1, 300)), min_size=1, max_size=4))
def test_getmore_batches_of_a_columnar_group_match_a_regular_collection(colls, first, sizes):
    ts, reg = colls
    got, expected = _batches(ts, first, sizes), _batches(reg, first, sizes)
    assert [len(b) for b, _ in got] == [len(b) for b, _ in expected]
    assert got == expected
    total = HOSTS * MINUTES
    assert sum(len(b) for b, _ in got) == total
    assert [len(b) for b, _ in got] == _expected_lengths(total, first, sizes)
    # exhausted in the last batch only
    assert [done for _, done in got] == [False] * (len(got) - 1) + [True]
