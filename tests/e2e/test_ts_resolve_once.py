"""A command resolves its namespace once, by point lookups, and parses its filter once (issue 22).

These run a server inside the test process (``tidemark.testing.TidemarkServer``), so the parser and the
namespace lookup can be instrumented: every server module's binding of ``parse_filter`` /
``compile_node`` is replaced by a counting wrapper while one command runs.
"""

from __future__ import annotations

import datetime
import sys
from collections import Counter

import pytest

from tidemark.core import namespace
from tidemark.query import match_compile, match_parse
from tidemark.timeseries.ddl import stored_options

pytestmark = pytest.mark.commands("find")

T0 = datetime.datetime(2024, 1, 1)


@pytest.fixture
def counting(monkeypatch):
    """(counts, on): ``counts["parse"]``/``["compile"]`` count top-level parses and compiles of filters
    made while ``on["on"]`` is true (in any server thread)."""
    counts: Counter = Counter()
    on = {"on": False}
    parse, compile_ = match_parse.parse_filter, match_compile.compile_node

    def counting_parse(*args, **kwargs):
        if on["on"]:
            counts["parse"] += 1
        return parse(*args, **kwargs)

    def counting_compile(*args, **kwargs):
        if on["on"]:
            counts["compile"] += 1
        return compile_(*args, **kwargs)

    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("tidemark."):
            continue
        if getattr(module, "parse_filter", None) is parse:
            monkeypatch.setattr(module, "parse_filter", counting_parse)
        if getattr(module, "compile_node", None) is compile_:
            monkeypatch.setattr(module, "compile_node", counting_compile)
    return counts, on


@pytest.fixture
def ts_db(tidemark_server_factory):
    server = tidemark_server_factory()
    client = server.client()
    # a read that outruns its inline budget on the event loop runs again from its start in the pool
    # (server/README.md, "The request path"): its parse and resolution twice. A cold server's first
    # read may: the budget here is roomy, so each read below is one run (inline).
    client.admin.command("setParameter", 1, tidemarkInlineReadMicros=200_000)
    db = client.resolve_once
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    db.ts.insert_many([{"t": T0 + datetime.timedelta(minutes=i), "m": i % 3, "v": i} for i in range(100)])
    yield db
    client.close()


def test_time_series_find_with_a_time_filter_parses_and_compiles_its_filter_once(ts_db, counting):
    counts, on = counting
    since = T0 + datetime.timedelta(minutes=50)
    on["on"] = True
    docs = list(ts_db.ts.find({"t": {"$gte": since}}))
    on["on"] = False
    assert sorted(d["v"] for d in docs) == list(range(50, 100))
    assert counts["parse"] == 1
    assert counts["compile"] == 1  # the per-measurement filter (the bucket filter is derived, not parsed)


def test_time_series_find_with_a_measurement_filter_parses_once(ts_db, counting):
    counts, on = counting
    on["on"] = True
    docs = list(ts_db.ts.find({"t": {"$lt": T0 + datetime.timedelta(minutes=30)}, "v": {"$mod": [7, 0]}}))
    on["on"] = False
    assert sorted(d["v"] for d in docs) == [0, 7, 14, 21, 28]
    assert counts["parse"] == 1
    assert counts["compile"] == 1


def test_time_series_find_with_let_variables_in_expr_still_answers(ts_db, counting):
    """$expr reads the command's variables: the source compiles it again rather than reuse a
    predicate built for other variables — the answer is what matters."""
    docs = ts_db.command({"find": "ts", "filter": {"$expr": {"$lt": ["$v", "$$lim"]}}, "let": {"lim": 3}})
    assert sorted(d["v"] for d in docs["cursor"]["firstBatch"]) == [0, 1, 2]


def test_namespace_lookup_reads_one_view_per_chain_level_however_many_views(tidemark_server_factory, monkeypatch):
    server = tidemark_server_factory()
    client = server.client()
    db = client.many_views
    db.create_collection("base")
    for i in range(200):
        db.command({"create": f"v{i:03d}", "viewOn": "base", "pipeline": [{"$match": {"k": i}}]})
    db.command({"create": "top", "viewOn": "v007", "pipeline": [{"$project": {"k": 1}}]})
    db.create_collection("ts", timeseries={"timeField": "t"})
    decoded: list = []
    decode = namespace.decode
    monkeypatch.setattr(namespace, "decode", lambda raw: decoded.append(1) or decode(raw))
    engine = server._app.state.engine  # the in-process server's storage
    ns = namespace.resolve(engine, "many_views", "top")
    assert (ns.kind, ns.base, len(ns.chain)) == ("view", "base", 2)
    assert ns.pipeline == [{"$match": {"k": 7}}, {"$project": {"k": 1}}]
    assert len(decoded) == 2  # top, v007: nothing else decoded
    decoded.clear()
    ts = namespace.resolve(engine, "many_views", "ts")
    assert ts.kind == "timeseries" and stored_options(ts.buckets_info).time_field == "t"
    assert len(decoded) == 1
    decoded.clear()
    assert namespace.resolve(engine, "many_views", "nothing").kind == "missing"
    assert len(decoded) == 0
    assert db.top.find_one({}) is None  # the view still reads
    client.close()


@pytest.fixture
def view_lookups(monkeypatch):
    """(counts, on): how many times ``<db>.system.views`` is opened (every way of finding a view starts
    there) per database, while ``on["on"]`` is true."""
    from tidemark.storage.readview import ReadView

    counts: Counter = Counter()
    on = {"on": False}
    original = ReadView.get_collection

    def counting(self, ns):
        if on["on"] and ns.endswith(".system.views"):
            counts[ns.split(".", 1)[0]] += 1
        return original(self, ns)

    monkeypatch.setattr(ReadView, "get_collection", counting)
    return counts, on


@pytest.mark.parametrize("command", ["find", "insert", "update", "delete", "count", "regular insert"])
def test_a_command_resolves_its_namespace_once(ts_db, view_lookups, command):
    counts, on = view_lookups
    ts_db.create_collection("reg")
    since = T0 + datetime.timedelta(minutes=90)
    run = {
        "find": lambda: list(ts_db.ts.find({"t": {"$gte": since}})),
        "insert": lambda: ts_db.ts.insert_one({"t": T0, "m": 1, "v": -1}),
        "update": lambda: ts_db.ts.update_many({"m": 1}, {"$set": {"m": 4}}),
        "delete": lambda: ts_db.ts.delete_many({"m": 2, "t": {"$gte": since}}),
        "count": lambda: ts_db.command({"count": "ts", "query": {"t": {"$gte": since}}}),
        "regular insert": lambda: ts_db.reg.insert_one({"x": 1}),
    }[command]
    on["on"] = True
    run()
    on["on"] = False
    # a collection is found in the catalog first: no view lookup at all
    assert counts[ts_db.name] == (0 if command == "regular insert" else 1)


def test_time_series_aggregate_parses_its_leading_match_once(ts_db, counting):
    counts, on = counting
    since = T0 + datetime.timedelta(minutes=95)
    on["on"] = True
    docs = list(ts_db.ts.aggregate([{"$match": {"t": {"$gte": since}}}, {"$project": {"_id": 0, "v": 1}}]))
    on["on"] = False
    assert sorted(d["v"] for d in docs) == [95, 96, 97, 98, 99]
    assert counts["parse"] == 1
    assert counts["compile"] == 1


def test_time_series_aggregate_match_sees_let_variables(ts_db):
    docs = list(ts_db.ts.aggregate([{"$match": {"$expr": {"$lt": ["$v", "$$lim"]}}}], let={"lim": 2}))
    assert sorted(d["v"] for d in docs) == [0, 1]
