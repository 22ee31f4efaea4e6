"""configureFailPoint / failCommand as drivers' test runners use it (pymongo here, the Node driver in
tests/clients/test_failpoints_node.py): test commands only with --setParameter enableTestCommands=1."""

from __future__ import annotations

import threading
import time

import pytest
from harness import raw_command
from pymongo import MongoClient
from pymongo.errors import AutoReconnect, ExecutionTimeout, OperationFailure, WriteConcernError

pytestmark = pytest.mark.commands("configureFailPoint", "insert", "find", "ping", "getParameter")


@pytest.fixture
def testing(start_server):
    server = start_server(params={"enableTestCommands": 1})
    client = server.client()
    yield server, client
    client.admin.command("configureFailPoint", "failCommand", mode="off")
    client.close()


def _arm(client, mode, **data):
    return client.admin.command("configureFailPoint", "failCommand", mode=mode, data=data)


def test_test_commands_are_off_by_default_and_start_up_only(client):
    with pytest.raises(OperationFailure) as e:
        client.admin.command("configureFailPoint", "failCommand", mode="alwaysOn")
    assert e.value.code == 59
    assert client.admin.command("getParameter", "*")["enableTestCommands"] is False
    assert "configureFailPoint" not in client.admin.command("listCommands")["commands"]
    with pytest.raises(OperationFailure) as e:
        client.admin.command("setParameter", 1, enableTestCommands=True)
    assert e.value.code == 20


@pytest.mark.slow
def test_error_code_with_times_fails_exactly_that_many_commands(testing):
    server, client = testing
    assert client.admin.command("getParameter", "*")["enableTestCommands"] is True
    assert _arm(client, {"times": 2}, failCommands=["insert"], errorCode=8, errorLabels=["MyLabel"]) == {
        "count": 0, "ok": 1.0}
    coll = client.t.c
    for _ in range(2):
        with pytest.raises(OperationFailure) as e:
            coll.insert_one({})
        assert e.value.code == 8 and e.value.details["codeName"] == "UnknownError"
        assert e.value.details["errmsg"] == "Failing command via 'failCommand' failpoint"
        assert e.value.has_error_label("MyLabel")
    coll.insert_one({"ok": True})
    assert coll.count_documents({}) == 1  # the failed inserts wrote nothing
    assert _arm(client, "off")["count"] == 2


@pytest.mark.slow
def test_error_labels_of_the_code_and_of_the_fail_point(testing):
    """mongod's ErrorLabelBuilder: a code of the NonResumableChangeStreamError category (280, 286) gets
    that label and its codeName; a fail point's errorLabels replace the labels, and an empty list leaves
    none (getErrorLabels). Found by the PHP driver's suite (bug1419-001.phpt)."""
    server, client = testing
    for code, name in ((280, "ChangeStreamFatalError"), (286, "ChangeStreamHistoryLost")):
        _arm(client, {"times": 1}, failCommands=["find"], errorCode=code)
        with pytest.raises(OperationFailure) as e:
            client.t.c.find_one()
        assert e.value.details["codeName"] == name and e.value.details["errorLabels"] == [
            "NonResumableChangeStreamError"]
    _arm(client, {"times": 1}, failCommands=["find"], errorCode=280, errorLabels=[])
    with pytest.raises(OperationFailure) as e:
        client.t.c.find_one()
    assert e.value.code == 280 and "errorLabels" not in e.value.details
    _arm(client, {"times": 1}, failCommands=["find"], errorCode=8, errorLabels=[])
    with pytest.raises(OperationFailure) as e:
        client.t.c.find_one()
    assert "errorLabels" not in e.value.details
    _arm(client, {"times": 1}, failCommands=["find"], errorCode=286, errorLabels=["Mine"])
    with pytest.raises(OperationFailure) as e:
        client.t.c.find_one()
    assert e.value.details["errorLabels"] == ["Mine"]


@pytest.mark.slow
def test_skip_and_always_on_and_probability(testing):
    server, client = testing
    _arm(client, {"skip": 1}, failCommands=["find"], errorCode=2)
    client.t.c.find_one()
    for _ in range(2):
        with pytest.raises(OperationFailure):
            client.t.c.find_one()
    _arm(client, {"activationProbability": 0.0}, failCommands=["find"], errorCode=2)
    client.t.c.find_one()
    _arm(client, "alwaysOn", failCommands=["find"], errorCode=2)
    with pytest.raises(OperationFailure):
        client.t.c.find_one()
    client.t.c.insert_one({})  # other commands run
    with pytest.raises(OperationFailure) as e:
        _arm(client, {"times": "x"}, failCommands=["find"])
    assert e.value.code == 14  # (bsonExtractIntegerField's TypeMismatch)
    with pytest.raises(OperationFailure) as e:
        client.admin.command("configureFailPoint", "noSuchFailPoint", mode="alwaysOn")
    assert e.value.code == 266  # FailPointSetFailed (error_codes.yml)


def test_app_name_limits_the_failure_to_one_application(testing):
    server, client = testing
    _arm(client, "alwaysOn", failCommands=["ping"], errorCode=11, appName="victim")
    victim = MongoClient(server.uri, appName="victim")
    with pytest.raises(OperationFailure):
        victim.admin.command("ping")
    client.admin.command("ping")
    victim.close()


@pytest.mark.slow
def test_close_connection_drops_the_connection_without_a_reply(testing):
    server, client = testing
    _arm(client, {"times": 1}, failCommands=["insert"], closeConnection=True)
    with pytest.raises(AutoReconnect):
        client.t.c.insert_one({"x": 1})
    client.t.c.insert_one({"x": 2})
    assert [d["x"] for d in client.t.c.find()] == [2]


@pytest.mark.slow
def test_block_connection_delays_only_that_command(testing):
    server, client = testing
    _arm(client, {"times": 1}, failCommands=["find"], blockConnection=True, blockTimeMS=3000)
    other = server.client()
    done = []
    blocked = threading.Thread(target=lambda: done.append(client.t.c.find_one()))
    started = time.monotonic()
    blocked.start()
    time.sleep(0.2)
    other.admin.command("ping")
    other.t.d.insert_one({})
    assert time.monotonic() - started < 2.8 and not done  # served while the blocked find waits
    blocked.join()
    assert time.monotonic() - started >= 2.9 and done == [None]
    other.close()


@pytest.mark.slow
def test_write_concern_error_is_added_to_a_command_that_ran(testing):
    server, client = testing
    _arm(client, {"times": 1}, failCommands=["insert"],
         writeConcernError={"code": 91, "codeName": "ShutdownInProgress", "errmsg": "Replication is being shut down"})
    with pytest.raises(WriteConcernError) as e:
        client.t.c.insert_one({"w": 1})
    assert e.value.code == 91
    assert client.t.c.count_documents({"w": 1}) == 1  # the write itself happened


@pytest.mark.slow
def test_pymongo_retries_a_read_that_failed_with_a_retryable_code(testing):
    server, client = testing
    client.t.c.insert_one({"r": 1})
    _arm(client, {"times": 1}, failCommands=["find"], errorCode=6)  # HostUnreachable: retryable read
    assert client.t.c.find_one({"r": 1})["r"] == 1
    assert _arm(client, "off")["count"] == 1


@pytest.mark.slow
@pytest.mark.commands("hello", "getMore")
def test_app_name_matches_the_first_hello_of_a_connection(testing):
    server, client = testing
    _arm(client, {"times": 1}, failCommands=["hello", "isMaster"], errorCode=91, appName="firstHelloApp")
    hello = {"hello": 1, "$db": "admin", "client": {"application": {"name": "firstHelloApp"},
                                                     "driver": {"name": "raw", "version": "0"}}}
    reply = raw_command(server.port, hello)
    assert reply["code"] == 91 and reply["errmsg"] == "Failing command via 'failCommand' failpoint"
    assert raw_command(server.port, hello)["ok"] == 1.0  # times: 1 spent


@pytest.mark.slow
def test_max_time_always_time_out_and_fail_get_more(testing):
    server, client = testing
    coll = client.t.mt
    coll.insert_many([{"i": i} for i in range(5)])
    admin = client.admin
    admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="alwaysOn")
    try:
        with pytest.raises(ExecutionTimeout) as e:
            list(coll.find().max_time_ms(10_000))
        assert e.value.code == 50
        assert len(list(coll.find())) == 5  # no maxTimeMS: runs
    finally:
        assert admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="off")["count"] == 1
    assert len(list(coll.find().max_time_ms(10_000))) == 5
    client.t.many.insert_many([{} for _ in range(200)])
    cursor = client.t.many.find().max_time_ms(10_000)  # a cursor keeps its maxTimeMS for its getMores
    next(cursor)
    admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="alwaysOn")
    try:
        with pytest.raises(ExecutionTimeout):
            list(cursor)
        assert len(list(coll.find(batch_size=2))) == 5  # a cursor without maxTimeMS is not touched
    finally:
        admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="off")
    admin.command("configureFailPoint", "failGetMoreAfterCursorCheckout", mode={"times": 1},
                  data={"errorCode": 6})
    cursor = coll.find(batch_size=2)
    next(cursor)
    with pytest.raises(OperationFailure) as e:
        list(cursor)
    assert e.value.code == 6
    assert len(list(coll.find(batch_size=2))) == 5
    with pytest.raises(OperationFailure) as e:
        admin.command("configureFailPoint", "noSuchFailPoint", mode="alwaysOn")
    assert e.value.code == 266


@pytest.mark.slow
@pytest.mark.commands("testVersion2", "testDeprecationInVersion2")
def test_versioned_api_test_commands(testing):
    server, client = testing
    assert client.admin.command("testVersion2") == {"ok": 1.0}
    assert client.admin.command("testDeprecationInVersion2") == {"ok": 1.0}
    with pytest.raises(OperationFailure) as e:
        client.admin.command({"testVersion2": 1, "apiVersion": "1", "apiStrict": True})
    assert e.value.code == 323
    assert "Provided apiStrict:true, but the command testVersion2 is not in API Version 1" in str(e.value)


# -- the mode argument, as mongod's FailPoint::parseBSON reads it ------------------------------------
# Found by the Go driver's integration suite: its test harness sends {times: n, skip: 0}, which
# Tidemark refused; mongod takes the first of times, skip, activationProbability the document holds.

MODE_CASES = [
    ({"times": 1, "skip": 0}, None, None),
    ({"skip": 0, "times": 2}, None, None),
    ({"skip": 3, "activationProbability": 0.5}, None, None),
    ({"times": 1.0}, None, None),
    ({"times": -1}, 2, "'times' option to 'mode' must be positive"),
    ({"skip": -1}, 2, "'skip' option to 'mode' must be positive"),
    ({"times": 2**31}, 2, "'times' option to 'mode' is too large"),
    ({"times": "x"}, 14, 'Expected field "times" to have numeric type, but found string'),
    ({"times": 1.5}, 2, 'Expected field "times" to have a value exactly representable as a 64-bit integer, '
                        'but found times: 1.5'),
    ({"activationProbability": "x"}, 2, "'activationProbability' option to 'mode' must be a double between 0 and 1"),
    ({"activationProbability": 1.5}, 2, "activationProbability must be between 0.0 and 1.0; found 1.5"),
    ({"foo": 1}, 2, "'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'"),
    ("bogus", 2, "unknown mode: bogus"),
    (5, 14, "'mode' must be a string or JSON object"),
]


@pytest.mark.parametrize("mode, code, message", MODE_CASES, ids=repr)
def test_mode_is_parsed_as_mongod_parses_it(testing, mode, code, message):
    _server, client = testing
    if code is None:
        assert client.admin.command("configureFailPoint", "failCommand", mode=mode,
                                    data={"failCommands": ["ping"], "errorCode": 8})["ok"] == 1.0
        return
    with pytest.raises(OperationFailure) as e:
        client.admin.command("configureFailPoint", "failCommand", mode=mode)
    assert (e.value.code, e.value.details["errmsg"]) == (code, message)


def test_times_wins_over_skip(testing):
    """{times: 1, skip: 5}: one failure, then none (skip is not read)."""
    _server, client = testing
    _arm(client, {"times": 1, "skip": 5}, failCommands=["ping"], errorCode=8)
    with pytest.raises(OperationFailure) as e:
        client.admin.command("ping")
    assert e.value.code == 8
    assert client.admin.command("ping")["ok"] == 1.0


def test_data_must_be_a_document(testing):
    _server, client = testing
    with pytest.raises(OperationFailure) as e:
        client.admin.command("configureFailPoint", "failCommand", mode="off", data=5)
    assert (e.value.code, e.value.details["errmsg"]) == (14, "the 'data' option must be a JSON object")


@pytest.mark.slow
@pytest.mark.commands("sleep")
def test_sleep_test_command(testing):
    """mongod's test command ``sleep`` (the PHP driver's connection-timeout test needs it; it answered 59):
    its time arguments and their codes, interruption by maxTimeMS and killOp, and a read-locked sleep
    holding writes back (never reads)."""
    server, client = testing
    admin = client.admin
    started = time.monotonic()
    assert admin.command({"sleep": 1, "secs": 0, "millis": 250, "lock": "none"}) == {"ok": 1.0}
    assert time.monotonic() - started >= 0.25
    for cmd, code in (({"secs": 1, "seconds": 1}, 51153), ({"secs": "x"}, 34344), ({"seconds": "x"}, 51154),
                      ({"millis": "x"}, 34345), ({"millis": 1, "lock": "q"}, 34347),
                      ({"millis": 1, "lock": "r", "w": True}, 34346)):
        with pytest.raises(OperationFailure) as e:
            admin.command({"sleep": 1, **cmd})
        assert e.value.code == code, cmd
    with pytest.raises(OperationFailure) as e:
        client.t.command({"sleep": 1, "millis": 1})
    assert e.value.code == 13  # admin only
    with pytest.raises(ExecutionTimeout):
        admin.command({"sleep": 1, "secs": 60, "lock": "none", "maxTimeMS": 100})

    def killer():
        for _ in range(200):
            ops = admin.command({"currentOp": 1, "command.sleep": {"$exists": True}})["inprog"]
            if ops:
                admin.command("killOp", op=ops[0]["opid"])
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer)
    thread.start()
    with pytest.raises(OperationFailure) as e:
        admin.command({"sleep": 1, "secs": 60, "lock": "none"})
    thread.join()
    assert e.value.code == 11601

    # a read-locked sleep holds writes back until it ends; reads go on
    done: dict = {}
    sleeper = threading.Thread(target=lambda: done.setdefault("sleep", (admin.command(
        {"sleep": 1, "millis": 600, "lock": "r"}), time.monotonic())))
    sleeper.start()
    while not admin.command({"currentOp": 1, "command.sleep": {"$exists": True}})["inprog"]:
        time.sleep(0.02)
    assert client.t.c.find_one() is None
    client.t.c.insert_one({})
    inserted = time.monotonic()
    sleeper.join()
    assert inserted >= done["sleep"][1]


@pytest.mark.slow
def test_require_api_version(testing, start_server):
    """mongod's test-only parameter requireApiVersion (drivers' "require API version" test runs start the
    server with it): every command without apiVersion is 498870, until it is set back; it exists only
    with test commands (it was unknown: such a server would not start)."""
    server, client = testing
    assert client.admin.command("setParameter", 1, requireApiVersion=True)["was"] is False
    message = "The apiVersion parameter is required, please configure your MongoClient's API version"
    for cmd in ({"ping": 1}, {"find": "c"}, {"hello": 1}):
        reply = raw_command(server.port, {**cmd, "$db": "t"})
        assert (reply["ok"], reply["code"], reply["errmsg"]) == (0.0, 498870, message)
    assert raw_command(server.port, {"ping": 1, "apiVersion": "1", "$db": "t"})["ok"] == 1.0
    reply = raw_command(server.port, {"setParameter": 1, "requireApiVersion": False, "apiVersion": "1",
                                      "$db": "admin"})
    assert reply["ok"] == 1.0 and reply["was"] is True
    assert raw_command(server.port, {"ping": 1, "$db": "t"})["ok"] == 1.0
    plain = start_server()
    reply = raw_command(plain.port, {"getParameter": 1, "requireApiVersion": 1, "$db": "admin"})
    assert reply["ok"] == 0.0  # (test-only: unknown without test commands)


def test_require_api_version_is_a_start_up_parameter():
    from tidemark.params import ServerParams

    params = ServerParams()
    params.set_at_startup("enableTestCommands=1")
    params.set_at_startup("requireApiVersion=true")
    assert params["requireApiVersion"] is True


@pytest.mark.slow
@pytest.mark.commands("waitForFailPoint")
def test_wait_for_fail_point(testing):
    """mongod's test command waitForFailPoint (drivers' runners use it; it answered 59): it returns once
    the fail point has been entered timesEntered times in all, and maxTimeMS bounds the wait."""
    server, client = testing
    admin = client.admin
    count = _arm(client, "alwaysOn", failCommands=["find"], errorCode=2)["count"]
    done: dict = {}

    def waiter():
        done["reply"] = admin.command({"waitForFailPoint": "failCommand", "timesEntered": count + 2,
                                       "maxTimeMS": 30_000})
        done["at"] = time.monotonic()

    thread = threading.Thread(target=waiter)
    thread.start()
    for _ in range(2):
        time.sleep(0.2)
        assert "reply" not in done  # (not yet entered enough times)
        with pytest.raises(OperationFailure):
            client.t.c.find_one()
    thread.join(30)
    assert done["reply"] == {"ok": 1.0}
    with pytest.raises(ExecutionTimeout):
        admin.command({"waitForFailPoint": "failCommand", "timesEntered": count + 100, "maxTimeMS": 100})
    with pytest.raises(OperationFailure) as e:
        admin.command({"waitForFailPoint": "noSuchFailPoint", "timesEntered": 1, "maxTimeMS": 100})
    assert e.value.code == 266
    _arm(client, "off")
