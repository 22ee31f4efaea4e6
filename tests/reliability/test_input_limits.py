"""Legal and near-legal input gets mongod's answer, never 1 InternalError: the limits mongod enforces
(pipeline length, BSON depth, sub-pipeline depth, namespace length, write batch size, stored-document
depth, generated documents, a message section's document size) with its codes, and deep-but-legal
input simply works."""

from __future__ import annotations

import datetime
import socket

import bson
import pytest
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.datetime_ms import DatetimeMS
from harness import raw_command
from harness.server import recv_frame
from pymongo.errors import BulkWriteError, OperationFailure

from tidemark.protocol.messages import decode_reply, encode_op_msg_request


def _error(server, command: dict) -> dict:
    reply = raw_command(server.port, command, timeout=60)
    assert reply["ok"] == 0.0, reply
    assert reply["code"] != 1 and "Error:" not in reply["errmsg"], reply
    return reply


def _nested_add(levels: int):
    expr: object = "$a"
    for _ in range(levels):
        expr = {"$add": [expr, 1]}
    return expr


@pytest.mark.commands("aggregate")
def test_pipeline_length_and_nesting_limits(server, db):
    db.c.insert_one({"_id": 1, "a": 1})
    assert len(list(db.c.aggregate([{"$match": {}}] * 1000))) == 1  # mongod accepts 1000 stages
    reply = _error(server, {"aggregate": "c", "pipeline": [{"$match": {}}] * 1001, "cursor": {}, "$db": db.name})
    assert reply["code"] == 7749501 and reply["errmsg"] == "Pipeline length must be no longer than 1000 stages."
    # 97 nested $add are ~199 BSON levels: legal, and evaluated without running out of recursion
    assert list(db.c.aggregate([{"$project": {"x": _nested_add(97)}}]))[0]["x"] == 98
    reply = _error(server, {"aggregate": "c", "pipeline": [{"$project": {"x": _nested_add(110)}}], "cursor": {},
                            "$db": db.name})
    assert reply["code"] == 15 and reply["errmsg"] == "BSONObj exceeds maximum nested object depth"
    deep_filter: dict = {"a": 1}
    for _ in range(98):
        deep_filter = {"$and": [deep_filter]}
    assert len(list(db.c.find(deep_filter))) == 1
    lookup: list = [{"$match": {}}]
    for _ in range(21):
        lookup = [{"$lookup": {"from": "c", "pipeline": lookup, "as": "x"}}]
    reply = _error(server, {"aggregate": "c", "pipeline": lookup, "cursor": {}, "$db": db.name})
    assert reply["code"] == 232 and reply["codeName"] == "MaxSubPipelineDepthExceeded"


@pytest.mark.commands("aggregate", "insert")
def test_dates_at_and_past_the_64_bit_range(server, db):
    db = db.with_options(codec_options=CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO))
    db.d.insert_many([{"_id": 1, "d": DatetimeMS(-2**63)}, {"_id": 2, "d": DatetimeMS(2**63 - 1)},
                      {"_id": 3, "d": datetime.datetime(2020, 1, 1)}])
    assert [d["_id"] for d in db.d.find().sort("d", 1)] == [1, 3, 2]
    years = {d["_id"]: d["y"] for d in db.d.aggregate([{"$project": {"y": {"$year": "$d"}}}])}
    assert years[1] < 0 < years[3] < years[2]
    for expr, code in (({"$toDate": 1e300}, 241), ({"$toDate": -1e300}, 241), ({"$add": ["$d", 1]}, 15),
                       # (truncateDate builds a year's bin by dateAdd from its reference: dateAdd's 5166406)
                       ({"$dateTrunc": {"date": "$d", "unit": "year"}}, 5166406),
                       ({"$convert": {"input": 1e300, "to": "date"}}, 241)):
        reply = _error(server, {"aggregate": "d", "pipeline": [{"$project": {"x": expr}}], "cursor": {},
                                "$db": db.name})
        assert reply["code"] == code, expr
    converted = list(db.d.aggregate([{"$project": {"x": {"$convert": {"input": 1e300, "to": "date", "onError": "bad"}}}}]))
    assert {d["x"] for d in converted} == {"bad"}


@pytest.mark.commands("insert", "find", "create")
def test_namespaces_longer_than_255_bytes(server, db):
    for command in ({"insert": "x" * 100_000, "documents": [{"a": 1}]}, {"find": "x" * 300},
                    {"create": "x" * 300}, {"aggregate": "x" * 100_000, "pipeline": [], "cursor": {}}):
        reply = _error(server, {**command, "$db": db.name})
        assert reply["code"] == 73 and "namespace is too long" in reply["errmsg"], command
        assert len(reply["errmsg"]) < 1000
    db["y" * (250 - len(db.name))].insert_one({"ok": True})  # 255 bytes: fine


@pytest.mark.slow
@pytest.mark.commands("insert", "update", "delete")
def test_write_batches_over_100000_statements(server, db):
    db.create_collection("ts", timeseries={"timeField": "t"})
    for command, field, doc in (("insert", "documents", {"a": 1}), ("update", "updates", {"q": {}, "u": {"$set": {"a": 1}}}),
                                ("delete", "deletes", {"q": {}, "limit": 0})):
        for coll in ("c", "ts") if command == "insert" else ("c",):
            reply = raw_command(server.port, {command: coll, "$db": db.name}, timeout=120,
                                sequences={field: [doc] * 100_001})
            assert reply["ok"] == 0.0 and reply["code"] == 16, reply
            assert reply["errmsg"] == "Write batch sizes must be between 1 and 100000. Got 100001 operations."
    assert db.c.count_documents({}) == 0 and db.ts.count_documents({}) == 0
    reply = raw_command(server.port, {"insert": "c", "$db": db.name}, timeout=120,
                        sequences={"documents": [{"i": i} for i in range(100_000)]})
    assert reply == {"n": 100_000, "ok": 1.0}


@pytest.mark.commands("insert", "find")
def test_document_and_command_depth(server, db):
    def nested(levels: int) -> dict:
        doc: dict = {"leaf": 1}
        for _ in range(levels):
            doc = {"a": doc}
        return doc

    db.c.insert_one({"_id": 1, "deep": nested(178)})  # 180 levels with the document and "deep"
    with pytest.raises(BulkWriteError) as err:
        db.c.insert_many([{"_id": 2, "deep": nested(179)}])
    assert err.value.details["writeErrors"][0]["code"] == 15
    assert "180 levels of nesting" in err.value.details["writeErrors"][0]["errmsg"]
    assert db.c.count_documents({}) == 1
    reply = _error(server, {"find": "c", "filter": {"deep": nested(250)}, "$db": db.name})
    assert reply["code"] == 15
    with pytest.raises(OperationFailure):
        db.c.find_one({"deep": nested(250)})


@pytest.mark.slow
@pytest.mark.commands("aggregate")
def test_densify_generates_at_most_500000_documents(server, db):
    db.t.insert_many([{"t": datetime.datetime(1, 1, 1)}, {"t": datetime.datetime(9999, 1, 1)}])
    reply = _error(server, {"aggregate": "t", "pipeline": [{"$densify": {"field": "t", "range": {
        "step": 1, "unit": "hour", "bounds": "full"}}}], "cursor": {}, "$db": db.name})
    assert reply["code"] == 5897900


@pytest.mark.commands("insert")
def test_a_section_document_past_16mb_plus_16kb_fails_the_request_and_keeps_the_connection(server, db):
    """mongod's OpMsg::parse: 10334 for a body or sequence document over 16,793,600 bytes, before the
    command runs (Tidemark answered a per-document error 2), and the connection serves the next request."""
    limit = 16 * 1024 * 1024 + 16 * 1024

    def sized(doc: dict, size: int) -> dict:
        doc = {**doc, "pad": ""}
        doc["pad"] = "x" * (size - len(bson.encode(doc)))
        return doc

    requests = [
        (sized({"insert": "c", "$db": db.name}, limit + 1), None, 'insert: "c"'),
        ({"insert": "c", "$db": db.name}, {"documents": [{"_id": 0}, sized({"_id": 1}, limit + 1)]}, "_id: 1"),
    ]
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        for request_id, (command, sequences, element) in enumerate(requests, 1):
            sock.sendall(encode_op_msg_request(command, request_id, sequences=sequences))
            reply = decode_reply(recv_frame(sock))
            assert reply == {"ok": 0.0, "code": 10334, "codeName": "BSONObjectTooLarge", "errmsg": (
                f"BSONObj size: {limit + 1} (0x{limit + 1:X}) is invalid. Size must be between 0 and "
                f"{limit}(16MB) First element: {element}")}
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": "admin"}, 9))
        assert decode_reply(recv_frame(sock))["ok"] == 1.0
    assert db.c.count_documents({}) == 0
