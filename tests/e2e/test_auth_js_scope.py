"""mongod pools its ``$where`` JavaScript scopes per database *and authenticated user*
(src/mongo/db/exec/js_function.cpp: ``getPooledScope(opCtx, dbName, "where" +
getAuthenticatedUserNamesToken(client))``; mapReduce and ``$function`` get a scope of their own per
operation): what one user's code leaves in the global scope is never seen by another user's code.
Tidemark kept one scope per database for everyone, so a user who may read ``test.cards`` could leave a
card number in a global (``$where: "lastSeen = this.card"``) and another user of ``test``, who may not
read ``cards``, read it back through a mapReduce or a ``$function`` on a collection of its own.

- Property (Hypothesis): the writer user leaves a global (any name, shadowing builtins too, any value)
  through ``$where``, ``$function``, ``$accumulator`` or mapReduce; a user of the same name in another
  database and another user of the writer's database, probing through ``$where``, ``$function`` and
  mapReduce, never see it.
- The same user's pooled ``$where`` scope is kept between its operations, as mongod's pool: a counter a
  ``$where`` increments is seen again by the same user's later ``$where`` (never by another user's).
"""

from __future__ import annotations

import itertools

import pytest
from bson.code import Code
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DB = "js_scope_users"
PW = "pw-js-scope"
WRITER = ("jsuser", DB)
READERS = (("jsuser", "admin"), ("jsother", DB))

pytestmark = pytest.mark.commands("find", "count", "aggregate", "mapReduce")

_NAME = st.sampled_from(["lastSeen", "globalThis.leak", "Math.max", "JSON.stringify", "counter", "obj",
                         "Array.isArray", "typeofProbe"])
_VALUE = st.sampled_from(["this_card", "'secret'", "42", "{}", "function() { return 'hijacked'; }"])
_SEQ = itertools.count()


@pytest.fixture(scope="module")
def users(auth_server, root_client):
    root_client[DB].cards.drop()
    root_client[DB].cards.insert_one({"_id": 1, "card": "4111-1111-1111-1111"})
    for user, db in (WRITER, *READERS):
        root_client[db].command("createUser", user, pwd=PW, roles=[{"role": "read", "db": DB}])
    clients = {name: auth_server.client(username=name[0], password=PW, authSource=name[1])
               for name in (WRITER, *READERS)}
    yield clients
    for mongo in clients.values():
        mongo.close()
    for user, db in (WRITER, *READERS):
        root_client[db].command("dropUser", user)
    root_client.drop_database(DB)


def _leave(coll, how: str, name: str, value: str) -> None:
    """The writer's code assigns ``name = value`` in its scope (``this_card``: the document's card)."""
    value = "this.card" if value == "this_card" else value
    if how == "where":
        coll.database.command("count", coll.name, query={"$where": f"function() {{ {name} = {value}; return true; }}"})
    elif how == "function":
        list(coll.aggregate([{"$project": {"x": {"$function": {
            "lang": "js", "args": ["$card"], "body": f"function(card) {{ {name} = {value.replace('this.card', 'card')}; return 1; }}"}}}}]))
    elif how == "accumulator":
        list(coll.aggregate([{"$group": {"_id": None, "x": {"$accumulator": {
            "init": f"function() {{ {name} = {value.replace('this.card', '0')}; return 0; }}",
            "accumulate": "function(s) { return s; }", "accumulateArgs": [],
            "merge": "function(a, b) { return a; }", "lang": "js"}}}}]))
    else:
        coll.database.command("mapReduce", coll.name, map=Code(f"function() {{ {name} = {value}; emit(1, 1); }}"),
                              reduce=Code("function(k, v) { return 1; }"), out={"inline": 1})


# what a probe reports: none of the writer's globals, builtins intact
_PROBE = ("[typeof lastSeen, typeof leak, typeof counter, typeof typeofProbe, Math.max(1, 2), "
          "JSON.stringify([1]), Array.isArray([])].join(',')")
_CLEAN = "undefined,undefined,undefined,undefined,2,[1],true"


def _probe(coll, how: str) -> str:
    if how == "where":  # the probe's answer chooses whether the document matches
        query = {"$where": f"function() {{ return {_PROBE} === '{_CLEAN}'; }}"}
        return _CLEAN if coll.database.command("count", coll.name, query=query)["n"] == 1 else "seen"
    if how == "function":
        return next(coll.aggregate([{"$project": {"v": {"$function": {
            "lang": "js", "args": [], "body": f"function() {{ return {_PROBE}; }}"}}}}]))["v"]
    out = coll.database.command("mapReduce", coll.name, map=Code(f"function() {{ emit(1, {_PROBE}); }}"),
                                reduce=Code("function(k, v) { return v[0]; }"), out={"inline": 1})
    return out["results"][0]["value"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_NAME, value=_VALUE, how=st.sampled_from(["where", "function", "accumulator", "mapReduce"]))
def test_one_users_globals_are_invisible_to_another(users, name, value, how):
    _leave(users[WRITER][DB].cards, how, name, value)
    for reader in READERS:
        coll = users[reader][DB].cards
        for probe in ("where", "function", "mapReduce"):
            for _ in range(3):  # several reads: whichever pool thread answers, none sees the global
                assert _probe(coll, probe) == _CLEAN, (reader, probe)


def test_same_users_where_scope_is_kept(users):
    counter = f"scopeCounter{next(_SEQ)}"
    body = f"function() {{ globalThis.{counter} = (globalThis.{counter} || 0) + 1; return {counter} > 1; }}"
    seen = {name: sum(users[name][DB].command("count", "cards", query={"$where": body})["n"] for _ in range(12))
            for name in (WRITER, READERS[1])}
    # 12 operations in a row on a few pool threads: a thread's scope of that user comes back
    assert seen[WRITER] >= 1 and seen[READERS[1]] >= 1
    # and each user counted its own operations only: at most 11 of 12 found an earlier one
    assert seen[WRITER] <= 11 and seen[READERS[1]] <= 11
