"""OP_MSG edges mongod 7.0 answers in its command layer, sent as raw bytes (no driver would send them).

The oracle is mongod's source:
- ``$db``: curOpCommandSetup names the operation's namespace from ``OpMsgRequest::getDatabase()`` before
  the command is looked up: absent 40571; present but not a string (null included: the element exists)
  ``BSONElement::chk`` 13111 "wrong type for field ($db) <type> != string" (StringBuilder prints a
  BSONType by its typeName).
- document sequences: a BasicCommand's parse (and explain's) calls CommandHelpers::
  uassertNoDocumentSequences, 40472 "The <name> command does not support document sequences."; a typed
  command's generated IDL parser reads sequences only when it declares a supports_doc_sequence field
  (insert, update, delete: another name is 40415), and find/getMore/aggregate/echo parse the body alone:
  any other command ignores them (arguments.SEQUENCES_REFUSED).
- order: ExecCommandDatabase::_parseCommand parses the API parameters of the whole body first (a repeated
  name 40413), then uassertShouldAttemptParse (admin-only 13, authentication 13), then the command's
  parse; the database name's validity (73) and requireApiVersion (498870) come later, in _initiateCommand.
- OpMsg::parse reads every sequence document as validated BSON while it reads the sections: an invalid
  one answers 22 before a later duplicate (40433) or checksum mismatch (288).
"""

from __future__ import annotations

import socket
import struct

import crc32c
import pytest
from bson import Binary, Code, DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from harness.server import raw_command, recv_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.server_api import ServerApi

from tidemark.arguments import SEQUENCES_REFUSED
from tidemark.dispatch import build_table
from tidemark.protocol import codec
from tidemark.protocol.framing import HEADER, OpCode
from tidemark.protocol.messages import CHECKSUM_PRESENT, decode_reply, encode_op_msg_request

DB = "body_wire_more"
_INT32 = struct.Struct("<i")
_TABLE = build_table()


def bson_body(*elements: tuple[str, object]) -> bytes:
    """A BSON document of ``elements`` in order, names repeated as given."""
    inner = b"".join(codec.encode({name: value})[4:-1] for name, value in elements)
    return _INT32.pack(len(inner) + 5) + inner + b"\x00"


def _error(reply: dict) -> tuple:
    return reply.get("code"), reply.get("codeName"), reply.get("errmsg")


# ---- $db -------------------------------------------------------------------------------------------

# one value of every BSON type but string, with mongod's typeName
_NOT_STRINGS = [
    (1.5, "double"), ({"a": 1}, "object"), (["admin"], "array"), (Binary(b"x"), "binData"),
    (ObjectId(), "objectId"), (True, "bool"), (Timestamp(1, 1), "timestamp"), (None, "null"),
    (Regex("a"), "regex"), (DBRef("c", 1), "object"), (Code("x"), "javascript"),
    (Code("x", {"a": 1}), "javascriptWithScope"), (7, "int"), (Int64(7), "long"),
    (Decimal128("1"), "decimal"), (MinKey(), "minKey"), (MaxKey(), "maxKey"),
]


@pytest.mark.commands("ping", "find")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(_NOT_STRINGS), command=st.sampled_from(["ping", "find", "noSuchCommand", "count"]))
def test_a_db_that_is_not_a_string_is_13111_before_the_command_is_looked_up(server, case, command):
    value, type_name = case
    reply = raw_command(server.port, bson_body((command, "c"), ("$db", value)))
    assert _error(reply) == (13111, "Location13111", f"wrong type for field ($db) {type_name} != string")


@pytest.mark.commands("ping")
def test_an_unknown_command_without_db_is_40571(server):
    reply = raw_command(server.port, bson_body(("noSuchCommand", 1)))
    assert _error(reply) == (40571, "Location40571", "OP_MSG requests require a $db argument")
    assert raw_command(server.port, {"noSuchCommand": 1, "$db": DB})["code"] == 59


# ---- document sequences ----------------------------------------------------------------------------

_REFUSING = sorted(name for name in SEQUENCES_REFUSED if not _TABLE[name].test_only)  # (the shared server's)


@pytest.mark.commands("ping", "count", "explain", "hello", "collMod", "serverStatus")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(_REFUSING), identifier=st.sampled_from(["zz", "documents", "query", "filter"]))
def test_a_basic_command_refuses_document_sequences(server, name, identifier):
    """Every command whose mongod class is a BasicCommand answers 40472 (its handler never runs)."""
    spec = _TABLE[name]
    db = "admin" if spec.admin_only else DB
    reply = raw_command(server.port, {name: 1, "$db": db}, sequences={identifier: [{"a": 1}]})
    assert _error(reply) == (40472, "Location40472", f"The {name} command does not support document sequences.")


def _comparable(reply: dict) -> dict:
    return {key: value for key, value in reply.items() if key not in ("operationTime", "$clusterTime")}


# commands mongod parses without looking at sequences, each with a sequence named like one of its fields
# (folded into the body, it would change the answer or be refused)
_IGNORING = [
    ({"find": "c", "sort": {"a": 1}}, "filter"), ({"find": "c"}, "sort"), ({"find": "c"}, "projection"),
    ({"aggregate": "c", "pipeline": [], "cursor": {}}, "let"), ({"listIndexes": "c"}, "cursor"),
    ({"listCollections": 1}, "filter"), ({"find": "c"}, "limit"), ({"usersInfo": 1}, "filter"),
    ({"rolesInfo": 1}, "showPrivileges"), ({"connectionStatus": 1}, "showPrivileges"),
    ({"listCollections": 1}, "nameOnly"),
]


@pytest.mark.commands("find", "aggregate", "listIndexes", "listCollections", "usersInfo", "rolesInfo",
                      "connectionStatus")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(_IGNORING), docs=st.lists(st.fixed_dictionaries({"a": st.integers(0, 3)}),
                                                        min_size=1, max_size=3))
def test_other_commands_ignore_document_sequences(server, client, case, docs):
    """The reply is the one the body alone gets: the sequence is not read as the field it names."""
    body, identifier = case
    if client[DB]["c"].estimated_document_count() == 0:
        client[DB]["c"].insert_many([{"a": 1}, {"a": 2}])
    alone = raw_command(server.port, {**body, "$db": DB})
    with_sequence = raw_command(server.port, {**body, "$db": DB}, sequences={identifier: docs})
    assert alone["ok"] == 1.0, alone
    assert _comparable(with_sequence) == _comparable(alone)


@pytest.mark.commands("insert")
def test_insert_still_reads_its_documents_sequence_and_refuses_another(server, client):
    reply = raw_command(server.port, {"insert": "ins", "$db": DB}, sequences={"documents": [{"_id": 1}]})
    assert reply == {"n": 1, "ok": 1.0}
    reply = raw_command(server.port, {"insert": "ins", "$db": DB},
                        sequences={"documents": [{"_id": 2}], "zz": [{}]})
    assert _error(reply) == (40415, "IDLUnknownField", "BSON field 'insert.zz' is an unknown field.")


# ---- order against authorization ----------------------------------------------------------------------

@pytest.mark.commands("ping", "count", "find")
def test_a_repeated_name_is_40413_before_authentication(auth_server):
    """mongod parses the API parameters of the body before any authorization check: an unauthenticated
    client is told of the name it repeated itself, nothing of the server."""
    for command in ("ping", "count", "find", "noSuchCommand"):
        reply = raw_command(auth_server.port, bson_body((command, "c"), ("x", 1), ("x", 2), ("$db", DB)))
        if command == "noSuchCommand":
            assert reply["code"] == 59
            continue
        assert _error(reply) == (40413, "IDLDuplicateField",
                                 "BSON field 'APIParametersFromClient.x' is a duplicate field"), command
    reply = raw_command(auth_server.port, {"count": "c", "$db": DB})
    assert _error(reply) == (13, "Unauthorized", "Command count requires authentication")


@pytest.mark.commands("shutdown", "ping")
def test_a_repeated_name_is_40413_before_the_admin_only_and_database_name_checks(server):
    reply = raw_command(server.port, bson_body(("shutdown", 1), ("x", 1), ("x", 2), ("$db", DB)))
    assert reply["code"] == 40413, reply
    reply = raw_command(server.port, bson_body(("ping", 1), ("x", 1), ("x", 2), ("$db", "a b")))
    assert reply["code"] == 40413, reply
    assert raw_command(server.port, {"ping": 1, "$db": "a b"})["code"] == 73


@pytest.mark.commands("count", "ping")
def test_sequences_on_a_basic_command_are_refused_after_authentication(auth_server):
    reply = raw_command(auth_server.port, {"count": "c", "$db": DB}, sequences={"zz": [{}]})
    assert reply["code"] == 13, reply
    reply = raw_command(auth_server.port, {"ping": 1, "$db": DB}, sequences={"zz": [{}]})  # (ping needs no user)
    assert reply["code"] == 40472, reply


@pytest.mark.slow
@pytest.mark.commands("setParameter", "count")
def test_require_api_version_comes_after_authentication(start_server):
    """enforceRequireAPIVersion runs in _initiateCommand, after authorization: an unauthenticated client
    without apiVersion is 13 for a command that needs a user (498870 only once it may run it)."""
    server = start_server(args=("--auth",), params={"enableTestCommands": 1})
    with server.client() as bootstrap:
        bootstrap.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
    with server.client(username="root", password="rootpw", server_api=ServerApi("1")) as root:
        root.admin.command("setParameter", 1, requireApiVersion=True)
        reply = raw_command(server.port, {"count": "c", "$db": DB})
        assert _error(reply) == (13, "Unauthorized", "Command count requires authentication")
        assert raw_command(server.port, {"ping": 1, "$db": DB})["code"] == 498870
        assert root[DB].command("count", "c")["ok"] == 1.0


# ---- invalid sequence documents against later section errors -----------------------------------------

# framed as a document (length, trailing NUL), but with an element of an unknown type (0x99)
_INVALID_DOCUMENT = _INT32.pack(12) + b"\x99a\x00\x01\x02\x03\x04\x00"


def _frame(body: dict, identifier: str, *, checksum: str) -> bytes:
    """An OP_MSG of ``body`` and a sequence ``identifier`` holding one valid and one invalid document;
    ``checksum``: "none", "good" or "bad"."""
    payload = identifier.encode() + b"\x00" + codec.encode({"_id": 1}) + _INVALID_DOCUMENT
    sections = b"\x00" + codec.encode(body) + b"\x01" + _INT32.pack(4 + len(payload)) + payload
    flags = CHECKSUM_PRESENT if checksum != "none" else 0
    size = 16 + 4 + len(sections) + (4 if checksum != "none" else 0)
    message = HEADER.pack(size, 7, 0, OpCode.OP_MSG) + struct.pack("<I", flags) + sections
    if checksum != "none":
        crc = crc32c.crc32c(message)
        message += struct.pack("<I", crc if checksum == "good" else crc ^ 1)
    return message


@pytest.mark.commands("insert", "update", "delete")
@pytest.mark.parametrize("command, identifier", [("insert", "documents"), ("update", "updates"),
                                                 ("delete", "deletes")])
@pytest.mark.parametrize("checksum", ["none", "good", "bad"])
def test_invalid_bson_in_a_sequence_is_22_before_a_checksum_mismatch(server, command, identifier, checksum):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(_frame({command: "seq", "$db": DB}, identifier, checksum=checksum))
        reply = decode_reply(recv_frame(sock))
        assert reply["code"] == 22 and reply["codeName"] == "InvalidBSON", reply
        sock.sendall(encode_op_msg_request({"ping": 1, "$db": DB}, 8))  # (not fatal: the connection stays)
        assert decode_reply(recv_frame(sock))["ok"] == 1.0


@pytest.mark.commands("insert")
def test_invalid_bson_in_a_sequence_is_22_before_a_duplicate_field(server):
    frame = _frame({"insert": "seq", "documents": [], "$db": DB}, "documents", checksum="bad")
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(frame)
        assert decode_reply(recv_frame(sock))["code"] == 22


@pytest.mark.commands("insert")
def test_a_bad_checksum_over_valid_sequences_is_still_288(server):
    payload = b"documents\x00" + codec.encode({"_id": 1})
    sections = b"\x00" + codec.encode({"insert": "seq", "$db": DB}) + b"\x01" + _INT32.pack(4 + len(payload)) + payload
    message = HEADER.pack(16 + 4 + len(sections) + 4, 7, 0, OpCode.OP_MSG) + struct.pack("<I", CHECKSUM_PRESENT)
    message += sections
    message += struct.pack("<I", crc32c.crc32c(message) ^ 1)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(message)
        with pytest.raises(ConnectionError):
            recv_frame(sock)  # 288 is fatal: mongod closes the connection without a reply
