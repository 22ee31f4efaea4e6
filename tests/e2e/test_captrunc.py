"""captrunc and emptycapped, mongod's test commands (test_commands.cpp CapTrunc, present only with
``--setParameter enableTestCommands=1``): ``{captrunc: <capped collection>, n: <int>, inc: <bool>}``
removes the ``n`` newest documents of a capped collection (``n + 1`` with ``inc: true``, since mongod
truncates after the (n+1)-th newest record, that record included when ``inc``), and the collection must
hold more than ``n`` documents (20 "invalid n, collection contains fewer than <n> documents"). ``n`` is
read with getIntField (a number's int value; anything else fails) and must be positive (2 "n must be a
positive integer"); a missing collection is 26, a collection that is not capped 20 "collection must be
capped", a non-string name 73. Tidemark answered 59 CommandNotFound (and without test commands it still
does, as mongod).

emptycapped (test_commands.cpp EmptyCapped, capped_utils.cpp emptyCapped) removes every document and
keeps the collection and its indexes; it does not check that the collection is capped; refusals: a
missing database 26 "no such database", a view 166 "emptycapped not supported on view: <ns>", a missing
collection 26 "no such collection", a system collection but system.profile 20 "Cannot truncate a system
collection: <ns>". Tidemark answered 59.
"""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("captrunc", "emptycapped")


@pytest.fixture(scope="module")
def testing(tmp_path_factory):
    from harness import ServerProcess

    base = tmp_path_factory.mktemp("captrunc")
    proc = ServerProcess(base / "db", params={"enableTestCommands": 1}, log_path=base / "tidemark.log")
    proc.start()
    client = proc.client()
    yield client
    client.close()
    assert proc.terminate() == 0


def _code(db, cmd) -> int:
    with pytest.raises(OperationFailure) as e:
        db.command(cmd)
    return e.value.code


def _capped(db, docs: int):
    db.drop_collection("c")
    db.create_collection("c", capped=True, size=1 << 20)
    db.c.create_index("x")
    if docs:
        db.c.insert_many([{"_id": i, "x": i % 3} for i in range(docs)])


@settings(max_examples=40, deadline=None)
@given(docs=st.integers(0, 12), n=st.one_of(st.integers(-2, 14), st.floats(-1.5, 14.9).map(float),
                                           st.integers(1, 5).map(Int64)),
       inc=st.one_of(st.booleans(), st.just(1), st.none()))
def test_captrunc_removes_the_newest_documents(testing, docs, n, inc):
    db = testing.captrunc_db
    _capped(db, docs)
    cmd = {"captrunc": "c", "n": n, **({} if inc is None else {"inc": inc})}
    count = int(n)  # (getIntField: a double's integer part)
    if count <= 0:
        assert _code(db, cmd) == 2
        return
    if docs <= count:
        with pytest.raises(OperationFailure) as e:
            db.command(cmd)
        assert (e.value.code, e.value.details["errmsg"]) == (
            20, f"invalid n, collection contains fewer than {count} documents")
        assert db.c.count_documents({}) == docs
        return
    assert db.command(cmd)["ok"] == 1
    kept = docs - count - (1 if inc is True else 0)  # (getBoolField: only a bool true is inclusive)
    assert [d["_id"] for d in db.c.find()] == list(range(kept))
    # the index entries of the removed documents went with them
    assert sorted(d["_id"] for d in db.c.find({"x": {"$gte": 0}}).hint("x_1")) == list(range(kept))
    db.c.insert_one({"_id": 100, "x": 1})  # the collection stays writable and capped
    assert db.c.options()["capped"] is True


def test_captrunc_refusals(testing):
    db = testing.captrunc_db
    _capped(db, 3)
    db.drop_collection("plain")
    db.plain.insert_many([{}, {}])
    db.drop_collection("v")
    db.command("create", "v", viewOn="c", pipeline=[])
    assert _code(db, {"captrunc": "missing", "n": 1}) == 26
    with pytest.raises(OperationFailure) as e:
        db.command({"captrunc": "plain", "n": 1})
    assert (e.value.code, e.value.details["errmsg"]) == (20, "collection must be capped")
    assert _code(db, {"captrunc": "v", "n": 1}) == 166
    assert _code(db, {"captrunc": 1, "n": 1}) == 73
    for n in ("1", True, None, [1]):  # not a number: getIntField gives no positive value
        assert _code(db, {"captrunc": "c", "n": n}) == 2
    assert _code(db, {"captrunc": "missing"}) == 2  # n is checked before the collection


def test_captrunc_exists_only_with_test_commands(client):
    db = client.captrunc_db
    db.drop_collection("c")
    db.create_collection("c", capped=True, size=4096)
    assert _code(db, {"captrunc": "c", "n": 1}) == 59
    assert "captrunc" not in client.admin.command("listCommands")["commands"]


@settings(max_examples=15, deadline=None)
@given(docs=st.integers(0, 30), capped=st.booleans())
def test_emptycapped_removes_every_document(testing, docs, capped):
    db = testing.captrunc_db
    db.drop_collection("e")
    db.create_collection("e", **({"capped": True, "size": 1 << 20} if capped else {}))
    db.e.create_index("x", unique=True)
    if docs:
        db.e.insert_many([{"x": i} for i in range(docs)])
    assert db.command("emptycapped", "e")["ok"] == 1
    assert db.e.count_documents({}) == 0 and db.e.find_one({"x": 0}, hint="x_1") is None
    assert sorted(i["name"] for i in db.e.list_indexes()) == ["_id_", "x_1"]
    assert db.e.options().get("capped", False) is capped
    db.e.insert_one({"x": 0})  # the unique index holds no stale entry


def test_emptycapped_refusals(testing):
    db = testing.captrunc_db
    db.c.insert_one({})
    db.drop_collection("v")
    db.command("create", "v", viewOn="c", pipeline=[])

    def error(name, database=db):
        with pytest.raises(OperationFailure) as e:
            database.command("emptycapped", name)
        return e.value.code, e.value.details["errmsg"]

    assert error("x", testing.no_such_database_here) == (26, "no such database")
    assert error("v") == (166, "emptycapped not supported on view: captrunc_db.v")
    assert error("missing") == (26, "no such collection")
    db.command("create", "system.js")
    assert error("system.js") == (20, "Cannot truncate a system collection: captrunc_db.system.js")
    assert _code(db, {"emptycapped": 5}) == 73
