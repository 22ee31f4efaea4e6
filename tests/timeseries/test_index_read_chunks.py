"""A read through a buckets index returns every matching measurement once, whether its buckets are stored
or in memory and however many chunks of stored buckets the read takes (the first chunk is read in the
index scan's transaction, later ones each in a transaction of their own, ``scan.index_buckets``):
against a model, for sets of series on both sides of a chunk (``stored.CHUNK`` buckets), through a real
server whose buckets were stored by a restart and some of them then reopened in memory by new rows."""

import datetime as dt

import pytest
from harness.server import ServerProcess
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tidemark.timeseries import stored

T0 = dt.datetime(2024, 1, 1)
SERIES = stored.CHUNK + 40
HINT = {"m": 1, "t": 1}


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    server = ServerProcess(str(tmp_path_factory.mktemp("index_read_chunks") / "db")).start()
    try:
        with server.client() as client:
            db = client.t
            db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
            db.c.create_index(list(HINT.items()))
            # two buckets a series (two hours apart)
            docs = [{"t": T0 + dt.timedelta(hours=h), "m": s, "v": s * 10 + h} for s in range(SERIES) for h in (0, 2)]
            db.c.insert_many([dict(d) for d in docs])
        server.restart()  # every bucket stored
        with server.client() as client:
            # a third of the series gain a row: their newest bucket (reopened) or a new one, in memory
            more = [{"t": T0 + dt.timedelta(hours=2, minutes=1), "m": s, "v": -s} for s in range(0, SERIES, 3)]
            client.t.c.insert_many([dict(d) for d in more])
        yield server, docs + more
    finally:
        server.terminate()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wanted=st.lists(st.integers(0, SERIES + 4), max_size=SERIES + 4, unique=True), reverse=st.booleans())
@example(wanted=list(range(SERIES + 4)), reverse=False)  # past one chunk
@example(wanted=list(range(stored.CHUNK // 2)), reverse=True)  # exactly one chunk (two buckets a series)
def test_an_index_read_returns_each_matching_measurement_once(filled, wanted, reverse):
    server, docs = filled
    with server.client() as client:
        found = client.t.c.find({"m": {"$in": wanted}}, {"_id": 0}).hint(HINT).sort([("m", -1 if reverse else 1)])
        got = list(found)

    def key(d):
        return d["m"], d["t"], d["v"]

    expected = [d for d in docs if d["m"] in wanted]
    assert sorted(map(key, got)) == sorted(map(key, expected))
