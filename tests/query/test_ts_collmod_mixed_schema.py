"""collMod's ``timeseriesBucketsMayHaveMixedSchemaData`` flag on a time-series collection
(``tidemark.timeseries.collmod.plan_coll_mod``; timeseries_mixed_bucket_schema.js sets it)."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.timeseries.collmod import plan_coll_mod

OPTIONS = {"timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3600}


@pytest.mark.parametrize("flag", [True, False, 1, 0.0, None])
def test_mixed_schema_flag_is_accepted_and_changes_no_option(flag):
    """A safeBool (coll_mod.idl: a bool or any number; a null reads as absent) is accepted; reads never
    assume one type per bucket field, so nothing else changes."""
    plan = plan_coll_mod({"collMod": "c", "timeseriesBucketsMayHaveMixedSchemaData": flag}, dict(OPTIONS))
    assert plan.is_noop


@pytest.mark.parametrize(("value", "type_name"), [("yes", "string"), ({}, "object")])
def test_mixed_schema_flag_must_be_a_safe_bool(value, type_name):
    """The one field table's type (server/arguments.py): any other type is 14 TypeMismatch naming the field."""
    with pytest.raises(MongoError) as info:
        plan_coll_mod({"collMod": "c", "timeseriesBucketsMayHaveMixedSchemaData": value}, dict(OPTIONS))
    assert info.value.code == 14
    assert info.value.message == (
        f"BSON field 'collMod.timeseriesBucketsMayHaveMixedSchemaData' is the wrong type '{type_name}', "
        "expected types '[bool, long, int, decimal, double]'")


def test_an_unknown_field_is_refused_by_the_one_field_table():
    with pytest.raises(MongoError) as info:
        plan_coll_mod({"collMod": "c", "readPreference": {"mode": "primary"}}, dict(OPTIONS))
    assert (info.value.code, info.value.message) == (40415, "BSON field 'collMod.readPreference' is an unknown field.")
