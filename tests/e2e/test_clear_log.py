"""clearLog, mongod's test command (generic.cpp ClearLogCmd, present only with
``--setParameter enableTestCommands=1``, admin only, no authorization): ``{clearLog: "global"}`` empties
the "global" RamLog that getLog reads, and its totalLinesWritten starts again at 0 (RamLog::clear);
another name is 72 "Only the 'global' log can be cleared", a parameter that is not a string 14.
Tidemark answered 59 CommandNotFound; without test commands it still does, as mongod.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("clearLog")


def _error(call) -> OperationFailure:
    with pytest.raises(OperationFailure) as e:
        call()
    return e.value


def test_clear_log_empties_the_global_log(start_server):
    client = start_server(params={"enableTestCommands": 1}).client()
    client.admin.command("ping")
    assert client.admin.command("getLog", "global")["totalLinesWritten"] > 0
    assert client.admin.command("clearLog", "global")["ok"] == 1
    after = client.admin.command("getLog", "global")
    # (the lines logged after the clear, if any, are counted from 0 again)
    assert after["totalLinesWritten"] == len(after["log"]) < 5
    client.admin.command("configureFailPoint", "failCommand", mode="off")  # logs a line (23829)
    assert client.admin.command("getLog", "global")["totalLinesWritten"] > after["totalLinesWritten"]
    assert client.admin.command("getLog", "startupWarnings")["ok"] == 1  # untouched
    e = _error(lambda: client.test.command("clearLog", "global"))
    assert e.code == 13  # admin only

    @settings(max_examples=25, deadline=None)
    @given(name=st.one_of(st.text(max_size=8).filter(lambda s: s != "global"), st.integers(-(2**63), 2**63 - 1), st.none(),
                          st.booleans(), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=2)))
    def other_parameters_are_refused(name):
        e = _error(lambda: client.admin.command({"clearLog": name}))
        if isinstance(name, str):
            assert (e.code, e.details["errmsg"]) == (72, "Only the 'global' log can be cleared")
        else:
            assert e.code == 14

    other_parameters_are_refused()


def test_clear_log_exists_only_with_test_commands(client):
    assert _error(lambda: client.admin.command("clearLog", "global")).code == 59
