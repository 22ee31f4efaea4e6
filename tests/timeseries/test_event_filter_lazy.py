"""The per-measurement (event) filter of a time-series read is compiled only when a bucket needs it:
a read that meets no bucket, or whose columns decide every bucket it meets, never compiles it; one whose
buckets take the row path compiles it once and filters exactly (``$expr`` reading ``let`` included)."""

import datetime as dt

import pytest
from harness.timeseries import Server

from tidemark import collections as access
from tidemark.commands import timeseries_ddl
from tidemark.commands.timeseries_insert import insert_measurements
from tidemark.query import match_compile

T0 = dt.datetime(2024, 1, 1)
BNS = "db.system.buckets.c"


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "data")
    yield s
    s.engine.close()


@pytest.fixture
def compiles(monkeypatch):
    """The event-filter compiles made while the test reads (the bucket predicate's, over the buckets'
    ``meta``/``control`` fields, are not counted)."""
    calls = []
    real = match_compile._Compiler.compile

    def counted(self, node):
        shown = repr(node)
        if "path='meta" not in shown and "path='control" not in shown:
            calls.append(node)
        return real(self, node)

    monkeypatch.setattr(match_compile._Compiler, "compile", counted)
    return calls


async def _load(server):
    await timeseries_ddl.create(server.ctx(), {"create": "c", "timeseries": {"timeField": "t", "metaField": "m"},
                                               "$db": "db"})
    docs = [{"t": T0 + dt.timedelta(minutes=i), "m": {"h": f"h{s}"}, "v": float(i), "w": i % 3}
            for s in range(3) for i in range(30)]
    await insert_measurements(server.ctx(), {"insert": "c", "documents": docs, "$db": "db"})
    await server.ts_committer.close_collection(BNS)


def _read(server, pipeline, let=None):
    result = access.open_read(server.ctx().server, "db", "c", pipeline, variables=let)
    return list(result.docs), result.ts_info


SG = [{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "top": {"$max": "$v"}}},
      {"$sort": {"_id": 1}}]


async def test_a_read_meeting_no_bucket_never_compiles_the_event_filter(server, compiles):
    await _load(server)
    window = {"t": {"$gte": T0 - dt.timedelta(hours=2), "$lt": T0 - dt.timedelta(hours=1)}, "m.h": {"$in": ["h0"]}}
    assert _read(server, [{"$match": window}])[0] == []
    assert _read(server, [{"$match": window}, *SG])[0] == []
    assert compiles == []


async def test_a_group_the_columns_decide_never_compiles_the_event_filter(server, compiles):
    await _load(server)
    window = {"t": {"$gte": T0 + dt.timedelta(minutes=5), "$lt": T0 + dt.timedelta(minutes=15)},
              "m.h": {"$in": ["h1"]}}
    docs, info = _read(server, [{"$match": window}, *SG])
    assert info["columnFilterComplete"] is True
    assert [(d["_id"], d["top"]) for d in docs] == [(T0 + dt.timedelta(minutes=i), float(i)) for i in range(5, 15)]
    assert compiles == []


async def test_rows_the_columns_cannot_decide_compile_it_once_with_the_commands_variables(server, compiles):
    await _load(server)
    match = {"$match": {"m.h": "h2", "$expr": {"$eq": ["$w", "$$want"]}}}
    docs, info = _read(server, [match], let={"want": 1})
    assert info.get("columnFilterComplete") is not True
    assert sorted(d["v"] for d in docs) == [float(i) for i in range(30) if i % 3 == 1]
    assert {d["m"]["h"] for d in docs} == {"h2"}
    assert len([n for n in compiles if type(n).__name__ == "And"]) == 1  # the whole filter, once
