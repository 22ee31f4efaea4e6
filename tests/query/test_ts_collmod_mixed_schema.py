"""collMod's ``timeseriesBucketsMayHaveMixedSchemaData`` flag on a time-series collection
(``tidemark.timeseries.collmod.plan_coll_mod``; timeseries_mixed_bucket_schema.js sets it)."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.timeseries.collmod import plan_coll_mod

OPTIONS = {"timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}


@pytest.mark.parametrize("flag", [True, False])
def test_mixed_schema_flag_is_accepted_and_changes_no_option(flag):
    """A bool is accepted; reads never assume one type per bucket field, so nothing else changes."""
    plan = plan_coll_mod({"collMod": "c", "timeseriesBucketsMayHaveMixedSchemaData": flag}, dict(OPTIONS))
    assert plan.is_noop


@pytest.mark.parametrize(("value", "type_name"), [(1, "int"), ("yes", "string"), (None, "null")])
def test_mixed_schema_flag_must_be_bool(value, type_name):
    """mongod's IDL: any other type is 14 TypeMismatch naming the field and 'bool'."""
    with pytest.raises(MongoError) as info:
        plan_coll_mod({"collMod": "c", "timeseriesBucketsMayHaveMixedSchemaData": value}, dict(OPTIONS))
    assert info.value.code == 14
    assert info.value.message == (
        f"BSON field 'collMod.timeseriesBucketsMayHaveMixedSchemaData' is the wrong type '{type_name}', "
        "expected type 'bool'")
