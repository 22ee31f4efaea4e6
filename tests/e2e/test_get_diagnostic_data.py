"""getDiagnosticData as a standalone mongod 7.0 answers it (ftdc_commands.cpp GetDiagnosticDataCommand:
admin only, no writeConcern): ``data`` is FTDC's periodic document, ``{start, serverStatus: {start,
<serverStatus's sections>, end}, end}`` (jstests/libs/ftdc.js verifyGetDiagnosticData looks for
``start`` and ``end``; jstests/noPassthrough/ftdc_*.js read ``data.serverStatus``). Tidemark answered
59 CommandNotFound. Privileges: tests/e2e/test_auth_commands_lib.py (commands_lib.js's case).
"""

from __future__ import annotations

import pytest
from bson.son import SON
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("getDiagnosticData")


def test_get_diagnostic_data_holds_a_server_status_sample(client):
    client.diag_db.c.insert_one({})
    data = client.admin.command("getDiagnosticData")["data"]
    assert list(data)[0] == "start" and list(data)[-1] == "end"
    status = data["serverStatus"]
    assert list(status)[0] == "start" and list(status)[-1] == "end"
    assert data["start"] <= status["start"] <= status["end"] <= data["end"]
    assert status["process"] == "mongod" and status["opcounters"]["insert"] >= 1
    for section in ("uptime", "connections", "network", "mem", "metrics", "storageEngine"):
        assert section in status
    later = client.admin.command("getDiagnosticData")["data"]["serverStatus"]
    assert later["opcounters"]["command"] > status["opcounters"]["command"]  # a fresh sample each time


def test_get_diagnostic_data_refusals(client):
    for db in ("test", "diag_db"):
        with pytest.raises(OperationFailure) as e:
            client[db].command("getDiagnosticData")
        assert e.value.code == 13  # admin only
    with pytest.raises(OperationFailure) as e:
        client.admin.command(SON([("getDiagnosticData", 1), ("writeConcern", {"w": 1})]))
    assert e.value.code == 72
