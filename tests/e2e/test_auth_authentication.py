"""Authentication as mongod does it: SCRAM-SHA-1 / SCRAM-SHA-256 through pymongo (both mechanisms and
the default negotiation), speculative authentication in hello, saslSupportedMechs, logout,
connectionStatus, one user per connection, and failures that do not tell whether a user exists."""

from __future__ import annotations

import base64
import json
import socket
import uuid

import pymongo
import pytest
from bson.binary import Binary
from pymongo.errors import OperationFailure

from bench.scram_client import Conversation, authenticate, command

pytestmark = pytest.mark.commands("saslStart", "saslContinue", "logout", "connectionStatus")


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _uri(server, user: str, password: str, **params) -> str:
    query = "&".join(["directConnection=true", *(f"{k}={v}" for k, v in params.items())])
    return f"mongodb://{user}:{password}@127.0.0.1:{server.port}/?{query}"


def _sock(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-1", "SCRAM-SHA-256", None])
def test_pymongo_authenticates_with_each_mechanism_and_by_negotiation(auth_server, root_client, mechanism):
    user = _name("app")
    root_client.admin.command("createUser", user, pwd="s3cret", roles=[{"role": "readWrite", "db": "authapp"}])
    params = {"authSource": "admin"} | ({"authMechanism": mechanism} if mechanism else {})
    with pymongo.MongoClient(_uri(auth_server, user, "s3cret", **params)) as client:
        client.authapp.c.insert_one({"by": user})
        assert client.authapp.c.count_documents({"by": user}) == 1
        status = client.admin.command("connectionStatus")["authInfo"]
        assert status["authenticatedUsers"] == [{"user": user, "db": "admin"}]
    log = auth_server.log_text()
    expected = mechanism or "SCRAM-SHA-256"  # drivers prefer SHA-256 when the server lists it
    assert any(f'"principalName":"{user}"' in line and f'"mechanism":"{expected}"' in line and '"id":20250' in line
               for line in log.splitlines())


def test_a_user_of_another_database_authenticates_with_its_auth_source(auth_server, root_client):
    user = _name("local")
    root_client.authother.command("createUser", user, pwd="pw", roles=["read"])
    root_client.authother.c.insert_one({"x": 1})
    with pymongo.MongoClient(_uri(auth_server, user, "pw", authSource="authother")) as client:
        assert client.authother.c.find_one({}, {"_id": 0}) == {"x": 1}
    with pymongo.MongoClient(_uri(auth_server, user, "pw", authSource="admin"),
                             serverSelectionTimeoutMS=10000) as client:
        with pytest.raises(OperationFailure) as failure:
            client.authother.c.find_one()
        assert failure.value.code == 18


def test_wrong_password_and_unknown_user_fail_alike_and_are_logged_without_the_password(auth_server, root_client):
    user = _name("victim")
    root_client.admin.command("createUser", user, pwd="right-password", roles=[])
    replies = []
    for name, password in ((user, "wrong-password-1"), (_name("ghost"), "wrong-password-2")):
        with pymongo.MongoClient(_uri(auth_server, name, password), serverSelectionTimeoutMS=10000) as client:
            with pytest.raises(OperationFailure) as failure:
                client.admin.command("ping")
            replies.append(failure.value.details)
    assert replies[0] == replies[1] == {"ok": 0.0, "errmsg": "Authentication failed.", "code": 18,
                                        "codeName": "AuthenticationFailed"}
    log = auth_server.log_text()
    failed = [json.loads(line) for line in log.splitlines() if '"id":20249' in line and user in line]
    assert failed and failed[-1]["c"] == "ACCESS" and failed[-1]["msg"] == "Authentication failed"
    assert set(failed[-1]["attr"]) >= {"mechanism", "principalName", "authenticationDatabase", "remote", "error"}
    assert "wrong-password" not in log and "right-password" not in log


def test_hello_answers_sasl_supported_mechs_per_user(auth_server, root_client):
    sha1_only = _name("sha1")
    root_client.admin.command("createUser", sha1_only, pwd="pw", roles=[], mechanisms=["SCRAM-SHA-1"])
    with _sock(auth_server) as sock:
        reply = command(sock, {"hello": 1, "saslSupportedMechs": f"admin.{sha1_only}", "$db": "admin"})
        assert reply["saslSupportedMechs"] == ["SCRAM-SHA-1"]
        unknown = command(sock, {"hello": 1, "saslSupportedMechs": "admin.nobody", "$db": "admin"})
        assert unknown["saslSupportedMechs"] == ["SCRAM-SHA-1", "SCRAM-SHA-256"]
        bad = command(sock, {"hello": 1, "saslSupportedMechs": "nodot", "$db": "admin"})
        assert bad["ok"] == 0 and bad["code"] == 2
    # pymongo negotiates SCRAM-SHA-1 for this user from the hello reply.
    with pymongo.MongoClient(_uri(auth_server, sha1_only, "pw")) as client:
        assert client.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"][0]["user"] == sha1_only


def test_speculative_authentication_finishes_in_one_sasl_continue(auth_server):
    conv = Conversation("root", "rootpw")
    with _sock(auth_server) as sock:
        hello = command(sock, {"hello": 1, "$db": "admin", "speculativeAuthenticate": {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(conv.first()),
            "options": {"skipEmptyExchange": True}, "db": "admin"}})
        first = hello["speculativeAuthenticate"]
        assert set(first) == {"conversationId", "done", "payload"} and first["done"] is False
        final = command(sock, {"saslContinue": 1, "conversationId": first["conversationId"],
                               "payload": Binary(conv.final(bytes(first["payload"]))), "$db": "admin"})
        assert final["ok"] == 1 and final["done"] is True
        conv.verify(bytes(final["payload"]))
        assert command(sock, {"listDatabases": 1, "nameOnly": True, "$db": "admin"})["ok"] == 1
        # A speculative step that cannot start is simply absent (the client runs saslStart itself).
        hello = command(sock, {"hello": 1, "$db": "admin", "speculativeAuthenticate": {
            "saslStart": 1, "mechanism": "PLAIN", "payload": Binary(b"x"), "db": "admin"}})
        assert hello["ok"] == 1 and "speculativeAuthenticate" not in hello


def test_without_skip_empty_exchange_the_conversation_takes_one_more_step(auth_server):
    conv = Conversation("root", "rootpw", "SCRAM-SHA-1")
    with _sock(auth_server) as sock:
        start = command(sock, {"saslStart": 1, "mechanism": "SCRAM-SHA-1", "payload": Binary(conv.first()),
                               "$db": "admin"})
        assert start["conversationId"] == 1 and start["done"] is False
        second = command(sock, {"saslContinue": 1, "conversationId": 1,
                                "payload": Binary(conv.final(bytes(start["payload"]))), "$db": "admin"})
        assert second["done"] is False
        conv.verify(bytes(second["payload"]))
        last = command(sock, {"saslContinue": 1, "conversationId": 1, "payload": Binary(b""), "$db": "admin"})
        assert last["ok"] == 1 and last["done"] is True and bytes(last["payload"]) == b""


def test_base64_string_payloads_are_answered_as_strings(auth_server):
    conv = Conversation("root", "rootpw")
    with _sock(auth_server) as sock:
        start = command(sock, {"saslStart": 1, "mechanism": "SCRAM-SHA-256",
                               "payload": base64.b64encode(conv.first()).decode(),
                               "options": {"skipEmptyExchange": True}, "$db": "admin"})
        assert isinstance(start["payload"], str)
        final = command(sock, {"saslContinue": 1, "conversationId": 1, "$db": "admin",
                               "payload": base64.b64encode(conv.final(base64.b64decode(start["payload"]))).decode()})
        assert final["done"] is True
        conv.verify(base64.b64decode(final["payload"]))


def test_logout_ends_the_authentication(auth_server):
    with _sock(auth_server) as sock:
        authenticate(sock, "root", "rootpw")
        assert command(sock, {"listDatabases": 1, "$db": "admin"})["ok"] == 1
        assert command(sock, {"logout": 1, "$db": "admin"}) == {"ok": 1.0}
        after = command(sock, {"listDatabases": 1, "$db": "admin"})
        assert (after["code"], after["errmsg"]) == (13, "Command listDatabases requires authentication")
        status = command(sock, {"connectionStatus": 1, "$db": "admin"})
        assert status["authInfo"] == {"authenticatedUsers": [], "authenticatedUserRoles": []}


def test_connection_status_shows_the_user_roles_and_privileges(auth_server, root_client):
    user = _name("status")
    root_client.admin.command("createUser", user, pwd="pw", roles=[{"role": "read", "db": "statusdb"}])
    with pymongo.MongoClient(_uri(auth_server, user, "pw")) as client:
        info = client.admin.command("connectionStatus", showPrivileges=True)["authInfo"]
    assert info["authenticatedUsers"] == [{"user": user, "db": "admin"}]
    assert info["authenticatedUserRoles"] == [{"role": "read", "db": "statusdb"}]
    privileges = {json.dumps(p["resource"], sort_keys=True): p["actions"] for p in info["authenticatedUserPrivileges"]}
    assert "find" in privileges['{"collection": "", "db": "statusdb"}']
    assert "insert" not in privileges['{"collection": "", "db": "statusdb"}']


def test_a_connection_authenticates_one_user_only(auth_server, root_client):
    other = _name("other")
    root_client.admin.command("createUser", other, pwd="pw", roles=[])
    with _sock(auth_server) as sock:
        authenticate(sock, "root", "rootpw")
        authenticate(sock, "root", "rootpw")  # the same user again is fine
        conv = Conversation(other, "pw")
        start = command(sock, {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": Binary(conv.first()),
                               "options": {"skipEmptyExchange": True}, "$db": "admin"})
        final = command(sock, {"saslContinue": 1, "conversationId": 1, "$db": "admin",
                               "payload": Binary(conv.final(bytes(start["payload"])))})
        assert final["ok"] == 0 and final["code"] == 5626701
        assert "Previously authenticated as: root@admin" in final["errmsg"]
        assert command(sock, {"connectionStatus": 1, "$db": "admin"})["authInfo"]["authenticatedUsers"] == [
            {"user": "root", "db": "admin"}]


def test_authentication_works_with_access_control_off(start_server):
    # mongod accepts SCRAM even without --auth (nothing is enforced, but connectionStatus shows the user).
    server = start_server()
    name = _name("noauth")
    with server.client() as client:
        client.admin.command("createUser", name, pwd="pw", roles=["readAnyDatabase"])
    with server.client(username=name, password="pw") as authed:
        assert authed.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"][0]["user"] == name
        authed.authoff.c.insert_one({"x": 1})  # not enforced
