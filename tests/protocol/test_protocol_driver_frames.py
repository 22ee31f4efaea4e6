"""Frames captured from real drivers (tests/protocol/frames/*.bin, see tests/README.md) parse as expected."""

from __future__ import annotations

from pathlib import Path

from tidemark.protocol.messages import OpMsg, OpQuery, decode_message

FRAMES = Path(__file__).parent / "frames"


def _frame(name: str) -> bytes:
    return (FRAMES / f"{name}.bin").read_bytes()


def test_pymongo_4_20_sends_its_handshake_as_op_msg():
    request = decode_message(_frame("pymongo_handshake"))
    assert isinstance(request, OpMsg)
    assert next(iter(request.command)) == "ismaster"
    assert request.command["helloOk"] is True
    assert request.command["$db"] == "admin"
    assert request.command["client"]["driver"]["name"].startswith("PyMongo")


def test_mongosh_sends_legacy_op_query_ismaster_to_admin_cmd():
    request = decode_message(_frame("mongosh_handshake"))
    assert isinstance(request, OpQuery)
    assert request.full_collection_name == "admin.$cmd"
    assert request.number_to_return == -1
    assert next(iter(request.query)) == "ismaster"
    assert request.query["client"]["application"]["name"].startswith("mongosh")
    assert request.query["compression"] == ["none"]


def test_node_driver_sends_legacy_op_query_ismaster():
    request = decode_message(_frame("node_handshake"))
    assert isinstance(request, OpQuery)
    assert request.query["client"]["driver"]["name"] == "nodejs"


def test_pymongo_insert_many_uses_a_kind_1_documents_sequence():
    request = decode_message(_frame("pymongo_insert_many"))
    assert isinstance(request, OpMsg)
    assert request.sequence_ids == ("documents",)
    assert next(iter(request.command)) == "insert"
    assert [doc["i"] for doc in request.command["documents"].decode()] == list(range(5))
