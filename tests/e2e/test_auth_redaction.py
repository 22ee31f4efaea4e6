"""Secrets never leave the server (issue 21, defect 5): a createUser/updateUser password and the SASL
payloads are hidden by one rule (tidemark.auth.redaction) wherever a command is shown — currentOp and
$currentOp while it runs (``redacted: true``), system.profile entries, the "Slow query" log line and
so getLog and the log file."""

from __future__ import annotations

import json
import threading
import time
import uuid

import bson
import pytest
from pymongo.errors import OperationFailure

from tidemark.auth.redaction import redact_command, sensitive_fields

DB = "redact_db"

pytestmark = pytest.mark.commands("createUser", "updateUser", "currentOp", "aggregate", "profile", "getLog",
                                  "saslStart", "saslContinue")


def test_one_rule_hides_the_sensitive_fields_without_touching_the_command():
    cmd = {"createUser": "u", "pwd": "secret", "roles": [], "$db": "d"}
    shown, redacted = redact_command(cmd)
    assert redacted and shown == {"createUser": "u", "pwd": "xxx", "roles": [], "$db": "d"}
    assert cmd["pwd"] == "secret"  # a copy
    assert redact_command({"find": "c", "pwd": "not a secret here"}) == ({"find": "c", "pwd": "not a secret here"},
                                                                         False)
    assert redact_command({"saslContinue": 1, "payload": b"p", "conversationId": 1})[0]["payload"] == "xxx"
    assert redact_command({"isMaster": 1, "speculativeAuthenticate": {"payload": b"p"}})[0] == {
        "isMaster": 1, "speculativeAuthenticate": "xxx"}
    assert sensitive_fields("ismaster") == sensitive_fields("hello") == {"speculativeAuthenticate"}


@pytest.fixture
def monitor(auth_server, root_client):
    name = f"mon_{uuid.uuid4().hex[:6]}"
    root_client.admin.command("createUser", name, pwd="pw", roles=["clusterMonitor"])
    client = auth_server.client(username=name, password="pw", authSource="admin")
    yield client
    client.close()
    root_client.admin.command("dropUser", name)


def _no_secret(value, secret: str) -> None:
    assert secret.encode() not in bson.encode({"v": value}), f"the secret shows in {value!r}"


def test_current_op_shows_a_running_create_user_without_its_password(auth_server, root_client, monitor):
    secret = f"S3cret-{uuid.uuid4().hex}"
    app = f"redact-{uuid.uuid4().hex[:8]}"
    admin_app = auth_server.client(username="root", password="rootpw", appName=app)
    root_client.admin.command("configureFailPoint", "failCommand", mode={"times": 1}, data={
        "failCommands": ["createUser"], "appName": app, "blockConnection": True, "blockTimeMS": 30_000})
    errors: list = []

    def run():
        try:
            admin_app[DB].command("createUser", "blocked_user", pwd=secret, roles=[])
        except OperationFailure as exc:
            errors.append(exc.code)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline, found = time.monotonic() + 20, []
        while not found and time.monotonic() < deadline:
            found = monitor.admin.command({"currentOp": 1, "command.createUser": "blocked_user"})["inprog"]
            time.sleep(0.02)
        assert found, "the blocked createUser is not in currentOp"
        entry = found[0]
        assert entry["redacted"] is True and entry["command"]["pwd"] == "xxx"
        assert entry["command"]["createUser"] == "blocked_user" and entry["command"]["roles"] == []
        everything = monitor.admin.command({"currentOp": 1, "$all": True})
        _no_secret(everything, secret)
        staged = list(monitor.admin.aggregate([{"$currentOp": {"allUsers": True, "truncateOps": False,
                                                               "idleConnections": True}}]))
        assert any(e.get("command", {}).get("pwd") == "xxx" for e in staged)
        _no_secret(staged, secret)
        root_client.admin.command("killOp", op=entry["opid"])
        thread.join(20)
        assert errors == [11601]
    finally:
        root_client.admin.command("configureFailPoint", "failCommand", mode="off")
        admin_app.close()
        thread.join(20)


def test_profiler_log_and_get_log_hide_passwords_and_sasl_payloads(auth_server, root_client):
    secret, secret2 = f"P-{uuid.uuid4().hex}", f"Q-{uuid.uuid4().hex}"
    db = root_client[DB]
    db.command("profile", 0)
    db.system.profile.drop()
    db.command("profile", 2, slowms=-1)  # profile everything and log every command as a slow query
    user = f"red_{uuid.uuid4().hex[:6]}"
    try:
        db.command("createUser", user, pwd=secret, roles=[])
        db.command("updateUser", user, pwd=secret2)
        with auth_server.client(username=user, password=secret2, authSource=DB) as client:
            client[DB].command("ping")  # saslStart / saslContinue ran against DB (SCRAM-SHA-256)
    finally:
        db.command("profile", 0, slowms=100)
        db.command("dropUser", user)
    entries = list(db.system.profile.find())
    by_name = {}
    for e in entries:
        by_name.setdefault(next(iter(e["command"])), []).append(e["command"])
    assert by_name["createUser"][0]["pwd"] == "xxx" and by_name["updateUser"][0]["pwd"] == "xxx"
    sasl = by_name.get("saslStart", []) + by_name.get("saslContinue", [])
    assert sasl and all(c["payload"] == "xxx" for c in sasl)
    for secret_text in (secret, secret2):
        _no_secret(entries, secret_text)
    lines = root_client.admin.command("getLog", "global")["log"]
    slow = [json.loads(line) for line in lines if '"Slow query"' in line and user in line]
    commands = {next(iter(s["attr"]["command"])): s["attr"]["command"] for s in slow}
    assert commands["createUser"]["pwd"] == "xxx" and commands["updateUser"]["pwd"] == "xxx"
    text = "\n".join(lines) + auth_server.log_text()
    assert secret not in text and secret2 not in text
