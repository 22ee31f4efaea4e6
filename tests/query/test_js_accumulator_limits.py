"""The 16 MB limits of ``$accumulator`` (mongod's AccumulatorJs): a state JavaScript returns must
convert to BSON (an object or array past 16 MB 17260, a long string 10334), and each accumulate call's
state and argument together must fit (4545000) — whatever the batching of calls."""

from __future__ import annotations

import pytest

from tidemark.protocol.errors import MongoError
from tidemark.query.accumulators import parse_accumulator

NEVER = "function() { throw 'should not be called'; }"
MB = 1024 * 1024


def run(spec: dict, docs: list[dict]):
    acc_spec = parse_accumulator("$accumulator", {"merge": NEVER, "lang": "js", **spec})
    acc = acc_spec.new()
    for doc in docs:
        acc.process(acc_spec.evaluate(doc, {}))
    return acc.result()


def fails(code: int, spec: dict, docs: list[dict]) -> None:
    with pytest.raises(MongoError) as info:
        run(spec, docs)
    assert info.value.code == code


@pytest.mark.parametrize("init,code", [
    ("function() { return 'a'.repeat(17 * 1024 * 1024); }", 10334),
    ("function() { var s = 'a'.repeat(1024 * 1024); return Array.from({length: 17}, () => s); }", 17260),
    ("function() { var s = 'a'.repeat(1024 * 1024); var o = {}; for (var i = 0; i < 17; i++) o['k' + i] = s; "
     "return o; }", 17260),
])
def test_init_state_past_16mb(init, code):
    fails(code, {"init": init, "accumulate": NEVER, "accumulateArgs": [], "finalize": NEVER}, [{}])


def test_state_grown_past_16mb_by_accumulate():
    spec = {"init": "function() { return ''; }", "accumulate": "function(s) { return s + 'a'.repeat(1024 * 1024); }",
            "accumulateArgs": []}
    fails(10334, spec, [{}] * 17)


def test_state_and_argument_together_past_16mb():
    ten = ["a" * MB] * 10
    spec = {"init": "function() { return []; }", "accumulate": "function(s, x) { s.push(x); return s; }",
            "accumulateArgs": ["$arr"], "finalize": NEVER}
    fails(4545000, spec, [{"arr": ten}, {"arr": ten}])


def test_large_arguments_under_the_limit_are_fine():
    spec = {"init": "function() { return 0; }", "accumulate": "function(s, x) { return s + x.length; }",
            "accumulateArgs": ["$s"], "finalize": "function(s) { return s; }"}
    assert run(spec, [{"s": "a" * (3 * MB)}] * 8) == 24.0 * MB


def test_many_small_calls_are_batched():
    spec = {"init": "function() { return 0; }", "accumulate": "function(s) { return s + 1; }", "accumulateArgs": [],
            "finalize": "function(s) { return s; }"}
    assert run(spec, [{}] * 3000) == 3000.0
