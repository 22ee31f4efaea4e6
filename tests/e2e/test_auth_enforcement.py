"""No auth bypass: with --auth every command of the table except the handshake/authentication ones
answers 13 to an unauthenticated client (also with odd arguments); the localhost exception allows
exactly the first user; malformed SCRAM conversations answer 17/18 and never crash; a user acting on
another database, another user's cursor or a pipeline writing elsewhere is refused."""

from __future__ import annotations

import random
import socket
import uuid

import pymongo
import pytest
from bson.binary import Binary
from pymongo.errors import OperationFailure

from bench import wire_fuzz
from bench.scram_client import Conversation, authenticate, command
from tidemark.auth.rules import OPEN, RULES
from tidemark.dispatch import build_table

TABLE = build_table()


def _sock(server, host="127.0.0.1") -> socket.socket:
    return socket.create_connection((host, server.port), timeout=10)


def _unauthenticated_reply(server, name: str, value) -> dict:
    spec = TABLE[name]
    with _sock(server) as sock:
        return command(sock, {name: value, "$db": "admin" if spec.admin_only else "authtarget"})


def test_every_command_has_a_rule_and_only_handshake_and_auth_commands_are_open():
    assert {spec.name for spec in TABLE.values()} <= set(RULES)
    open_commands = {name for name, rule in RULES.items() if rule is OPEN}
    assert open_commands == {"_isSelf", "authenticate", "buildInfo", "connectionStatus", "hello", "isMaster",
                             "listCommands", "logout", "ping", "saslContinue", "saslStart",
                             "echo"}  # (a test command: mongod's EchoCommand::requiresAuth is false)


@pytest.mark.parametrize("name", sorted(n for n, s in TABLE.items() if RULES[s.name] is not OPEN))
def test_unauthenticated_commands_answer_13(auth_server, name):
    rng = random.Random(name)
    values = [1, "c", {"x": 1}, [1, "a"], rng.random(), None, "system.users", Binary(b"\x00" * 8)]
    for value in values[:4] + rng.sample(values[4:], 2):
        reply = _unauthenticated_reply(auth_server, name, value)
        assert reply["ok"] == 0 and reply["code"] == 13, (name, value, reply)
        canonical = TABLE[name].name
        assert reply["errmsg"] in (f"Command {canonical} requires authentication",
                                   f"{canonical} may only be run against the admin database.")


@pytest.mark.commands("buildInfo", "ping", "hello", "connectionStatus", "listCommands", "authenticate")
def test_handshake_and_auth_commands_answer_without_authentication(auth_server):
    with _sock(auth_server) as sock:
        for cmd in ({"hello": 1}, {"isMaster": 1}, {"buildInfo": 1}, {"ping": 1}, {"connectionStatus": 1},
                    {"listCommands": 1}, {"logout": 1}):
            assert command(sock, {**cmd, "$db": "admin"})["ok"] == 1, cmd
        listed = command(sock, {"listCommands": 1, "$db": "admin"})["commands"]
        assert listed["hello"]["requiresAuth"] is False and listed["find"]["requiresAuth"] is True
        reply = command(sock, {"authenticate": 1, "mechanism": "MONGODB-X509", "$db": "admin"})
        assert (reply["code"], reply["errmsg"]) == (18, "Authentication failed.")
        reply = command(sock, {"authenticate": 1, "mechanism": "MONGODB-CR", "user": "root", "$db": "admin"})
        assert reply["code"] == 18


# -- the localhost exception ------------------------------------------------------------------------------


@pytest.mark.slow
def test_localhost_exception_allows_only_the_first_user(start_server):
    server = start_server(args=("--auth",))
    with server.client() as conn:
        # listDatabases checks nothing and lists the databases of no privilege (mongod:
        # listcommands_preauth_base.js; tests/e2e/test_auth_list_databases_localhost.py)
        assert conn.admin.command("listDatabases")["databases"] == []
        with pytest.raises(OperationFailure) as failure:  # only in admin
            conn.other.command("createUser", "x", pwd="pw", roles=[])
        assert failure.value.code == 13
        with pytest.raises(OperationFailure) as failure:  # and only roles of admin
            conn.admin.command("createUser", "x", pwd="pw", roles=[{"role": "read", "db": "other"}])
        assert failure.value.code == 13
        with pytest.raises(OperationFailure):  # viewing users is not part of the exception
            conn.admin.command("usersInfo", 1)
        conn.admin.command("createUser", "first", pwd="pw", roles=["userAdminAnyDatabase"])
        with pytest.raises(OperationFailure) as failure:  # the exception closed with the first user
            conn.admin.command("createUser", "second", pwd="pw", roles=[])
        assert (failure.value.code, failure.value.details["errmsg"]) == (
            13, "Command createUser requires authentication")
    with server.client(username="first", password="pw") as admin:
        admin.admin.command("createUser", "second", pwd="pw", roles=[])


@pytest.mark.slow
def test_localhost_exception_can_be_disabled(start_server):
    server = start_server(args=("--auth",), params={"enableLocalhostAuthBypass": "false"})
    with server.client() as conn, pytest.raises(OperationFailure) as failure:
        conn.admin.command("createUser", "first", pwd="pw", roles=["root"])
    assert failure.value.details["errmsg"] == "Command createUser requires authentication"


def _external_address() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


@pytest.mark.slow
def test_localhost_exception_does_not_apply_to_remote_connections(start_server):
    address = _external_address()
    if address is None:
        pytest.skip("no non-loopback IPv4 address on this machine")
    server = start_server(args=("--auth", "--bind_ip", f"127.0.0.1,{address}"))
    with _sock(server, address) as sock:
        reply = command(sock, {"createUser": "first", "pwd": "pw", "roles": ["root"], "$db": "admin"})
    assert (reply["code"], reply["errmsg"]) == (13, "Command createUser requires authentication")


# -- malformed SCRAM --------------------------------------------------------------------------------------


def _start(sock, conv: Conversation, **extra) -> dict:
    return command(sock, {"saslStart": 1, "mechanism": conv.mechanism, "payload": Binary(conv.first()),
                          "options": {"skipEmptyExchange": True}, "$db": "admin", **extra})


def _continue(sock, payload: bytes, conversation_id=1) -> dict:
    return command(sock, {"saslContinue": 1, "conversationId": conversation_id, "payload": Binary(payload),
                          "$db": "admin"})


def _assert_failed(reply: dict, code: int = 18) -> None:
    assert reply["ok"] == 0 and reply["code"] == code, reply
    if code == 18:
        assert reply["errmsg"] == "Authentication failed."


def test_malformed_sasl_commands(auth_server):
    with _sock(auth_server) as sock:
        _assert_failed(_continue(sock, b"c=biws"), 17)  # no conversation
        assert command(sock, {"saslStart": 1, "mechanism": "PLAIN", "payload": Binary(b"\0root\0pw"),
                              "$db": "admin"})["code"] == 334
        assert command(sock, {"saslStart": 1, "payload": Binary(b"x"), "$db": "admin"})["code"] == 40414
        assert command(sock, {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": 5, "$db": "admin"})[
            "code"] == 14
        conv = Conversation("root", "rootpw")
        first = _start(sock, conv)
        _assert_failed(_continue(sock, conv.final(bytes(first["payload"])), conversation_id=7), 17)
        for payload in (b"", b"n,,", b"n,,n=root", b"y,,n=root,r", b"p=tls-server-end-point,,n=root,r=abc",
                        b"\xff" * 64, b"n,,n=root,r=" + b"A" * (4 << 20)):
            _assert_failed(command(sock, {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(payload),
                                          "$db": "admin"}))
        assert command(sock, {"ping": 1, "$db": "admin"})["ok"] == 1  # the connection is still fine
        authenticate(sock, "root", "rootpw")


def test_wrong_nonce_truncated_final_and_replayed_proof_fail(auth_server):
    with _sock(auth_server) as sock:
        conv = Conversation("root", "rootpw")
        first = bytes(_start(sock, conv)["payload"])
        final = conv.final(first)
        _assert_failed(_continue(sock, final.replace(b"r=", b"r=X", 1)))  # wrong nonce
        _assert_failed(_continue(sock, final), 17)  # the conversation died with the failure
        conv = Conversation("root", "rootpw")
        first = bytes(_start(sock, conv)["payload"])
        _assert_failed(_continue(sock, conv.final(first)[:-10]))  # truncated proof
        # A proof that was good for one conversation is worthless in the next (new server nonce).
        conv = Conversation("root", "rootpw")
        good_final = conv.final(bytes(_start(sock, conv)["payload"]))
        assert _continue(sock, good_final)["done"] is True
        _start(sock, conv)
        _assert_failed(_continue(sock, good_final))
        _assert_failed(_continue(sock, good_final), 17)  # and nothing is left to continue
    log = auth_server.log_text()
    assert "Unmatched SCRAM nonce" in log


# -- acting beyond one's privileges --------------------------------------------------------------------


@pytest.fixture(scope="module")
def scoped_user(root_client):
    user = f"scoped_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createUser", user, pwd="pw", roles=[{"role": "readWrite", "db": "mine"}])
    root_client.mine.c.insert_many([{"i": i} for i in range(5)])
    root_client.theirs.c.insert_one({"secret": 1})
    return user


def _as(server, user):
    return pymongo.MongoClient(f"mongodb://{user}:pw@127.0.0.1:{server.port}/?directConnection=true")


def _refused(fn) -> dict:
    with pytest.raises(OperationFailure) as failure:
        fn()
    assert failure.value.code == 13, failure.value.details
    return failure.value.details


@pytest.mark.commands("aggregate", "renameCollection", "explain")
def test_pipelines_renames_and_explains_cannot_reach_other_databases(auth_server, scoped_user):
    with _as(auth_server, scoped_user) as conn:
        mine = conn.mine
        assert len(list(mine.c.aggregate([{"$match": {}}]))) == 5
        _refused(lambda: list(mine.c.aggregate([{"$out": {"db": "theirs", "coll": "stolen"}}])))
        _refused(lambda: list(mine.c.aggregate([{"$merge": {"into": {"db": "theirs", "coll": "c"}}}])))
        _refused(lambda: conn.admin.command("renameCollection", "mine.c", to="theirs.c"))
        _refused(lambda: conn.theirs.command("explain", {"find": "c"}))
        assert conn.mine.command("explain", {"find": "c"})["ok"] == 1
        _refused(lambda: list(conn.theirs.c.aggregate([{"$match": {}}])))
        _refused(lambda: conn.theirs.c.find_one())
        list(mine.c.aggregate([{"$out": "copy"}]))
        assert mine.copy.count_documents({}) == 5


@pytest.mark.commands("listDatabases", "listCollections")
def test_listings_show_only_what_the_user_may_see(auth_server, root_client, scoped_user):
    with _as(auth_server, scoped_user) as conn:
        assert conn.list_database_names() == ["mine"]
        names = conn.mine.command("listCollections", nameOnly=True, authorizedCollections=True)
        assert {c["name"] for c in names["cursor"]["firstBatch"]} >= {"c"}
        _refused(lambda: conn.theirs.command("listCollections"))
        _refused(lambda: conn.admin.command("listDatabases", authorizedDatabases=False))
    assert "theirs" in root_client.list_database_names()


@pytest.mark.commands("getMore", "killCursors")
def test_cursors_belong_to_the_user_that_opened_them(auth_server, root_client, scoped_user):
    with _as(auth_server, scoped_user) as conn:
        own = conn.mine.command("find", "c", batchSize=1)["cursor"]["id"]
        assert conn.mine.command("getMore", own, collection="c", batchSize=1)["cursor"]["nextBatch"]
        foreign = root_client.mine.command("find", "c", batchSize=1)["cursor"]["id"]
        details = _refused(lambda: conn.mine.command("getMore", foreign, collection="c"))
        assert details["errmsg"] == f"cursor id {foreign} was not created by the authenticated user"
        _refused(lambda: conn.mine.command("killCursors", "c", cursors=[foreign]))
        assert conn.mine.command("killCursors", "c", cursors=[own])["cursorsKilled"] == [own]
    assert root_client.mine.command("killCursors", "c", cursors=[foreign])["cursorsKilled"] == [foreign]


@pytest.mark.slow
@pytest.mark.commands("listDatabases", "usersInfo")
def test_an_unauthenticated_wire_fuzzer_gets_nothing_but_the_open_commands(auth_server, root_client):
    """5,000 mutated frames of real requests (CRUD, aggregation, admin, compressed, OP_QUERY), none
    authenticated: every successful reply belongs to a handshake/authentication command, nothing is
    written and no user appears — and the server stays up without an InternalError."""
    users_before = root_client.admin.command("usersInfo")["users"]
    report = wire_fuzz.run(auth_server.port, 5_000, seed=77)
    open_commands = {name for name, rule in RULES.items() if rule is OPEN}
    bypassed = {name: n for name, n in report.accepted.items() if name not in open_commands}
    assert not bypassed, (bypassed, report.unnamed)
    assert report.replies > 1_000 and report.accepted  # frames reached the server and open ones succeeded
    assert not report.internal_errors and not report.leaks, (report.internal_errors + report.leaks)[:3]
    assert report.hangs == 0 and report.unanswered_pings == 0, report.summary()
    assert wire_fuzz.DB not in root_client.list_database_names()
    assert root_client.admin.command("usersInfo")["users"] == users_before
