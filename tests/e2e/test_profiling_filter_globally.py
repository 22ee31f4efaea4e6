"""setProfilingFilterGlobally as a standalone mongod 7.0 answers it by default
(src/mongo/db/commands/set_profiling_filter_globally_cmd.cpp): the command exists on any database, but
runs only with the query knob internalQueryGlobalProfilingFilter on (off by default), so it answers
7283301 "setProfilingFilterGlobally command requires query knob to be enabled" before its arguments
are parsed; it takes no writeConcern (72). Each database's own profiler filter is untouched.
Tidemark answered 59 CommandNotFound.
"""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.commands("setProfilingFilterGlobally")

FILTERS = st.one_of(st.just("unset"), st.dictionaries(st.sampled_from(["millis", "op", "ns"]),
                                                      st.integers(0, 9), max_size=2),
                    st.integers(), st.text(max_size=3), st.none())


@settings(max_examples=25, deadline=None)
@given(flt=FILTERS, db=st.sampled_from(["admin", "test", "prof_glob"]), with_filter=st.booleans())
def test_set_profiling_filter_globally_needs_its_query_knob(client, flt, db, with_filter):
    cmd = SON([("setProfilingFilterGlobally", 1), *([("filter", flt)] if with_filter else [])])
    with pytest.raises(OperationFailure) as e:
        client[db].command(cmd)
    assert (e.value.code, e.value.details["errmsg"]) == (
        7283301, "setProfilingFilterGlobally command requires query knob to be enabled")


def test_a_database_filter_is_untouched(client):
    db = client.prof_glob
    db.command("profile", 0, filter={"millis": {"$gt": 5}})
    with pytest.raises(OperationFailure):
        db.command("setProfilingFilterGlobally", 1, filter="unset")
    assert db.command("profile", -1)["filter"] == {"millis": {"$gt": 5}}
    db.command("profile", 0, filter="unset")
    with pytest.raises(OperationFailure) as e:
        db.command(SON([("setProfilingFilterGlobally", 1), ("filter", {}), ("writeConcern", {"w": 1})]))
    assert e.value.code == 72
