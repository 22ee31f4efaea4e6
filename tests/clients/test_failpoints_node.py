"""The Node driver against failCommand (as its own test suite arms it): a failed insert, then
one that succeeds, and a retryable read retried by the driver."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.clients, pytest.mark.commands("configureFailPoint", "insert", "find")]


@pytest.mark.slow
def test_node_driver_sees_fail_command_failures(start_server):
    from harness import have_node_driver, run_node

    if not have_node_driver():
        pytest.skip("the Node driver is not installed (run `make test`)")
    server = start_server(params={"enableTestCommands": 1})
    result = run_node(server.uri, """
      const admin = client.db('admin');
      await admin.command({configureFailPoint: 'failCommand', mode: {times: 1},
                           data: {failCommands: ['insert'], errorCode: 8, errorLabels: ['Custom']}});
      const out = {};
      try { await db.collection('c').insertOne({a: 1}); } catch (e) {
        out.code = e.code; out.message = e.message; out.label = e.hasErrorLabel('Custom');
      }
      await db.collection('c').insertOne({a: 2});
      await admin.command({configureFailPoint: 'failCommand', mode: {times: 1},
                           data: {failCommands: ['find'], errorCode: 6}});
      out.read = (await db.collection('c').findOne({a: 2})).a;
      out.count = (await admin.command({configureFailPoint: 'failCommand', mode: 'off'})).count;
      out.docs = await db.collection('c').countDocuments();
      return out;
    """)
    assert result == {"code": 8, "message": "Failing command via 'failCommand' failpoint", "label": True,
                      "read": 2, "count": 2, "docs": 1}
