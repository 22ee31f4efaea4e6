"""setParameter with several parameters and getParameter's selection, as mongod 7.0's CmdSet / CmdGet
(src/mongo/db/commands/parameters.cpp).

setParameter checks every name first, in the command's order (72 InvalidOptions an unknown name, 20
IllegalOperation one not settable at runtime): when one fails nothing is set. Then it sets the values
in name order (its std::map), each parsed as it is set: a bad value fails the command with that
parameter's error after the parameters before it by name were set, and those after it keep their
values. ``was`` is the previous value of the first parameter by name. Tidemark refused any command with
two parameters (2 BadValue "setParameter accepts only one parameter per command").

getParameter answers in name order (mongod walks its parameter map), whatever order the request
names them in; an object first value is the IDL struct GetParameterOptions (40415 an unknown field, 14
a field that is not a bool).
"""

from __future__ import annotations

import pytest
from bson.son import SON
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

# Runtime-settable parameters, with their value at start-up and a test of what each accepts.
SETTABLE = {
    "clientCursorMonitorFrequencySecs": (4, lambda v: v > 0),
    "cursorTimeoutMillis": (600_000, lambda v: v > 0),
    "internalQueryExplainSizeThresholdBytes": (10 * 1024 * 1024, lambda v: v >= 0),
    "scramIterationCount": (10_000, lambda v: v >= 5000),
    "ttlMonitorSleepSecs": (60, lambda v: v > 0),
}
NOT_AT_RUNTIME = ("authenticationMechanisms", "enableTestCommands", "tidemarkRunTokens", "timeseriesBucketMaxCount")
UNKNOWN = ("noSuchParameter", "TTLMonitorSleepSecs")

assignment = st.one_of(
    st.tuples(st.sampled_from(sorted(SETTABLE)), st.integers(-3, 20_000)),
    st.tuples(st.sampled_from(NOT_AT_RUNTIME), st.just(1)),
    st.tuples(st.sampled_from(UNKNOWN), st.just(1)),
)
commands = st.lists(assignment, min_size=1, max_size=6, unique_by=lambda item: item[0])


def _expected(assignments: list[tuple[str, int]]) -> tuple[int | None, dict[str, int], int | None]:
    """(error code or None, the values after the command, ``was``) by mongod's rules."""
    values = {name: default for name, (default, _) in SETTABLE.items()}
    for name, _ in assignments:  # the names, in the command's order, before anything is set
        if name in UNKNOWN:
            return 72, values, None
        if name in NOT_AT_RUNTIME:
            return 20, values, None
    was = None
    for position, (name, value) in enumerate(sorted(assignments)):
        if not SETTABLE[name][1](value):
            return 2, values, None
        if position == 0:
            was = values[name]
        values[name] = value
    return None, values, was


@pytest.fixture
def admin(start_server):
    with start_server().client() as client:
        yield client.admin


def _reset(admin) -> None:
    for name, (default, _) in SETTABLE.items():
        admin.command("setParameter", 1, **{name: default})


@pytest.mark.commands("setParameter", "getParameter")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(assignments=commands)
def test_several_parameters_are_checked_then_set_in_name_order(admin, assignments):
    _reset(admin)
    code, values, was = _expected(assignments)
    command = SON([("setParameter", 1), *assignments])
    if code is None:
        reply = admin.command(command)
        assert reply == {"was": was, "ok": 1.0}
    else:
        with pytest.raises(OperationFailure) as info:
            admin.command(command)
        assert info.value.code == code
    now = admin.command(SON([("getParameter", 1), *((name, 1) for name in SETTABLE)]))
    assert {name: now[name] for name in SETTABLE} == values


@pytest.mark.commands("getParameter")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.sampled_from(sorted(SETTABLE) + list(UNKNOWN)), min_size=1, unique=True),
       details=st.booleans())
def test_get_parameter_answers_in_name_order(admin, names, details):
    selector = {"showDetails": True} if details else 1
    known = sorted(name for name in names if name in SETTABLE)
    command = SON([("getParameter", selector), *((name, 1) for name in names)])
    if not known:
        with pytest.raises(OperationFailure) as info:
            admin.command(command)
        assert info.value.code == 72
        return
    reply = admin.command(command)
    assert list(reply) == [*known, "ok"]
    if details:
        assert all(set(reply[name]) == {"value", "settableAtRuntime", "settableAtStartup"} for name in known)


@pytest.mark.commands("getParameter")
@pytest.mark.parametrize("options, code", [
    ({"showDetails": 1}, 14), ({"allParameters": "yes"}, 14), ({"allParameters": None}, 14),
    ({"showDetail": True}, 40415), ({"allParameters": True, "setAt": "runtime"}, 40415),
])
def test_get_parameter_options_are_a_strict_struct(client, options, code):
    with pytest.raises(OperationFailure) as info:
        client.admin.command(SON([("getParameter", options), ("logLevel", 1)]))
    assert info.value.code == code


@pytest.mark.commands("getParameter")
def test_get_parameter_all_with_details(client):
    everything = client.admin.command("getParameter", {"allParameters": True, "showDetails": True})
    names = [name for name in everything if name != "ok"]
    assert names == sorted(names) and "logLevel" in names
    assert everything["logLevel"] == {"value": 0, "settableAtRuntime": True, "settableAtStartup": True}
    assert list(client.admin.command("getParameter", "*")) == [*(n for n in names if n != "automationServiceDescriptor"), "ok"]
