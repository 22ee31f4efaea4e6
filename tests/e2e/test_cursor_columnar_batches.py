"""The batches of a columnar ``$group`` + ``$sort`` whose documents go to the cursor straight as BSON
(``groupstate.DenseGroups.sorted_results`` -> one ``protocol.codec.EncodedRun`` -> ``cursors._fill_batch``)
(and of a columnar ``$group`` with no ``$sort``: ``groupbatch.GroupOutput``, one run too) are exactly
those of the generic path over a regular collection holding the same measurements: the
documents' bytes (field order, types), where each batch ends (``batchSize`` 0, 1, the default 101, the
group count and either side of it, getMores with and without a batchSize) and where the 16 MiB reply
cuts a batch (the documents' elements counted whole), the cursor id 0 exactly when the last batch is
sent, and the replies' fields in order."""

from __future__ import annotations

import datetime as dt

import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument

pytestmark = pytest.mark.commands("aggregate", "getMore", "insert", "create")

T0 = dt.datetime(2024, 3, 1)
RAW = CodecOptions(document_class=RawBSONDocument)
GROUP = [
    {"$match": {"t": {"$gte": T0}}},
    {"$group": {"_id": {"t": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "h": "$m.h"},
                "a": {"$avg": "$v"}, "n": {"$count": {}}}},
]
# with the $sort the run comes from ``sorted_results``; without it, from ``GroupOutput`` in first-seen
# order (hosts, then hours: the order the rows were inserted into the regular collection as well)
PIPELINES = {"group+sort": GROUP + [{"$sort": {"_id.t": 1, "_id.h": 1}}], "group": GROUP}


def _rows(hosts: int, pad: int) -> list[dict]:
    return [{"t": T0 + dt.timedelta(minutes=7 * k + i % 5), "m": {"h": f"h{i:05d}" + "x" * pad}, "v": float(i % 13 + k)}
            for i in range(hosts) for k in range(12)]  # 2 hours per host: 2 groups each


@pytest.fixture(scope="module")
def db(client):
    db = client["t_cursor_columnar_batches"]
    for name, hosts, pad in (("small", 75, 0), ("big", 850, 10_000)):
        db.create_collection(f"ts_{name}", timeseries={"timeField": "t", "metaField": "m", "granularity": "hours"})
        rows = _rows(hosts, pad)
        db[f"ts_{name}"].insert_many(rows)
        db[f"reg_{name}"].insert_many(rows)
    yield db
    client.drop_database("t_cursor_columnar_batches")


def _batches(db, name: str, first: int | None, more: int | None, pipeline: str = "group+sort") -> list[tuple]:
    """Each reply of the aggregate and its getMores: (reply fields, cursor fields, id is 0, documents' bytes)."""
    cursor_opt = {} if first is None else {"batchSize": first}
    reply = db.command({"aggregate": name, "pipeline": PIPELINES[pipeline], "cursor": cursor_opt}, codec_options=RAW)
    out = []
    while True:
        cursor = reply["cursor"]
        batch = cursor["firstBatch" if not out else "nextBatch"]
        cursor_id = cursor["id"]
        out.append((list(reply.keys()), list(cursor.keys()), cursor_id == 0, [d.raw for d in batch]))
        if cursor_id == 0:
            return out
        cmd = {"getMore": cursor_id, "collection": name}
        if more is not None:
            cmd["batchSize"] = more
        reply = db.command(cmd, codec_options=RAW)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("first,more", [(None, None), (0, None), (1, 1), (1, None), (101, 49), (149, None),
                                        (150, None), (151, None), (0, 150), (2, 148), (100, 0)])
def test_batch_sizes_cut_the_columnar_output_as_the_generic_path(db, first, more, pipeline):
    got = _batches(db, "ts_small", first, more, pipeline)
    want = _batches(db, "reg_small", first, more, pipeline)
    assert sum(len(b[3]) for b in got) == 150
    assert got == want


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
@pytest.mark.parametrize("first,more", [(5000, None), (0, None), (1000, 500), (None, None)])
def test_the_16_mib_reply_limit_cuts_the_columnar_output_as_the_generic_path(db, first, more, pipeline):
    got = _batches(db, "ts_big", first, more, pipeline)
    want = _batches(db, "reg_big", first, more, pipeline)
    assert sum(len(b[3]) for b in got) == 1700
    assert [len(b[3]) for b in got] == [len(b[3]) for b in want]
    assert got == want
    if first == 5000:  # the size limit, not the count, ended the first batch: at most 16 MiB - 64 KiB
        sizes = [len(d) for d in got[0][3]]
        elements = sum(sizes) + sum(2 + len(str(i)) for i in range(len(sizes)))
        assert len(sizes) < 1700 and elements <= 16 * 1024 * 1024 - 64 * 1024
        assert elements + 2 + len(str(len(sizes))) + len(got[1][3][0]) > 16 * 1024 * 1024 - 64 * 1024
