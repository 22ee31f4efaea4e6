"""Commands racing DDL answer as mongod's, whose catalog changes happen under the collection's lock:
one side wins, the other sees the result.

Found by a helper's chaos run (12 clients of mixed CRUD and DDL):
- an insert (or createIndexes) that found no collection, racing a create of a time-series collection
  or a view of that name, created a regular collection next to it: listCollections showed the name
  twice and inserts went to the regular collection for good. mongod's implicit create checks the
  catalog under the lock (checkIfNamespaceExists): 48 "A timeseries collection already exists";
- time-series dropIndexes, collMod, updateMany and collStats racing a drop answered 1 InternalError
  (the buckets collection was gone when their write ran); mongod: 26, or an update matching nothing;
- getMore on a time-series cursor after the drop answered 43 CursorNotFound; mongod (as Tidemark on a
  regular collection): 175 QueryPlanKilled "collection dropped" (getmore_invalidated_cursors.js);
- two getMores of one cursor at once: the loser 96, mongod's is 143 CursorInUse.
"""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from pymongo.errors import OperationFailure

pytestmark = [pytest.mark.commands("insert", "create", "drop", "dropIndexes", "collMod", "getMore"),
              pytest.mark.slow]

T0 = dt.datetime(2024, 1, 1)


def _race(first, second) -> tuple[object, object]:
    """Run both at once; each one's result or OperationFailure."""
    results: list[object] = [None, None]
    go = threading.Barrier(2)

    def run(i, fn):
        go.wait()
        try:
            results[i] = fn()
        except OperationFailure as failure:
            results[i] = failure

    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results[0], results[1]


@pytest.mark.parametrize("creator", ["timeseries", "view"])
@pytest.mark.parametrize("implicit", ["insert", "createIndexes"])
def test_an_implicit_create_racing_a_view_leaves_one_namespace(server, creator, implicit):
    client, other = server.client(), server.client()
    db = client.races
    for _ in range(40):
        client.drop_database("races")
        create = (lambda: db.command("create", "r", timeseries={"timeField": "t"})) if creator == "timeseries" \
            else (lambda: db.command("create", "r", viewOn="src", pipeline=[]))
        write = (lambda: other.races.r.insert_one({"t": T0, "x": 1})) if implicit == "insert" \
            else (lambda: other.races.r.create_index("x"))
        created, written = _race(create, write)
        names = [c["name"] for c in db.list_collections() if c["name"] == "r"]
        assert names == ["r"], (created, written)
        for result in (created, written):
            if isinstance(result, OperationFailure):
                assert result.code in (48, 166, 72), result.details  # exists / a view / not on a view
    client.close()
    other.close()


def test_time_series_ddl_racing_a_drop_never_fails_internally(server):
    client = server.client()
    db = client.races
    stop = threading.Event()
    codes: list[int] = []

    def churn():
        while not stop.is_set():
            db.drop_collection("ts")
            try:
                db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
                db.ts.insert_many([{"t": T0, "m": i, "x": i} for i in range(5)])
                db.ts.create_index("x")
            except OperationFailure as failure:
                codes.append(failure.code)

    commands = [
        lambda c: c.races.command("dropIndexes", "ts", index="x_1"),
        lambda c: c.races.command("dropIndexes", "ts", index="*"),
        lambda c: c.races.command("collMod", "ts", index={"keyPattern": {"x": 1}, "hidden": True}),
        lambda c: c.races.command("collMod", "ts", expireAfterSeconds=3600),
        lambda c: c.races.ts.update_many({"m": 1}, {"$set": {"m": 2}}),
        lambda c: c.races.command("collStats", "ts"),
        lambda c: c.races.ts.delete_many({"m": 3}),
    ]

    def hammer(i):
        own = server.client()
        for k in range(150):
            try:
                commands[(i + k) % len(commands)](own)
            except OperationFailure as failure:
                codes.append(failure.code)
        own.close()

    churner = threading.Thread(target=churn)
    churner.start()
    workers = [threading.Thread(target=hammer, args=(i,)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    churner.join()
    assert 1 not in codes
    assert set(codes) <= {26, 27, 48, 72, 85, 166}, sorted(set(codes))
    client.close()


@pytest.mark.parametrize("event", ["drop", "dropDatabase"])
def test_a_time_series_cursor_after_its_drop_is_query_plan_killed(server, event):
    client = server.client()
    db = client.races_cursor
    client.drop_database("races_cursor")
    db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    db.c.insert_many([{"t": T0 + dt.timedelta(seconds=i % 60), "m": i % 2000, "pad": "p" * 250} for i in range(8000)])
    with client.start_session() as session:
        cursor = db.command("find", "c", batchSize=2, session=session)["cursor"]["id"]
        assert cursor != 0
        uuid = next(c for c in db.list_collections() if c["name"] == "system.buckets.c")["info"]["uuid"]
        if event == "drop":
            db.c.drop()
        else:
            client.drop_database("races_cursor")
        with pytest.raises(OperationFailure) as killed:
            db.command("getMore", cursor, collection="c", session=session)
    assert killed.value.code == 175
    assert killed.value.details["errmsg"] == f"collection dropped. UUID {uuid.as_uuid() if hasattr(uuid, 'as_uuid') else uuid}"
    client.close()
