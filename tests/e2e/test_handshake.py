"""Handshake family end to end: hello/isMaster over OP_MSG and the legacy OP_QUERY, buildInfo, ping."""

from __future__ import annotations

import datetime
import socket
import struct

import pymongo
import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId
from harness import raw_command
from harness.server import recv_frame

from tidemark.protocol import compression
from tidemark.protocol.messages import decode_reply, encode_op_msg_request, encode_op_query_request


def _op_query(port: int, command: dict, *, ns: str = "admin.$cmd", number_to_return: int = -1) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(encode_op_query_request(ns, command, 7, number_to_return=number_to_return))
        frame = recv_frame(sock)
        assert int.from_bytes(frame[12:16], "little") == 1, "an OP_QUERY is answered with OP_REPLY"
        assert int.from_bytes(frame[8:12], "little") == 7, "responseTo echoes the requestID"
        assert int.from_bytes(frame[32:36], "little") == 1, "numberReturned is exactly 1"
        return decode_reply(frame)


@pytest.mark.commands("ping")
def test_pymongo_ping_succeeds(client):
    assert client.admin.command("ping") == {"ok": 1.0}


@pytest.mark.commands("buildinfo", "buildInfo")
def test_server_info_reports_mongodb_7_0(client):
    info = client.server_info()  # sends the lowercase `buildinfo`
    assert info["version"] == "7.0.0"
    assert info["versionArray"] == [7, 0, 0, 0]
    assert info["maxBsonObjectSize"] == 16 * 1024 * 1024
    assert "ferretdb" not in info
    assert "version" in info["tidemark"]
    assert client.admin.command("buildInfo")["version"] == "7.0.0"


@pytest.mark.commands("hello")
def test_hello_describes_a_standalone_writable_primary(client):
    reply = client.admin.command("hello")
    assert reply["isWritablePrimary"] is True
    assert reply["maxWireVersion"] == 21 and reply["minWireVersion"] == 0
    assert reply["maxBsonObjectSize"] == 16777216
    assert reply["maxMessageSizeBytes"] == 48000000
    assert reply["maxWriteBatchSize"] == 100000
    assert reply["logicalSessionTimeoutMinutes"] == 30
    assert isinstance(reply["localTime"], datetime.datetime)
    assert reply["readOnly"] is False
    assert isinstance(reply["connectionId"], int)
    for absent in ("setName", "hosts", "msg", "isreplicaset", "compression"):
        assert absent not in reply
    assert set(reply["topologyVersion"]) == {"processId", "counter"}  # mongod's: drivers stream


@pytest.mark.commands("isMaster", "ismaster")
def test_is_master_answers_with_ismaster_and_hello_ok(client):
    for name in ("isMaster", "ismaster"):
        reply = client.admin.command({name: 1, "helloOk": True})
        assert reply["ismaster"] is True
        assert reply["helloOk"] is True
        assert "isWritablePrimary" not in reply


@pytest.mark.commands("ismaster")
def test_legacy_op_query_handshake_gets_op_reply(server):
    reply = _op_query(
        server.port, {"ismaster": 1, "helloOk": True, "client": {"driver": {"name": "t", "version": "1"}}}
    )
    assert reply["ok"] == 1.0
    assert reply["ismaster"] is True and reply["helloOk"] is True
    assert reply["maxWireVersion"] == 21


@pytest.mark.commands("hello")
def test_op_query_unwraps_dollar_query_form(server):
    reply = _op_query(server.port, {"$query": {"hello": 1}, "$readPreference": {"mode": "primary"}})
    assert reply["ok"] == 1.0 and reply["isWritablePrimary"] is True


@pytest.mark.commands("ping")
def test_op_query_refuses_commands_other_than_the_handshake(server):
    reply = _op_query(server.port, {"ping": 1})
    assert reply["ok"] == 0.0
    assert reply["code"] == 352 and reply["codeName"] == "UnsupportedOpQueryCommand"


LEGACY_ADVICE = ("The client driver may require an upgrade. For more details see "
                 "https://dochub.mongodb.org/core/legacy-opcode-removal")


def test_op_query_on_a_collection_gets_query_failure(server):
    reply = _op_query(server.port, {"x": 1}, ns="test.coll")
    assert reply == {"$err": f"OP_QUERY is no longer supported. {LEGACY_ADVICE}", "code": 5739101, "ok": 0.0}


@pytest.mark.commands("buildinfo", "buildInfo", "_isSelf", "authenticate")
def test_op_query_runs_what_mongod_still_allows(server):
    """check_allowed_op_query_cmd.cpp: the handshakes and the temporarily allowed commands; another
    command is 352 with mongod's advice (op_legacy_integration_test.cpp)."""
    for name in ("buildinfo", "buildInfo"):
        assert _op_query(server.port, {name: 1})["version"] == "7.0.0"
    assert isinstance(_op_query(server.port, {"_isSelf": 1})["id"], ObjectId)
    assert _op_query(server.port, {"authenticate": 1, "mechanism": "MONGODB-X509"})["code"] == 18
    refused = _op_query(server.port, {"drop": "c"})
    assert refused["errmsg"] == f"Unsupported OP_QUERY command: drop. {LEGACY_ADVICE}"


@pytest.mark.commands("_isSelf")
def test_is_self_names_this_process(client):
    first = client.admin.command("_isSelf")["id"]
    assert first == client.admin.command("_isSelf")["id"]
    assert first == client.admin.command("hello")["topologyVersion"]["processId"]


@pytest.mark.parametrize("body", [struct.pack("<i", 0) + b"test.c\0" + struct.pack("<iq", 0, 12345), b""])
def test_op_get_more_gets_query_failure_and_keeps_the_connection(server, body):
    """mongod's GetMoreOpRunner answers an OP_GET_MORE (its body unread) with an OP_REPLY error and
    the connection stays open; OP_INSERT/UPDATE/DELETE/KILL_CURSORS end it (as mongod)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(struct.pack("<iiii", 16 + len(body), 9, 0, 2005) + body)
        frame = recv_frame(sock)
        assert int.from_bytes(frame[8:12], "little") == 9 and int.from_bytes(frame[12:16], "little") == 1
        assert int.from_bytes(frame[16:20], "little") & 2, "QueryFailure is set"
        assert decode_reply(frame) == {"$err": f"OP_GET_MORE is no longer supported. {LEGACY_ADVICE}",
                                       "code": 5739101, "ok": 0.0}
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": "admin"}, 10))
        assert decode_reply(recv_frame(sock)) == {"ok": 1.0}


@pytest.mark.parametrize("op_code", [2001, 2002, 2006, 2007])
def test_legacy_write_and_kill_cursors_opcodes_end_the_connection(server, op_code):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        body = struct.pack("<i", 0) + b"test.c\0" + struct.pack("<i", 0)
        sock.sendall(struct.pack("<iiii", 16 + len(body), 9, 0, op_code) + body)
        assert sock.recv(16) == b""


def test_op_query_with_bad_number_to_return_is_refused(server):
    reply = _op_query(server.port, {"ismaster": 1}, number_to_return=5)
    assert reply["ok"] == 0.0 and reply["code"] == 16979


@pytest.mark.commands("hello")
def test_client_metadata_cannot_be_sent_twice(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        metadata = {"driver": {"name": "t", "version": "1"}, "os": {"type": "Linux"}}
        sock.sendall(encode_op_msg_request({"hello": 1, "client": metadata, "$db": "admin"}, 1))
        assert decode_reply(recv_frame(sock))["ok"] == 1.0
        sock.sendall(encode_op_msg_request({"hello": 1, "client": metadata, "$db": "admin"}, 2))
        reply = decode_reply(recv_frame(sock))
        assert reply["ok"] == 0.0 and reply["codeName"] == "ClientMetadataCannotBeMutated"


@pytest.mark.commands("hello")
def test_hello_advertises_only_shared_compressors_in_client_order(server):
    reply = raw_command(server.port, {"hello": 1, "compression": ["lz4", "zstd", "zlib"], "$db": "admin"})
    assert reply["compression"] == ["zstd", "zlib"]
    reply = raw_command(server.port, {"hello": 1, "compression": ["none"], "$db": "admin"})
    assert "compression" not in reply


# pymongo needs backports.zstd for zstd (not installed): zstd is covered with raw frames below.
@pytest.mark.parametrize("compressor", ["zlib", "snappy"])
@pytest.mark.commands("ping", "serverStatus")
def test_pymongo_works_over_each_compressor(server, compressor):
    with pymongo.MongoClient(server.uri, compressors=compressor, serverSelectionTimeoutMS=5000) as compressed:
        assert compressed.admin.command("ping")["ok"] == 1.0
        status = compressed.admin.command("serverStatus")
        assert status["ok"] == 1.0 and status["version"] == "7.0.0"


@pytest.mark.parametrize("compressor", ["zlib", "zstd", "snappy"])
@pytest.mark.commands("ping")
def test_compressed_request_gets_reply_compressed_the_same_way(server, compressor):
    request = compression.compress(
        encode_op_msg_request({"ping": 1, "$db": "admin"}, 9), compression.compressor_id(compressor)
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(request)
        frame = recv_frame(sock)
    assert int.from_bytes(frame[12:16], "little") == 2012
    assert frame[24] == compression.compressor_id(compressor)
    assert decode_reply(frame) == {"ok": 1.0}


@pytest.mark.commands("whatsmyuri")
def test_whatsmyuri_returns_the_client_address(client):
    you = client.admin.command("whatsmyuri")["you"]
    host, _, port = you.rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0


def test_unknown_command_is_command_not_found(client):
    with pytest.raises(pymongo.errors.OperationFailure) as info:
        client.admin.command("definitelyNotACommand")
    assert info.value.code == 59
    assert info.value.details["errmsg"] == "no such command: 'definitelyNotACommand'"
    assert info.value.details["codeName"] == "CommandNotFound"


def test_atlas_version_is_command_not_found(client):
    with pytest.raises(pymongo.errors.OperationFailure) as info:
        client.admin.command("atlasVersion")
    assert info.value.code == 59


@pytest.mark.commands("ping")
def test_op_msg_without_db_is_rejected(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(encode_op_msg_request({"ping": 1}, 3))
        reply = decode_reply(recv_frame(sock))
    assert reply["ok"] == 0.0 and reply["code"] == 40571


@pytest.mark.commands("ping")
def test_help_argument_returns_the_commands_help(client):
    assert "responding" in client.admin.command({"ping": 1, "help": True})["help"]


@pytest.mark.commands("hello")
def test_max_time_ms_is_validated(client):
    with pytest.raises(pymongo.errors.OperationFailure) as info:
        client.admin.command({"hello": 1, "maxTimeMS": -1})
    assert info.value.code == 2
    assert client.admin.command({"hello": 1, "maxTimeMS": Int64(1000)})["ok"] == 1.0


@pytest.mark.parametrize("compressor", ["zlib", "zstd", "snappy"])
@pytest.mark.commands("ping", "serverStatus")
def test_server_status_counts_compressed_bytes(client, server, compressor):
    """serverStatus network.compression (the Go driver's TestCompression reads it): per compressor, what
    the decompressor was given (the compressed frame) and produced (the frame it wrapped), and what the
    compressor was given and produced, growing by exactly one request and its reply."""
    def counters():
        return client.admin.command("serverStatus")["network"]["compression"]

    assert set(counters()) == {"snappy", "zstd", "zlib"}
    before = counters()[compressor]
    plain = encode_op_msg_request({"ping": 1, "$db": "admin"}, 9)
    request = compression.compress(plain, compression.compressor_id(compressor))
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(request)
        frame = recv_frame(sock)
    after = counters()[compressor]
    assert after["decompressor"]["bytesIn"] - before["decompressor"]["bytesIn"] == len(request)
    assert after["decompressor"]["bytesOut"] - before["decompressor"]["bytesOut"] == len(plain)
    assert after["compressor"]["bytesOut"] - before["compressor"]["bytesOut"] == len(frame)
    assert after["compressor"]["bytesIn"] - before["compressor"]["bytesIn"] == len(
        compression.decompress(frame)[0])
