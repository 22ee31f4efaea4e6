"""Where mongod 7.0 checks a command's ``$db`` name, against the other checks of a request (raw OP_MSG:
drivers refuse such names).

The oracle is mongod's source:
- curOpCommandSetup names the operation's namespace ``<$db>.$cmd`` before the command is looked up; the
  DatabaseName it builds refuses a dot ("'.' is an invalid character in a db name: <db>") and then a NUL
  ("database names cannot have embedded null characters"), both 73: before 59 for an unknown command,
  40413 for a repeated name, admin-only and authentication (13), 40472 for document sequences.
- every other rule of a name is NamespaceString::validDBName (DollarInDbNameBehavior::Allow): not empty,
  under 64 bytes, none of ``/ \\ . " `` space or NUL — checked in ExecCommandDatabase::_initiateCommand
  (73 "Invalid database name: '<db>'"), after the pre-parse authorization checks
  (uassertShouldAttemptParse: admin-only, authentication) and the command's parse (a BasicCommand's 40472
  for document sequences), before help and the user's privileges (checkAuthorization).
- an authenticated user without the command's privilege who sends document sequences to a BasicCommand
  is told 40472 (the parse), not 13; such a user asking for ``help`` gets it (help is answered before
  checkAuthorization); another user's lsid.uid is refused (makeLogicalSessionId, in
  initializeOperationSessionInfo) before the name's check and help.
"""

from __future__ import annotations

import socket
import uuid

import pytest
from bson import Binary
from harness.server import raw_command, recv_frame
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bench.scram_client import authenticate
from tidemark.auth.names import UserName, session_digest
from tidemark.protocol import codec
from tidemark.protocol.messages import decode_reply, encode_op_msg_request

DB = "db_name_order"


def _body(*elements: tuple[str, object]) -> bytes:
    """A BSON document of ``elements`` in order, names repeated as given."""
    inner = b"".join(codec.encode({name: value})[4:-1] for name, value in elements)
    return (len(inner) + 5).to_bytes(4, "little") + inner + b"\x00"


def _error(reply: dict) -> tuple:
    return reply.get("code"), reply.get("codeName"), reply.get("errmsg")


def _valid_db_name(db: str) -> bool:
    """NamespaceString::validDBName with '$' allowed (a command's database), on Linux."""
    return 0 < len(db.encode()) < 64 and not any(c in db for c in '/\\. "\x00')


# names near every rule: the refused characters, '$', multi-byte characters (the limit counts bytes)
_NAMES = st.one_of(
    st.text(st.sampled_from(list('ab$./\\ "\x00-_é€😀')), max_size=8),
    st.builds(lambda n, tail: "a" * n + tail, st.integers(10, 66), st.sampled_from(["", "é", "€", "😀", ".", "$"])),
    st.builds(lambda n: "é" * n, st.integers(28, 34)),
)


def _expected(command: str, db: str, *, repeated: bool, sequence: bool) -> tuple | None:
    """mongod 7.0's answer to ``{command: "c", $db: db}`` (None: it runs)."""
    if "." in db:
        return 73, "InvalidNamespace", f"'.' is an invalid character in a db name: {db}"
    if "\x00" in db:
        return 73, "InvalidNamespace", "database names cannot have embedded null characters"
    if command == "noSuchCommand":
        return 59, "CommandNotFound", "no such command: 'noSuchCommand'"
    if repeated:
        return 40413, "IDLDuplicateField", "BSON field 'APIParametersFromClient.x' is a duplicate field"
    if command == "shutdown":  # (admin-only, and never sent to admin here)
        return 13, "Unauthorized", "shutdown may only be run against the admin database."
    if sequence and command in ("ping", "count"):
        return 40472, "Location40472", f"The {command} command does not support document sequences."
    if not _valid_db_name(db):
        return 73, "InvalidNamespace", f"Invalid database name: '{db}'"
    return None


@pytest.mark.commands("ping", "count", "shutdown")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(db=_NAMES, command=st.sampled_from(["ping", "count", "noSuchCommand", "shutdown"]),
       repeated=st.booleans(), sequence=st.booleans())
def test_a_db_name_is_checked_where_mongod_checks_it(server, db, command, repeated, sequence):
    assume(db != "admin")
    elements: list[tuple[str, object]] = [(command, "c")]
    if repeated:
        elements += [("x", 1), ("x", 2)]
    reply = raw_command(server.port, _body(*elements, ("$db", db)),
                        sequences={"zz": [{"a": 1}]} if sequence else None)
    expected = _expected(command, db, repeated=repeated, sequence=sequence)
    if expected is None:
        assert reply["ok"] == 1.0, (db, reply)
    else:
        assert _error(reply) == expected, (db, reply)


@pytest.mark.commands("ping")
def test_names_at_the_length_limit_count_bytes(server):
    for db, valid in (("a" * 63, True), ("a" * 64, False), ("é" * 31 + "a", True), ("é" * 32, False),
                      ("😀" * 15 + "abc", True), ("😀" * 16, False), ("$external", True), ("", False)):
        reply = raw_command(server.port, {"ping": 1, "$db": db})
        if valid:
            assert reply["ok"] == 1.0, (db, reply)
        else:
            assert _error(reply) == (73, "InvalidNamespace", f"Invalid database name: '{db}'"), (db, reply)


# ---- with access control --------------------------------------------------------------------------

@pytest.mark.commands("count", "ping", "noSuchCommand")
def test_an_unauthenticated_client_is_told_it_needs_a_user_before_an_invalid_name(auth_server):
    reply = raw_command(auth_server.port, {"count": "c", "$db": "a b"})
    assert _error(reply) == (13, "Unauthorized", "Command count requires authentication")
    reply = raw_command(auth_server.port, {"ping": 1, "$db": "a b"})  # (ping needs no user)
    assert _error(reply) == (73, "InvalidNamespace", "Invalid database name: 'a b'")
    reply = raw_command(auth_server.port, {"count": "c", "$db": "a.b"})
    assert _error(reply) == (73, "InvalidNamespace", "'.' is an invalid character in a db name: a.b")
    reply = raw_command(auth_server.port, {"noSuchCommand": 1, "$db": "a\x00b"})
    assert _error(reply) == (73, "InvalidNamespace", "database names cannot have embedded null characters")


@pytest.fixture
def unprivileged(auth_server, root_client):
    """(db, user, password) of a user with no role at all, created for the test."""
    db = f"noprivs_{uuid.uuid4().hex[:8]}"
    root_client[db].command("createUser", "nobody", pwd="pw-nobody", roles=[])
    yield db, "nobody", "pw-nobody"
    root_client[db].command("dropUser", "nobody")


def _send(sock: socket.socket, body: dict, sequences: dict | None = None) -> dict:
    sock.sendall(encode_op_msg_request(body, 7, sequences=sequences))
    return decode_reply(recv_frame(sock))


@pytest.mark.commands("count", "distinct", "ping")
def test_a_user_without_the_privilege_is_answered_by_the_parse_before_the_privilege_check(auth_server, unprivileged):
    db, user, password = unprivileged
    with socket.create_connection(("127.0.0.1", auth_server.port), timeout=5) as sock:
        authenticate(sock, user, password, db=db)
        reply = _send(sock, {"count": "c", "$db": db})
        assert reply["code"] == 13 and reply["errmsg"].startswith(f"not authorized on {db} to execute"), reply
        for name in ("count", "distinct"):  # BasicCommands: their parse refuses sequences
            reply = _send(sock, {name: "c", "$db": db}, {"zz": [{"a": 1}]})
            assert _error(reply) == (40472, "Location40472",
                                     f"The {name} command does not support document sequences."), reply
        reply = _send(sock, {"count": "c", "$db": "a b"})  # the name before the privileges
        assert _error(reply) == (73, "InvalidNamespace", "Invalid database name: 'a b'")
        reply = _send(sock, {"count": "c", "help": True, "$db": db})  # help before the privileges
        assert reply["ok"] == 1.0 and "help" in reply, reply


@pytest.mark.commands("count")
def test_another_users_session_digest_is_refused_before_the_name_and_help(auth_server, unprivileged):
    """makeLogicalSessionId (initializeOperationSessionInfo) refuses an lsid.uid that is not the caller's
    own digest to a caller who may not impersonate: before validDBName and help, and before the session
    is used."""
    db, user, password = unprivileged
    lsid = {"id": Binary(uuid.uuid4().bytes, 4), "uid": Binary(session_digest(UserName("root", "admin")))}
    refused = (13, "Unauthorized", "Unauthorized to set user digest in LogicalSessionId")
    with socket.create_connection(("127.0.0.1", auth_server.port), timeout=5) as sock:
        authenticate(sock, user, password, db=db)
        assert _error(_send(sock, {"count": "c", "lsid": lsid, "$db": "a b"})) == refused
        assert _error(_send(sock, {"count": "c", "help": True, "lsid": lsid, "$db": db})) == refused
