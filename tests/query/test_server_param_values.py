"""Server-parameter values (server/params.py), in process: the int range of logLevel and of the log
components' verbosity, clearing the default verbosity, and automationServiceDescriptor's limits
(set_param1.js, automation_setparameter.js)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidemark.params import ServerParams
from tidemark.protocol.errors import MongoError

INT32 = st.integers(-(2**31), 2**31 - 1)
OUTSIDE_INT32 = st.one_of(st.integers(max_value=-(2**31) - 1), st.integers(min_value=2**31))


def bad_value(params: ServerParams, name: str, value) -> int:
    with pytest.raises(MongoError) as info:
        params.set_at_runtime(name, value)
    return info.value.code


@given(st.integers(0, 2**31 - 1))
def test_log_level_takes_any_non_negative_int32(value):
    params = ServerParams()
    params.set_at_runtime("logLevel", value)
    params.set_at_runtime("logLevel", float(value))
    assert params["logLevel"] == value and type(params["logLevel"]) is int


@given(st.one_of(OUTSIDE_INT32, st.integers(max_value=-1), st.sampled_from([math.nan, math.inf, 0.5, 2.0**53])))
def test_log_level_refuses_negatives_fractions_and_numbers_outside_int32(value):
    assert bad_value(ServerParams(), "logLevel", value) == 2


@given(INT32.filter(lambda v: v >= -1))
def test_component_verbosity_takes_int32(value):
    params = ServerParams()
    params.set_at_runtime("logComponentVerbosity", {"storage": {"journal": {"verbosity": value}}})
    params.set_at_runtime("logComponentVerbosity", {"accessControl": value})


@given(st.one_of(OUTSIDE_INT32, st.sampled_from([math.nan, -math.inf, 2.0**40])))
def test_component_verbosity_refuses_numbers_outside_int32(value):
    params = ServerParams()
    for doc in ({"storage": {"journal": {"verbosity": value}}}, {"accessControl": value}, {"verbosity": value}):
        assert bad_value(params, "logComponentVerbosity", doc) == 2


def test_a_negative_default_verbosity_clears_it_to_zero():
    params = ServerParams()
    params.set_at_runtime("logComponentVerbosity", {"verbosity": -1, "storage": {"journal": {"verbosity": -1}}})
    assert params["logComponentVerbosity"] == {"": 0, "storage.journal": -1}


@pytest.mark.parametrize("value, code", [(0, 14), (None, 14), (["x"], 14), ("a" * 65, 15), ("é" * 33, 15)])
def test_automation_service_descriptor_limits(value, code):
    assert bad_value(ServerParams(), "automationServiceDescriptor", value) == code


def test_automation_service_descriptor_round_trips():
    params = ServerParams()
    assert params["automationServiceDescriptor"] == ""
    assert params.set_at_runtime("automationServiceDescriptor", "a" * 64) == ""
    assert params["automationServiceDescriptor"] == "a" * 64


def test_startup_values_are_checked_alike():
    params = ServerParams()
    params.set_at_startup("logLevel=3")
    assert params["logLevel"] == 3
    with pytest.raises(ValueError):
        params.set_at_startup("automationServiceDescriptor=" + "a" * 65)
    with pytest.raises(ValueError):
        params.set_at_startup("logLevel=99999999999")
