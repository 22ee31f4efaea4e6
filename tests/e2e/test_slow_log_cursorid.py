"""The "Slow query" line of a read that leaves a cursor open, and of its getMores, says ``cursorid``.

mongod 7.0's OpDebug::report writes ``cursorid`` (after planSummary, before keysExamined) whenever the
operation has one: a find or aggregate whose cursor stays open, each getMore of it; not a read that
returned everything. Tidemark's profile entries had it, its log line did not.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("find", "aggregate", "getMore", "profile", "getLog")


def _lines(client, comment: str) -> list[dict]:
    lines = [json.loads(line) for line in client.admin.command("getLog", "global")["log"]]
    return [line["attr"] for line in lines if line["id"] == 51803 and comment in json.dumps(line["attr"].get("command"))
            or line["id"] == 51803 and comment in json.dumps(line["attr"].get("originatingCommand"))]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 7), batch=st.integers(1, 4), aggregate=st.booleans(), tag=st.uuids())
def test_slow_lines_carry_the_cursor_id(client, db, n, batch, aggregate, tag):
    db.command("profile", 0, slowms=-1)
    try:
        db.c.drop()
        if n:
            db.c.insert_many([{"i": i} for i in range(n)])
        comment = str(tag)
        if aggregate:
            cursor = db.c.aggregate([{"$match": {}}], batchSize=batch, comment=comment)
        else:
            cursor = db.c.find(batch_size=batch, comment=comment)
        assert len(list(cursor)) == n
    finally:
        db.command("profile", 0, slowms=100)
    lines = _lines(client, comment)
    opening = [a for a in lines if a["command"].get("find" if not aggregate else "aggregate") == "c"]
    more = [a for a in lines if "getMore" in a["command"]]
    assert len(opening) == 1
    if more:  # the cursor stayed open: the opening line and every getMore's name it
        ids = {a.get("cursorid") for a in opening + more}
        assert len(ids) == 1 and None not in ids
        keys = list(opening[0])
        assert keys.index("cursorid") == keys.index("planSummary") + 1
    else:
        assert "cursorid" not in opening[0]
