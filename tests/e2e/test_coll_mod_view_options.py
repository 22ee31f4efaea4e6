"""collMod of a view refuses every option a view cannot hold with 72 InvalidOptions, the first in the
order mongod's parseCollModRequest looks at them (coll_mod.cpp: cappedSize/cappedMax, index, validator,
validationLevel, validationAction, changeStreamPreAndPostImages, expireAfterSeconds: "option not
supported on a view: <option>"; timeseries and timeseriesBucketsMayHaveMixedSchemaData: "option only
supported on a time-series collection: <option>"), and leaves the view as it was.

Tidemark answered ok and changed nothing for cappedSize, cappedMax, changeStreamPreAndPostImages,
timeseries and timeseriesBucketsMayHaveMixedSchemaData on a view (jstests/core/ddl/
coll_mod_cappedsize_on_view.js: InvalidOptions for cappedSize and cappedMax; 7.0 itself dereferenced the
view's missing collection there, SERVER-124967). The test draws any set of such options, alone or with
viewOn/pipeline, and checks the error and that the view's definition is unchanged."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.commands("collMod", "create", "listCollections")

NOT_ON_A_VIEW = {
    "cappedSize": 1024,
    "cappedMax": 100,
    "index": {"name": "a_1", "hidden": True},
    "validator": {"a": {"$exists": True}},
    "validationLevel": "off",
    "validationAction": "warn",
    "changeStreamPreAndPostImages": {"enabled": True},
    "expireAfterSeconds": 60,
}
ONLY_ON_TIMESERIES = {
    "timeseries": {"granularity": "hours"},
    "timeseriesBucketsMayHaveMixedSchemaData": True,
}
ORDER = list(NOT_ON_A_VIEW) + list(ONLY_ON_TIMESERIES)
OPTIONS = {**NOT_ON_A_VIEW, **ONLY_ON_TIMESERIES}


def _view_definition(db) -> dict:
    [info] = db.command("listCollections", filter={"name": "v"})["cursor"]["firstBatch"]
    return info["options"]


@pytest.fixture
def view_db(db):
    db.create_collection("base")
    db.command("create", "v", viewOn="base", pipeline=[{"$match": {"a": 1}}])
    return db


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=st.lists(st.sampled_from(ORDER), min_size=1, unique=True), redefine=st.booleans(),
       order=st.randoms(use_true_random=False))
def test_a_view_refuses_what_it_cannot_hold(view_db, chosen, redefine, order):
    before = _view_definition(view_db)
    fields = list(chosen)
    order.shuffle(fields)  # the command's field order does not choose the error: mongod's parse order does
    cmd = {"collMod": "v", **{k: OPTIONS[k] for k in fields}}
    if redefine:
        cmd.update(viewOn="base", pipeline=[])
    with pytest.raises(Exception) as raised:
        view_db.command(cmd)
    first = min(chosen, key=ORDER.index)
    reason = "not supported on a view" if first in NOT_ON_A_VIEW else "only supported on a time-series collection"
    assert raised.value.code == 72, raised.value.details
    assert raised.value.details["errmsg"] == f"option {reason}: {first}"
    assert _view_definition(view_db) == before


def test_a_view_is_still_redefined(view_db):
    view_db.command({"collMod": "v", "viewOn": "base", "pipeline": []})
    assert _view_definition(view_db) == {"viewOn": "base", "pipeline": []}


@pytest.mark.parametrize("option", ["cappedSize", "cappedMax"])
def test_capped_options_on_a_collection_keep_their_rule(view_db, option):
    with pytest.raises(Exception) as raised:
        view_db.command({"collMod": "base", option: NOT_ON_A_VIEW[option]})
    assert raised.value.code == 72
