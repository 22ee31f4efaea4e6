"""``fsync_lock.is_write``: which commands the fsync lock holds back — a write command, or an aggregate
whose last stage is ``$out``/``$merge`` (a pipeline and stages of any list/dict class; anything else
in their place is not a write: the command's own parse refuses it)."""

from __future__ import annotations

from collections import OrderedDict

from bson.son import SON
from hypothesis import given
from hypothesis import strategies as st

from tidemark.fsync_lock import WRITE_COMMANDS, is_write

_STAGE_NAMES = st.sampled_from(["$match", "$group", "$out", "$merge", "$project", "$sort"])
_STAGES = st.one_of(
    st.builds(lambda name, cls: cls([(name, {})]), _STAGE_NAMES, st.sampled_from([dict, SON, OrderedDict])),
    st.sampled_from([None, 1, "$out", ["$out"]]),
)


class _Pipeline(list):
    pass


@given(name=st.sampled_from(["aggregate", "find", "insert", "count"]),
       stages=st.lists(_STAGES, max_size=4),
       container=st.sampled_from([list, _Pipeline, tuple, None]))
def test_a_command_writes_when_it_is_a_write_or_an_aggregate_ending_in_out_or_merge(name, stages, container):
    cmd: dict = {name: "c"}
    if container is not None:
        cmd["pipeline"] = container(stages)
    last = stages[-1] if stages else None
    expected = name in WRITE_COMMANDS or (
        name == "aggregate" and container in (list, _Pipeline) and isinstance(last, dict)
        and ("$out" in last or "$merge" in last))
    assert is_write(name, cmd) is expected
