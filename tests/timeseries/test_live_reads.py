"""Reads among many in-memory buckets (a series per sensor, each one's current bucket not stored yet),
against the real storage engine (no server).

A read of one series among 100,000 in-memory buckets took 4.4 s (a meta filter on a subfield: every
in-memory bucket's control — every column's min and max — worked out for a predicate that reads only
the meta), 8.3 s with a time window too (the time check read the same control) and 9 s through the
{meta, time} index (every in-memory bucket placed in the index order by the keys of its control before
the predicate ran). What holds: the bucket predicate of a meta-only filter reads a bucket's ``head()``
and the time check its ``time_range()`` — an in-memory bucket answers both without its control, and
both equal what its summary says —, in-memory buckets meet the meta test before the time check, an
index read places only the in-memory buckets the predicate keeps, a filter whose meta must equal a
string (an ObjectId, a bool) at a path examines only the in-memory buckets whose meta holds it there
(the catalog keeps them by meta point), and the documents are those of the same read once every bucket
is stored."""

import datetime as dt

import pytest
from harness.timeseries import Server

from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.timeseries import bucketview, ddl, scan, view
from tidemark.timeseries.bucketdoc import date_ms

T0 = dt.datetime(2024, 1, 1)
BNS = "db.system.buckets.c"
SERIES = 1500
FILTERS = [
    {"m.host": "h5"},  # a meta subfield: the collection scan
    {"m": {"dc": "x", "host": "h5"}},  # the whole meta (fields sorted, as stored): the {meta, time} index
    {"m.host": "h5", "t": {"$gte": T0, "$lt": T0 + dt.timedelta(hours=1)}},  # with a time window
    {"m.host": {"$in": ["h5", "h7"]}, "v": {"$gte": 0}},  # and a measurement filter
]


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


async def _load(server):
    await timeseries_ddl.create(server.ctx(), {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"},
                                               "$db": "db"})
    docs = [{"t": T0 + dt.timedelta(seconds=i % 3000, milliseconds=k), "m": {"host": f"h{i}", "dc": "x"},
             "v": i * 10 + k} for i in range(SERIES) for k in range(1 + i % 3)]
    await insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})


def _read(server, match):
    with server.engine.read() as r:
        view_doc = ddl.get_view(r, "db", "c")[1]
    source, remaining, info = view.read_source(server, "db", view_doc, [{"$match": match}])
    assert not remaining
    return sorted(d["v"] for d in source), info


def _counting(monkeypatch, owner, name, counts):
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


async def test_a_read_of_a_few_series_works_out_no_other_in_memory_buckets_control(server, monkeypatch):
    await _load(server)
    assert len(scan.live_views(server, BNS)) == SERIES
    counts: dict[str, int] = {}
    _counting(monkeypatch, bucketview.LiveBucket, "summary", counts)
    _counting(monkeypatch, bucketview.LiveBucket, "time_range", counts)
    real_position = scan._index_position

    def position_of(*args):
        place = real_position(*args)

        def counted(v):
            counts["placed"] = counts.get("placed", 0) + 1
            return place(v)
        return counted

    monkeypatch.setattr(scan, "_index_position", position_of)
    found = {}
    for match in FILTERS:
        counts.clear()
        found[str(match)], info = _read(server, match)
        # only the buckets of the filter's series examined: the catalog finds them by meta point
        assert found[str(match)] and info["bucketsScanned"] == (2 if "$in" in str(match) else 1), (match, info)
        # (with a time window too: the meta test first, the cheap one for an in-memory bucket)
        assert all(counts.get(k, 0) <= 2 for k in ("summary", "time_range", "placed")), (match, counts)
    assert found[str(FILTERS[0])] == found[str(FILTERS[1])] == found[str(FILTERS[2])] == [50, 51, 52]
    assert found[str(FILTERS[3])] == [50, 51, 52, 70, 71]

    # a meta filter with no point to look up (a regex) still examines every in-memory bucket
    unpointed, info = _read(server, {"m.host": {"$regex": "^h5$"}})
    assert unpointed == [50, 51, 52] and info["bucketsScanned"] == SERIES

    await server.ts_committer.close_collection(BNS)  # every bucket stored: the same documents
    assert not scan.live_views(server, BNS)
    for match in FILTERS:
        assert _read(server, match)[0] == found[str(match)]


async def test_an_in_memory_buckets_head_and_time_range_are_what_its_summary_says(server):
    await _load(server)
    views = list(scan.live_views(server, BNS).values())
    assert len(views) == SERIES
    for v in views:
        summary = v.summary()
        assert v.head() == {k: summary[k] for k in ("_id", "meta")}
        control = summary["control"]
        assert v.time_range("t") == (date_ms(control["min"]["t"]), date_ms(control["max"]["t"]))


@pytest.mark.parametrize("outlier", [None, dt.datetime(1969, 12, 31, 23, 59, 59), dt.datetime(2038, 1, 19, 3, 14, 8),
                                     dt.datetime(2038, 1, 19, 3, 14, 7), dt.datetime(1970, 1, 1)])
async def test_the_extended_range_check_reads_no_in_memory_buckets_control(server, monkeypatch, outlier):
    """A find sorted on time asks whether the collection holds dates outside 1970..2038: it built the
    whole control (every column's min and max) of each in-memory bucket, on the event loop without an
    interruption check — 30 s with 100,000 series. It reads their time columns now, with the same
    answer as from their controls (and from the stored buckets once written)."""
    await _load(server)
    if outlier is not None:
        await insert_measurements(server.ctx(), {"insert": "c", "documents": [
            {"t": outlier, "m": {"host": "odd", "dc": "x"}, "v": -1}], "$db": "db"})
    expected = outlier is not None and not dt.datetime(1970, 1, 1) <= outlier <= dt.datetime(2038, 1, 19, 3, 14, 7)
    counts: dict[str, int] = {}
    _counting(monkeypatch, bucketview.LiveBucket, "summary", counts)
    assert scan.uses_extended_range(server, BNS, "t") is expected
    assert counts.get("summary", 0) == 0
    monkeypatch.undo()
    await server.ts_committer.close_collection(BNS)
    assert not scan.live_views(server, BNS)
    assert scan.uses_extended_range(server, BNS, "t") is expected
