"""$out / $merge into a time-series collection are refused before the pipeline runs (spec §10)."""

import pytest
from harness.server_state import InProcessServer

from tidemark.commands import timeseries_ddl
from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.timeseries.collection import check_write_stage_target


@pytest.fixture
def server(tmp_path):
    state = InProcessServer(tmp_path / "data")
    yield state
    state.engine.close()


@pytest.fixture
def engine(server):
    return server.engine


async def test_merge_and_out_into_a_timeseries_collection_are_refused(server, engine):
    await timeseries_ddl.create(server.ctx(), {"create": "c", "timeseries": {"timeField": "t"}, "$db": "db"})
    with engine.read() as r:
        for stage, target in (("$merge", "c"), ("$out", "c"), ("$out", "system.buckets.c")):
            with pytest.raises(MongoError) as info:
                check_write_stage_target(r, "db", target, stage)
            assert info.value.code == ErrorCode.CommandNotSupportedOnView
        check_write_stage_target(r, "db", "plain", "$merge")  # a regular target is fine


def test_out_with_timeseries_options_is_not_supported(engine):
    with engine.read() as r, pytest.raises(MongoError) as info:
        check_write_stage_target(
            r, "db", "o", "$out", {"db": "db", "coll": "o", "timeseries": {"timeField": "t"}}
        )
    assert info.value.code == ErrorCode.CommandNotSupported
