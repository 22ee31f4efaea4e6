"""Nothing internal leaks: getLog hands clients mongod-shaped lines without tracebacks or source
paths (the log file keeps them for the operator), error replies carry no Python class names, and the
data files are private to the server's user (dbpath 0700, files 0600), like mongod's."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tidemark import dispatch, log
from tidemark.storage.errors import StorageError


def test_exceptions_are_logged_with_a_traceback_but_get_log_lines_have_none(tmp_path):
    path = tmp_path / "tidemark.log"
    log.configure(str(path), append=False)
    try:
        try:
            raise ValueError("boom")
        except ValueError as exc:
            log.exception("COMMAND", 21962, "Unexpected exception while running a command", exc, ctx="conn1")
    finally:
        log.close()
    written = path.read_text()
    assert "Traceback" in written and ".py" in written  # the operator's log has it all
    lines, _ = log.recent_lines()
    line = json.loads(lines[-1])
    assert line["msg"] == "Unexpected exception while running a command" and line["ctx"] == "conn1"
    assert "traceback" not in line["attr"]
    assert "Traceback" not in lines[-1] and '.py"' not in lines[-1] and "/" not in line["attr"]["error"]


@pytest.mark.parametrize("exc, code", [
    (RecursionError("maximum recursion depth exceeded"), 15),
    (MemoryError(), 146),
    (OverflowError("Python int too large to convert to C long"), 15),
    (KeyError("x"), 1),
    (StorageError("mdb_put: MDB_BAD_VALSIZE: Unsupported size of key/DB name/data"), 1),
])
def test_error_replies_carry_no_python_or_library_text(exc, code):
    reply = dispatch.error_reply(exc)
    assert reply["code"] == code and reply["ok"] == 0.0
    for leak in (type(exc).__name__, "mdb_", "MDB_", "Python", "recursion", ".py"):
        assert leak not in reply["errmsg"], reply


@pytest.mark.commands("getLog", "find")
def test_get_log_over_the_wire_has_no_source_paths(server, client):
    for name in ("global", "startupWarnings"):
        for line in client.admin.command("getLog", name)["log"]:
            assert "Traceback" not in line and '.py"' not in line, line


@pytest.mark.slow
@pytest.mark.commands("insert")
def test_dbpath_and_data_files_are_private(start_server, tmp_path):
    srv = start_server(dbpath=tmp_path / "fresh")
    srv.client().t.c.insert_one({"a": 1})
    assert stat.S_IMODE(os.stat(srv.dbpath).st_mode) == 0o700
    names = os.listdir(srv.dbpath)
    assert {"data.mdb", "lock.mdb", "mongod.lock"} <= set(names)
    for name in names:
        mode = stat.S_IMODE(os.stat(os.path.join(srv.dbpath, name)).st_mode)
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}"
