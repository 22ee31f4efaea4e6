"""Every authorization rule, fed odd arguments, either allows, refuses (Denied) or answers a
MongoError — never an unexpected exception (which would become 1 InternalError)."""

from __future__ import annotations

import random

import pytest

from tidemark.auth import builtin_roles as B
from tidemark.auth.names import Principal, UserName
from tidemark.auth.rules import OPEN, RULES, Denied, Request
from tidemark.auth.session import AuthSession
from tidemark.dispatch import build_table
from tidemark.protocol.errors import MongoError

VALUES = [None, 0, 1, -1, 2**40, 1.5, "", "c", "a.b", "system.users", "x" * 300, [], [1], ["c"], [{}],
          [{"$out": 1}], {}, {"x": 1}, {"db": 1}, {"role": "r", "db": "d"}, {"user": "u", "db": "d"},
          {"forAllDBs": True}, True, b"\x00", [{"id": 1, "uid": b"\x01" * 32}], [{"uid": "x"}], [{"resource": {"cluster": True}, "actions": ["find"]}]]
STAGES = ["$out", "$merge", "$lookup", "$graphLookup", "$unionWith", "$facet", "$collStats", "$indexStats",
          "$currentOp", "$listSessions", "$changeStream", "$match", "$listCatalog", "$planCacheStats"]


class _Stub:
    def __init__(self):
        self.commands = build_table()
        self.cursors = self
        self.auth = self
        self.generation = 0

    def get(self, cursor_id):
        return None

    def resolve(self, name):
        return None

    def sync(self):  # AuthManager.sync: nothing to notice here
        pass


def _value(rng: random.Random):
    if rng.random() < 0.3:
        stage = rng.choice(STAGES)
        return [{stage: rng.choice(VALUES)}, rng.choice(VALUES)]
    return rng.choice(VALUES)


@pytest.mark.parametrize("name", sorted(n for n, r in RULES.items() if r is not OPEN))
def test_rules_never_raise_unexpected_errors(name):
    rng = random.Random(name)
    server = _Stub()
    session = AuthSession()
    session.principal = Principal(UserName("u", "admin"))
    privileges = B.privileges("readWrite", "db")
    for _ in range(200):
        cmd = {name: _value(rng)}
        for field in rng.sample(["pipeline", "roles", "privileges", "cursors", "to", "pwd", "explain", "viewOn",
                                 "updates", "filter", "authorizedCollections", "nameOnly", "upsert", "remove"],
                                rng.randint(0, 4)):
            cmd[field] = _value(rng) if field != "explain" else {rng.choice(list(RULES)): _value(rng)}
        try:
            RULES[name](Request(server, None, session, privileges, "db", cmd, name))
        except (Denied, MongoError):
            pass
