"""mongorestore 100.8.0 against Tidemark with mongo-tools' own time-series dumps (made by a real mongod):
each expectation of shared/tools/README.md — the results mongo-tools' tests expect from mongod."""

import pytest
from harness.mongo_tools import BIN, FIXTURES, SKIP_REASON, run_tool, uri_args

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BIN is None, reason=SKIP_REASON),
    pytest.mark.commands("applyOps", "create", "insert", "createIndexes", "listCollections", "drop", "collMod"),
]

DB = "timeseries_test"


@pytest.fixture
def tsdb(client):
    client.drop_database(DB)
    yield client[DB]
    client.drop_database(DB)


def restore(server, *args: str):
    return run_tool("mongorestore", *uri_args(server.port), *args)


def counts(tsdb) -> tuple[int, int]:
    return tsdb.foo_ts.count_documents({}), tsdb.system.buckets.foo_ts.count_documents({})


def summary(out: str) -> str:
    return out.strip().splitlines()[-1]


SOURCES = {"directory": ("--dir", "ts_dump"), "archive": ("--archive=", "dump.archive")}


def source_args(kind: str) -> list[str]:
    flag, name = SOURCES[kind]
    return [flag + str(FIXTURES / name)] if flag.endswith("=") else [flag, str(FIXTURES / name)]


@pytest.mark.parametrize("kind", ["directory", "archive"])
def test_ts_dump_restores_10_buckets_and_1000_measurements(server, tsdb, kind):
    done = restore(server, *source_args(kind))
    assert done.returncode == 0, done.stdout
    assert "10 document(s) restored successfully. 0 document(s) failed to restore." in summary(done.stdout)
    assert counts(tsdb) == (1000, 10)


@pytest.mark.parametrize("kind", ["directory", "archive"])
def test_ts_dump_with_drop_over_an_existing_collection_restores_the_same(server, tsdb, kind):
    assert restore(server, *source_args(kind)).returncode == 0
    done = restore(server, "--drop", *source_args(kind))
    assert done.returncode == 0, done.stdout
    assert "10 document(s) restored successfully. 0 document(s) failed to restore." in summary(done.stdout)
    assert counts(tsdb) == (1000, 10)


def test_ts_dump_with_oplog_replay_restores_the_point_in_time(server, tsdb):
    done = restore(server, "--oplogReplay", "--dir", str(FIXTURES / "ts_dump_with_oplog"))
    assert done.returncode == 0, done.stdout
    assert "10 document(s) restored successfully. 0 document(s) failed to restore." in summary(done.stdout)
    assert counts(tsdb) == (2164, 10)


@pytest.mark.parametrize("bypass", [False, True])
def test_invalid_buckets_are_refused(server, tsdb, bypass):
    args = ["--bypassDocumentValidation"] if bypass else []
    done = restore(server, *args, "--dir", str(FIXTURES / "ts_dump_invalid_buckets"))
    assert "0 document(s) restored successfully. 5 document(s) failed to restore." in summary(done.stdout)
    assert counts(tsdb) == (0, 0)


def test_restoring_over_an_existing_time_series_collection_is_an_error(server, tsdb):
    tsdb.create_collection("foo_ts", timeseries={"timeField": "ts", "metaField": "meta"})
    done = restore(server, "--dir", str(FIXTURES / "ts_dump"))
    assert done.returncode != 0
    assert "timeseries collection `timeseries_test.foo_ts` already exists on the destination" in done.stdout
    assert counts(tsdb) == (0, 0)


def test_restoring_over_an_existing_buckets_collection_is_an_error(server, tsdb):
    tsdb.command("create", "system.buckets.foo_ts", timeseries={"timeField": "ts", "metaField": "meta"})
    assert "foo_ts" not in tsdb.list_collection_names()
    done = restore(server, "--dir", str(FIXTURES / "ts_dump"))
    assert done.returncode != 0
    assert "already exists on the destination" in done.stdout
    assert tsdb.system.buckets.foo_ts.count_documents({}) == 0


def test_no_options_restore_of_a_time_series_dump_is_an_error(server, tsdb):
    done = restore(server, "--noOptionsRestore", "--dir", str(FIXTURES / "ts_dump"))
    assert done.returncode != 0
    assert "cannot specify --noOptionsRestore when restoring timeseries collections" in done.stdout
    assert counts(tsdb) == (0, 0)


def test_a_buckets_file_with_its_metadata_beside_it_restores_the_collection(server, tsdb):
    done = restore(server, "-d", DB, "-c", "foo_ts", str(FIXTURES / "ts_dump" / DB / "system.buckets.foo_ts.bson"))
    assert done.returncode == 0, done.stdout
    assert counts(tsdb) == (1000, 10)
    (entry,) = tsdb.list_collections(filter={"name": "foo_ts"})
    assert entry["type"] == "timeseries" and entry["options"]["timeseries"]["timeField"] == "ts"
