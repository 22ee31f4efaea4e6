"""Command bodies as mongod 7.0 parses them off the wire: field names that repeat, OP_MSG sections and
their checksum, fields 7.0 no longer declares.

The oracle is mongod's source:
- rpc/op_msg.cpp ``OpMsg::parse``: the sections are read first (40430 two bodies, 40431 a repeated
  sequence, 40432 an unknown kind, 40587 no body, 40433 a sequence whose identifier — a dotted path,
  ``extractElementAtPathOrArrayAlongPath`` — is also in the body), the checksum last (288, fatal); a
  checksum flag on a message too short to hold one is 51252.
- the first IDL parse of the whole body is the API parameters' (``APIParametersFromClient``, a
  non-strict struct: its generated parser keeps a set of every other field name), so a body whose
  field names repeat answers 40413 IDLDuplicateField "BSON field 'APIParametersFromClient.<name>' is a
  duplicate field" at the first repeat, whatever the command — after the command is found (59 first)
  and unless an API parameter before it has the wrong type (checked first; a null is ignored).
- the command's own parser (``COMMAND_FIELDS``, tests/e2e/test_command_field_types.py) then reads the
  fields in document order: 14 for a declared field of the wrong type, 40415 for an undeclared one.
Bodies with repeated names cannot be built from a dict: they are written as BSON bytes here.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest
from bson import Int64, Regex
from harness.server import recv_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.arguments import COMMAND_FIELDS, GENERIC_ARGUMENTS
from tidemark.protocol import codec
from tidemark.protocol.messages import (
    CHECKSUM_PRESENT,
    decode_reply,
    encode_op_msg_request,
    encode_op_query_request,
)

COLL = "body_wire"
_INT32 = struct.Struct("<i")


def bson_body(*elements: tuple[str, object]) -> bytes:
    """A BSON document of ``elements`` in order, names repeated as given."""
    inner = b"".join(codec.encode({name: value})[4:-1] for name, value in elements)
    return _INT32.pack(len(inner) + 5) + inner + b"\x00"


class Wire:
    """One driverless connection: ``send(frame)`` returns the reply document."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def send(self, frame: bytes) -> dict:
        self.sock.sendall(frame)
        return decode_reply(recv_frame(self.sock))

    def command(self, body: bytes | dict, **kw) -> dict:
        return self.send(encode_op_msg_request(body, 1, **kw))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def wire(server):
    conn = Wire(server.port)
    yield conn
    conn.close()


def _error(reply: dict) -> tuple:
    return reply.get("code"), reply.get("codeName"), reply.get("errmsg")


def _duplicate(name: str) -> tuple:
    return 40413, "IDLDuplicateField", f"BSON field 'APIParametersFromClient.{name}' is a duplicate field"


@pytest.mark.commands("find", "ping", "insert", "count")
@pytest.mark.parametrize("elements, repeated", [
    ((("find", COLL), ("filter", {}), ("filter", {"a": 1})), "filter"),
    ((("find", COLL), ("find", "other")), "find"),  # the command name twice
    ((("find", COLL), ("$db", "x")), "$db"),  # (the fixture's $db comes first)
    ((("ping", 1), ("comment", "a"), ("comment", "b")), "comment"),
    ((("count", COLL), ("lsid", {"id": 1}), ("limit", 1), ("lsid", {"id": 2})), "lsid"),
    ((("find", COLL), ("bogus", 1), ("limit", 1), ("bogus", 2)), "bogus"),  # unknown, yet a repeat first
    ((("find", COLL), ("limit", "x"), ("limit", 1)), "limit"),  # wrong type, yet a repeat first
    ((("find", COLL), ("apiStrict", None), ("apiStrict", None), ("a", 1), ("a", 2)), "a"),  # nulls ignored
])
def test_a_repeated_field_name_is_refused_at_its_first_repeat(wire, elements, repeated):
    name, *rest = elements
    first = ("$db", "body_wire_db") if repeated == "$db" else None
    body = bson_body(name, *([first] if first else []), *rest, *([] if first else [("$db", "body_wire_db")]))
    assert _error(wire.command(body)) == _duplicate(repeated)


@pytest.mark.commands("find")
def test_an_api_parameter_of_the_wrong_type_before_the_repeat_is_reported_first(wire):
    reply = wire.command(bson_body(("find", COLL), ("apiStrict", 1), ("a", 1), ("a", 2), ("$db", "body_wire_db")))
    assert _error(reply) == (14, "TypeMismatch", "BSON field 'APIParametersFromClient.apiStrict' is the wrong "
                                                 "type 'int', expected type 'bool'")
    reply = wire.command(bson_body(("find", COLL), ("a", 1), ("a", 2), ("apiStrict", 1), ("$db", "body_wire_db")))
    assert _error(reply) == _duplicate("a")


@pytest.mark.commands("isMaster")
def test_a_legacy_op_query_handshake_with_a_repeated_field_is_refused_the_same_way(wire):
    query = bson_body(("isMaster", 1), ("helloOk", True), ("helloOk", True))
    reply = wire.send(encode_op_query_request("admin.$cmd", query, 1))
    assert _error(reply) == _duplicate("helloOk")
    assert wire.send(encode_op_query_request("admin.$cmd", {"isMaster": 1}, 2))["ok"] == 1.0


@pytest.mark.commands("ping")
@pytest.mark.parametrize("field, value, expected", [
    ("apiVersion", 1, "type 'int', expected type 'string'"),
    ("apiStrict", "yes", "type 'string', expected type 'bool'"),
    ("apiDeprecationErrors", 1.5, "type 'double', expected type 'bool'"),
])
def test_an_api_parameter_of_the_wrong_type_is_named_by_its_parser(client, field, value, expected):
    """mongod parses them with IDLParserContext("APIParametersFromClient"): the path says so."""
    cmd = {"ping": 1, field: value, **({"apiVersion": "1"} if field != "apiVersion" else {})}
    reply = client.admin.command(cmd, check=False)
    assert _error(reply) == (14, "TypeMismatch", f"BSON field 'APIParametersFromClient.{field}' is the wrong {expected}")


@pytest.mark.commands("find")
def test_an_unknown_command_is_not_found_before_its_fields_are_read(wire):
    reply = wire.command(bson_body(("noSuchCommand", 1), ("a", 1), ("a", 1), ("$db", "body_wire_db")))
    assert reply["code"] == 59, reply


@pytest.mark.commands("insert")
def test_a_refused_write_with_a_repeated_field_writes_nothing(wire, client):
    db = client["body_wire_db"]
    db[COLL].drop()
    reply = wire.command(bson_body(("insert", COLL), ("documents", [{"_id": 1}]), ("ordered", True),
                                   ("ordered", False), ("$db", "body_wire_db")))
    assert _error(reply) == _duplicate("ordered")
    assert db[COLL].count_documents({}) == 0
    assert wire.command({"ping": 1, "$db": "admin"})["ok"] == 1.0  # the connection stays usable


@pytest.mark.commands("find")
def test_the_first_value_of_a_repeated_db_names_the_database(wire):
    """Everything before the API parameters' parse reads the first occurrence (BSONObj::getField)."""
    reply = wire.command(bson_body(("find", COLL), ("$db", 5), ("$db", "body_wire_db")))
    assert _error(reply) == (13111, "Location13111", "wrong type for field ($db) int != string")


@pytest.mark.commands("find", "aggregate", "count", "distinct", "insert", "update", "delete", "findAndModify")
@pytest.mark.parametrize("command, field", [
    ("find", "maxScan"), ("find", "snapshot"),
])
def test_fields_removed_before_7_0_are_unknown(client, command, field):
    reply = client["body_wire_db"].command({command: COLL, field: 1}, check=False)
    assert _error(reply) == (40415, "IDLUnknownField", f"BSON field '{command}.{field}' is an unknown field.")


# ------------------------------------------------------------------------------------------------
# OP_MSG sections and checksum (rpc/op_msg.cpp)
# ------------------------------------------------------------------------------------------------

def _with_bad_checksum(frame: bytes) -> bytes:
    flags = _INT32.unpack_from(frame, 16)[0] | CHECKSUM_PRESENT
    body = frame[:16] + _INT32.pack(flags) + frame[20:]
    return _INT32.pack(len(body) + 4) + body[4:] + b"\xde\xad\xbe\xef"


@pytest.mark.commands("ping")
def test_sections_are_parsed_before_the_checksum_is_verified(wire):
    two_bodies = encode_op_msg_request({"ping": 1, "$db": "admin"}, 1) + b"\x00" + codec.encode({"x": 1})
    frame = _INT32.pack(len(two_bodies)) + two_bodies[4:]
    assert _error(wire.send(_with_bad_checksum(frame))) == (40430, "Location40430", "Multiple body sections in message")
    assert wire.command({"ping": 1, "$db": "admin"})["ok"] == 1.0  # (40430 is not fatal)


@pytest.mark.commands("ping")
def test_a_bad_checksum_of_well_formed_sections_closes_the_connection(wire):
    wire.sock.sendall(_with_bad_checksum(encode_op_msg_request({"ping": 1, "$db": "admin"}, 1)))
    with pytest.raises((ConnectionError, OSError)):
        recv_frame(wire.sock)


@pytest.mark.commands("ping")
def test_a_checksum_flag_on_a_message_too_short_for_one_is_51252(wire):
    frame = struct.pack("<iiiiI", 24, 1, 0, 2013, CHECKSUM_PRESENT) + b"\x00\x00\x00\x00"
    reply = wire.send(frame)
    assert (reply["code"], reply["errmsg"]) == (51252, "Invalid message size for an OpMsg containing a checksum")


@pytest.mark.commands("ping")
def test_a_security_token_section_is_unauthorized_without_multitenancy(wire):
    """7.0's section kind 2 (a security token): refused with 13 at once, the connection kept."""
    frame = encode_op_msg_request({"ping": 1, "$db": "admin"}, 1) + b"\x02" + codec.encode({"t": 1})
    frame = _INT32.pack(len(frame)) + frame[4:]
    assert _error(wire.send(frame)) == (13, "Unauthorized", "Unsupported Security Token provided")
    assert wire.command({"ping": 1, "$db": "admin"})["ok"] == 1.0


@pytest.mark.commands("ping")
def test_a_body_naming_a_tenant_is_refused_without_multitenancy(wire):
    reply = wire.command({"ping": 1, "$tenant": 1, "$db": "admin"})
    assert _error(reply) == (72, "InvalidOptions", "Multitenancy not enabled, cannot set $tenant in command body")


@pytest.mark.commands("echo")
def test_echo_returns_the_body_without_its_document_sequences(start_server, tmp_path):
    """mongod's EchoCommand echoes ``request.body``; the sequences are not part of it (mongod returns
    them as reply sequences, which replies here never carry)."""
    wire = Wire(start_server(dbpath=tmp_path / "db", params={"enableTestCommands": 1}).port)
    reply = wire.command({"echo": 1, "a": [1], "$db": "admin"}, sequences={"docs": [{"x": 1}, {"x": 2}]})
    assert reply["ok"] == 1.0, reply
    assert reply["echo"] == {"echo": 1, "a": [1], "$db": "admin"}
    wire.close()


@pytest.mark.commands("insert", "update", "delete")
@pytest.mark.parametrize("body, sequence", [
    ({"insert": COLL, "documents": [{"_id": 1}]}, "ordered"),  # a declared field, but not a sequence one
    ({"insert": COLL}, "bogus"),
    ({"update": COLL, "updates": []}, "documents"),
    ({"delete": COLL, "deletes": []}, "updates"),
])
def test_a_sequence_that_is_not_the_commands_sequence_field_is_unknown(wire, client, body, sequence):
    """write_ops.idl's generated parser reads the sequences after the body: one that is not the
    command's sequence field is 40415, and nothing is written."""
    client["body_wire_db"][COLL].drop()
    command = next(iter(body))
    reply = wire.command({**body, "$db": "body_wire_db"}, sequences={sequence: [{"_id": 2}]})
    assert _error(reply) == (40415, "IDLUnknownField", f"BSON field '{command}.{sequence}' is an unknown field.")
    assert client["body_wire_db"][COLL].count_documents({}) == 0


@pytest.mark.commands("insert")
def test_the_bodys_fields_are_read_before_its_sequences(wire):
    reply = wire.command({"insert": COLL, "ordered": "x", "$db": "body_wire_db"},
                         sequences={"bogus": [{"_id": 2}], "documents": [{"_id": 3}]})
    assert reply["code"] == 14 and "insert.ordered" in reply["errmsg"], reply


@pytest.mark.commands("insert")
@pytest.mark.parametrize("body, clash", [
    ({"insert": COLL, "a": {"b": 1}}, True),  # a dotted identifier is a path into the body
    ({"insert": COLL, "a": [1]}, True),  # an array on the way counts
    ({"insert": COLL, "a": 5}, False),  # a scalar on the way: not there
    ({"insert": COLL, "a.b": 1}, False),  # the path's first step is "a", not the literal name
])
def test_a_dotted_sequence_identifier_clashes_with_the_body_path(wire, body, clash):
    reply = wire.command({**body, "$db": "body_wire_db"}, sequences={"a.b": [{"x": 1}]})
    if clash:
        assert _error(reply) == (40433, "Location40433", "Duplicate field between body and document sequence a.b")
    else:
        assert reply.get("code") != 40433, reply


# ------------------------------------------------------------------------------------------------
# The family: random bodies of every IDL-table command
# ------------------------------------------------------------------------------------------------

# a value each plainly typed IDL field takes (by the type's expected name)
_VALID = {"bool": True, "('bool', 'long', 'int', 'decimal', 'double')": 1, "('long', 'int', 'decimal', 'double')": 1,
          "int": 1, "long": Int64(1), "string": "x", "object": {}, "array": []}
# the required fields each command is sent with (then the drawn ones)
_BASE = {"find": [], "aggregate": [("pipeline", []), ("cursor", {})], "count": [], "distinct": [("key", "a")],
         "insert": [("documents", [{"x": 1}])], "update": [("updates", [{"q": {"_id": -1}, "u": {"$set": {"b": 1}}}])],
         "delete": [("deletes", [{"q": {"_id": -1}, "limit": 1}])],
         "findAndModify": [("query", {"_id": -1}), ("update", {"$set": {"b": 1}})],
         "getMore": [("collection", COLL)], "listCollections": [], "listIndexes": [],
         "createIndexes": [("indexes", [{"key": {"a": 1}, "name": "a_1"}])], "dropIndexes": [("index", "nope")],
         "create": [], "drop": [], "collMod": []}
_TARGET = {"getMore": Int64(4242), "listCollections": 1, "drop": "no_such_collection", "collMod": "no_such_collection"}


def _typed_fields(command: str) -> list[tuple[str, Any]]:
    return sorted((name, kind) for name, kind in COMMAND_FIELDS[command].items()
                  if kind is not None and str(kind.expected) in _VALID)


def _expected(command: str, elements: list[tuple[str, object]]) -> tuple[int, str] | None:
    """(code, text the message holds) of mongod's first refusal, or None when the fields parse."""
    seen: set[str] = set()
    for name, _ in elements:
        if name in seen:
            return _duplicate(name)[0], _duplicate(name)[2]
        seen.add(name)
    declared = COMMAND_FIELDS[command]
    for name, value in elements[1:]:
        if name in declared:
            if isinstance(value, Regex):  # (no IDL type takes a regex)
                kind = declared[name]
                return 14, (f"Field '{name}'" if kind is not None and kind.null_absent is False
                            and kind.expected == "bool" else f"'{command}.{name}'")
        elif name not in GENERIC_ARGUMENTS:
            return 40415, f"BSON field '{command}.{name}' is an unknown field."
    return None


@pytest.mark.slow
@pytest.mark.commands(*sorted(_BASE))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_bodies_answer_the_first_violation_in_mongods_order(server, client, data):
    """A command of the table, its required fields, then drawn declared fields (of their type or a
    regex, which no IDL type takes), unknown names and repeats of any of them, in a drawn order: the
    reply is the first violation as mongod meets it (a repeat, then the IDL walk), else whatever the
    command answers — never 1 InternalError — and the connection stays usable."""
    db = "body_wire_family"
    if data.draw(st.booleans()):
        client[db][COLL].drop()
        client[db][COLL].insert_one({"_id": 1, "a": 1})
    command = data.draw(st.sampled_from(sorted(_BASE)), label="command")
    typed = _typed_fields(command)
    drawn = data.draw(st.lists(st.sampled_from(typed), max_size=4, unique_by=lambda f: f[0]), label="fields") \
        if typed else []
    extra: list[tuple[str, object]] = list(_BASE[command]) + [("$db", db)]
    for name, kind in drawn:
        extra.append((name, Regex("never") if data.draw(st.booleans()) else _VALID[str(kind.expected)]))
    for unknown in data.draw(st.lists(st.sampled_from(["bogusField", "maxScan", "snapshot"]), max_size=2,
                                      unique=True), label="unknown"):
        extra.append((unknown, 1))
    extra = data.draw(st.permutations(extra), label="order")
    if data.draw(st.booleans()):  # a repeat of one of them (or of the command name), later
        index = data.draw(st.integers(0, len(extra)), label="repeat of")
        element = (command, COLL) if index == len(extra) else extra[index]
        at = data.draw(st.integers(index + 1 if index < len(extra) else 0, len(extra)), label="at")
        extra.insert(at, element)
    elements = [(command, _TARGET.get(command, COLL)), *extra]
    conn = Wire(server.port)
    try:
        reply = conn.command(bson_body(*elements))
        expected = _expected(command, elements)
        if expected is not None:
            code, text = expected
            assert reply.get("code") == code and text in reply.get("errmsg", ""), (elements, reply)
        else:
            assert reply.get("code") not in (1, 14, 40413, 40415), (elements, reply)
        assert conn.command({"ping": 1, "$db": "admin"})["ok"] == 1.0
    finally:
        conn.close()
