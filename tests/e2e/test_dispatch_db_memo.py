"""dispatch's memo of the ``$db`` names that passed every name check (``_VALID_DBS``): a request
whose ``$db`` is in it skips those checks, so a name — valid or not, of any type — gets the same answer
the second time as the first, and an invalid name never enters the memo (raw OP_MSG: drivers refuse
such names)."""

from __future__ import annotations

import pytest
from bson.int64 import Int64
from harness.server import raw_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_NAMES = st.one_of(
    st.text(st.sampled_from(list('ab$./\\ "\x00-é😀')), max_size=6),
    st.builds(lambda n, tail: "a" * n + tail, st.integers(60, 66), st.sampled_from(["", "é", ".", "$"])),
    st.sampled_from([None, 1, Int64(2), 1.5, True, ["a"], {"a": 1}, b"ab"]),
)


def _answer(reply: dict) -> tuple:
    return reply.get("ok"), reply.get("code"), reply.get("codeName"), reply.get("errmsg")


@pytest.mark.commands("ping", "count")
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(db=_NAMES, command=st.sampled_from(["ping", "count", "noSuchCommand"]))
def test_a_db_name_gets_the_same_answer_once_it_has_passed(server, db, command):
    body = {command: "c", "$db": db}
    first = _answer(raw_command(server.port, body))
    assert _answer(raw_command(server.port, body)) == first, (db, first)
    if type(db) is not str:
        assert first[1] == 13111, (db, first)  # (BSONElement::chk's wrong type, both types named)
    elif "." in db or "\x00" in db:  # (before the command is looked up)
        assert first[1] == 73, (db, first)
    elif command == "noSuchCommand":
        assert first[1] == 59, (db, first)
    elif not (0 < len(db.encode()) < 64) or any(c in db for c in '/\\ "'):  # (validDBName, later)
        assert first[1] == 73, (db, first)
    else:
        assert first[0] == 1.0, (db, first)
