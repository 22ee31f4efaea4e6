"""currentOp / $currentOp / killOp under access control, as mongod 7.0 does them: without the
``inprog`` privilege a user sees only its own operations (``$ownOps``, or ``$currentOp`` without
``allUsers``), without ``killop`` it may kill only its own; every entry names its user
(``effectiveUsers``)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from pymongo.errors import OperationFailure

# Each document costs ~1 s of interruptible work (a 3,000,000-element $reduce): 100 of them make an
# aggregation that runs until it is killed.
RUNAWAY = [{"$project": {"x": {"$reduce": {"input": {"$range": [0, 3_000_000]}, "initialValue": 0,
                                           "in": {"$add": ["$$value", "$$this"]}}}}}]
DB = "auth_ops"

pytestmark = pytest.mark.commands("currentOp", "killOp", "aggregate")


class Runaway:
    """A runaway aggregation by one client in a thread; ``.error`` is what it ended with."""

    def __init__(self, client, comment: str):
        self.error: BaseException | None = None

        def run():
            try:
                list(client[DB].c.aggregate(RUNAWAY, comment=comment))
            except BaseException as exc:  # noqa: BLE001 - asserted by the test
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 60) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the operation did not stop"


def _wait_for(client, comment: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.admin.command({"currentOp": 1, "command.comment": comment})["inprog"]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no running operation with comment {comment!r}")


def _comments(entries) -> set:
    return {e["command"].get("comment") for e in entries if isinstance(e.get("command"), dict)}


@pytest.fixture
def users(auth_server, root_client):
    """Two readWrite users of DB (no inprog, no killop), a clusterMonitor (inprog, no killop); each
    with its own authenticated client."""
    root_client[DB].c.drop()
    root_client[DB].c.insert_many([{"_id": i} for i in range(100)])
    made, clients = [], {}
    for name, roles, source in (("alice", [{"role": "readWrite", "db": DB}], DB),
                                ("bob", [{"role": "readWrite", "db": DB}], DB),
                                ("monitor", ["clusterMonitor"], "admin")):
        user = f"{name}_{uuid.uuid4().hex[:8]}"
        root_client[source].command("createUser", user, pwd="pw", roles=roles)
        made.append((source, user))
        clients[name] = auth_server.client(username=user, password="pw", authSource=source)
        clients[name].admin.command("ping")
        clients[name + "_name"] = {"user": user, "db": source}
        if name == "alice":
            clients["alice_again"] = auth_server.client(username=user, password="pw", authSource=source)
    yield clients
    for op in root_client.admin.command({"currentOp": 1, "ns": f"{DB}.c"})["inprog"]:
        root_client.admin.command("killOp", op=op["opid"])  # leave no runaway behind
    for name in ("alice", "bob", "monitor"):
        clients[name].close()
    for source, user in made:
        root_client[source].command("dropUser", user)


def test_current_op_without_inprog_needs_own_ops_and_shows_only_the_users_operations(root_client, users):
    alice, bob = users["alice"], users["bob"]
    mine, theirs = Runaway(alice, "alice-op"), Runaway(bob, "bob-op")
    _wait_for(root_client, "alice-op"), _wait_for(root_client, "bob-op")

    with pytest.raises(OperationFailure) as err:  # no inprog and no $ownOps: 13, as mongod
        alice.admin.command("currentOp")
    assert err.value.code == 13 and "not authorized on admin" in err.value.details["errmsg"]
    with pytest.raises(OperationFailure) as err:
        alice.admin.command({"currentOp": 1, "$ownOps": False})
    assert err.value.code == 13

    own = alice.admin.command({"currentOp": 1, "$ownOps": True})["inprog"]
    assert "alice-op" in _comments(own) and "bob-op" not in _comments(own)
    assert own and all(e["effectiveUsers"] == [users["alice_name"]] for e in own)
    with users["alice_again"] as idle:  # a second, idle connection of hers
        idle.admin.command("ping")
        with_idle = alice.admin.command({"currentOp": 1, "$ownOps": 1, "$all": True})["inprog"]
    assert any(e["active"] is False for e in with_idle)  # her idle connection ...
    assert all(e["effectiveUsers"] == [users["alice_name"]] for e in with_idle)  # ... and nobody else's

    # the stage: allUsers defaults to false (own operations, no privilege); allUsers: true needs inprog
    staged = list(alice.admin.aggregate([{"$currentOp": {}}, {"$match": {"ns": f"{DB}.c"}}]))
    assert _comments(staged) == {"alice-op"}
    with pytest.raises(OperationFailure) as err:
        list(alice.admin.aggregate([{"$currentOp": {"allUsers": True}}]))
    assert err.value.code == 13

    # root (inprog) sees everyone's, each naming its user; its own $currentOp: {} is still only its own
    everyone = root_client.admin.command({"currentOp": 1, "ns": f"{DB}.c"})["inprog"]
    by_comment = {e["command"]["comment"]: e for e in everyone}
    assert by_comment["alice-op"]["effectiveUsers"] == [users["alice_name"]]
    assert by_comment["bob-op"]["effectiveUsers"] == [users["bob_name"]]
    assert "runBy" not in by_comment["alice-op"]  # only for impersonated (mongos) operations
    assert list(root_client.admin.aggregate([{"$currentOp": {}}, {"$match": {"ns": f"{DB}.c"}}])) == []
    assert _comments(root_client.admin.aggregate([{"$currentOp": {"allUsers": True}},
                                                  {"$match": {"ns": f"{DB}.c"}}])) == {"alice-op", "bob-op"}
    # clusterMonitor has inprog: everything, without $ownOps
    assert _comments(users["monitor"].admin.command({"currentOp": 1, "ns": f"{DB}.c"})["inprog"]) == {
        "alice-op", "bob-op"}
    for op in everyone:
        root_client.admin.command("killOp", op=op["opid"])
    mine.join(), theirs.join()


def test_kill_op_without_killop_kills_only_the_users_own_operations(root_client, users):
    alice, bob, monitor = users["alice"], users["bob"], users["monitor"]
    mine, theirs = Runaway(alice, "alice-kill"), Runaway(bob, "bob-kill")
    my_op, their_op = _wait_for(root_client, "alice-kill"), _wait_for(root_client, "bob-kill")

    for caller in (alice, monitor):  # another user's operation: 13 (monitor has inprog, not killop)
        with pytest.raises(OperationFailure) as err:
            caller.admin.command("killOp", op=their_op["opid"])
        assert err.value.code == 13 and "not authorized on admin to execute command" in err.value.details["errmsg"]
    with pytest.raises(OperationFailure) as err:  # no such operation: nothing of hers to kill
        alice.admin.command("killOp", op=2**31 - 1)
    assert err.value.code == 13
    time.sleep(0.3)
    assert theirs.thread.is_alive() and mine.thread.is_alive()

    assert alice.admin.command("killOp", op=my_op["opid"]) == {"info": "attempting to kill op", "ok": 1.0}
    mine.join()
    assert isinstance(mine.error, OperationFailure) and mine.error.code == 11601
    assert theirs.thread.is_alive()  # bob's keeps running

    assert root_client.admin.command("killOp", op=their_op["opid"])["ok"] == 1  # killop: anyone's
    theirs.join()
    assert isinstance(theirs.error, OperationFailure) and theirs.error.code == 11601
