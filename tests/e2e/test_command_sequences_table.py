"""Every command of the table against OP_MSG document sequences, as mongod 7.0's command classes take
them (raw OP_MSG; the oracle is mongod's source, arguments.SEQUENCES_REFUSED states it per command):

- a BasicCommand (BasicCommandWithReplyBuilderInterface, BasicCommandWithRequestParser,
  ErrmsgCommandDeprecated) and explain: their parse calls CommandHelpers::uassertNoDocumentSequences,
  40472 "The <name> command does not support document sequences." (the command's own name, whatever
  alias was sent), and the command does not run;
- insert, update, delete: the IDL parser reads the sequences a field declares (supports_doc_sequence);
  any other name is 40415 "BSON field '<command>.<name>' is an unknown field.";
- every other command (a TypedCommand without such a field; find, getMore, aggregate and echo, whose
  parse reads the body alone) ignores them: it answers exactly as to the body alone.

A dedicated server with test commands, so the whole table is there.
"""

from __future__ import annotations

import pytest
from harness.server import ServerProcess, raw_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.arguments import DOC_SEQUENCE_FIELDS, SEQUENCES_REFUSED
from tidemark.dispatch import build_table

DB = "seq_table"
_TABLE = build_table()

pytestmark = pytest.mark.commands(*sorted({spec.name for spec in _TABLE.values()}))


@pytest.fixture(scope="module")
def table_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("seq-table")
    srv = ServerProcess(base / "db", params={"enableTestCommands": 1}, log_path=base / "server.log")
    srv.start()
    yield srv
    assert srv.terminate() == 0


def _body(name: str) -> dict:
    spec = _TABLE[name]
    if spec.name == "shutdown":  # (refused by its own parse before it could stop the server)
        return {name: 1, "timeoutSecs": "x", "$db": "admin"}
    return {name: 1, "$db": "admin" if spec.admin_only else DB}


def _comparable(reply: dict) -> dict:
    """The reply without what differs between two runs of the same request."""
    drop = ("operationTime", "$clusterTime", "localTime", "connectionId", "millis", "durationMillis")
    return {key: value for key, value in reply.items() if key not in drop}


_IDENTIFIERS = st.sampled_from(["zz", "documents", "updates", "deletes", "filter", "query", "pipeline",
                                "cursor", "timeoutSecs", "a.b"])
_DOCS = st.lists(st.fixed_dictionaries({"a": st.integers(0, 3)}), min_size=1, max_size=3)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_TABLE))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(identifier=_IDENTIFIERS, docs=_DOCS)
def test_each_command_takes_document_sequences_as_its_mongod_class_does(table_server, name, identifier, docs):
    spec = _TABLE[name]
    body = _body(name)
    with_sequence = raw_command(table_server.port, body, sequences={identifier: docs})
    if spec.name in SEQUENCES_REFUSED:
        assert (with_sequence.get("code"), with_sequence.get("errmsg")) == (
            40472, f"The {spec.name} command does not support document sequences."), with_sequence
    elif spec.name in DOC_SEQUENCE_FIELDS and identifier not in DOC_SEQUENCE_FIELDS[spec.name]:
        assert (with_sequence.get("code"), with_sequence.get("errmsg")) == (
            40415, f"BSON field '{spec.name}.{identifier}' is an unknown field."), with_sequence
    elif spec.name not in DOC_SEQUENCE_FIELDS:
        alone = raw_command(table_server.port, body)
        assert _comparable(with_sequence) == _comparable(alone)


# Classes read in mongod 7.0's source this round (the table's entries that had been inferred, and the
# neighbours most likely to be misfiled): True = a BasicCommand family class (refuses), False = typed.
_READ_IN_SOURCE = {
    "count": True,  # CmdCount : BasicCommand (count_cmd.cpp)
    "startSession": True,  # StartSessionCommand : BasicCommand
    "captrunc": True, "emptycapped": True,  # CapTrunc / EmptyCapped : BasicCommand (test_commands.cpp)
    "killSessions": True,  # KillSessionsCommand : BasicCommand
    "collStats": True, "collMod": True,  # BasicCommandWithRequestParser (dbcommands.cpp)
    "logout": False,  # CmdLogout : TypedCommand<CmdLogout> (authentication_commands.cpp)
    "connectionStatus": False,  # CmdConnectionStatus : TypedCommand (connection_status.idl)
    "shutdown": False,  # CmdShutdown<Derived> : TypedCommand<Derived> (shutdown.idl)
    "dataSize": False, "dbStats": False,  # CmdDataSize / CmdDbStats : TypedCommand (dbcommands.cpp)
    "dropConnections": False,  # DropConnectionsCmd : TypedCommand
    "endSessions": False,  # EndSessionsCommand : EndSessionsCmdVersion1Gen
    "listCollections": False,  # CmdListCollections : ListCollectionsCmdVersion1Gen
}


@pytest.mark.parametrize("name", sorted(_READ_IN_SOURCE))
def test_the_table_files_the_commands_read_in_source_by_their_class(name):
    assert (name in SEQUENCES_REFUSED) is _READ_IN_SOURCE[name]

