"""Server-side JavaScript on QuickJS (server/query/javascript.py): $where, $function, $accumulator.

Cases follow mongod's jstests (core/where*.js, aggregation/expressions/expression_function.js,
aggregation/accumulators/accumulator_js*.js); the bounds (time slices with the interruption check,
the heap limit) and the sandbox are checked directly."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId

from tidemark.protocol.errors import MongoError
from tidemark.query import interrupt, javascript
from tidemark.query.match import compile_filter
from tidemark.query.pipeline import PipelineContext, run_pipeline

DOCS = [{"_id": i, "a": i % 3, "x": i, "name": "n" + str(i)} for i in range(10)]


def run(pipeline, docs=DOCS):
    return list(run_pipeline(pipeline, iter(docs), PipelineContext()))


def where(spec, docs=DOCS):
    pred = compile_filter({"$where": spec})
    return [d["_id"] for d in docs if pred(d)]


# $where (jstests/core/where1.js, where2.js, where3.js)

def test_where_outside_an_operation_reads_no_stored_functions(monkeypatch):
    # (a loader left by a server that has since closed its storage, as an in-process server stopped
    # before pure code runs $where in the same process, failed every $where with EngineClosed)
    def closed_storage(database):
        raise AssertionError(f"system.js read outside an operation ({database!r})")
    monkeypatch.setattr(javascript, "_stored_loader", closed_storage)
    assert where("this.a == 1") == [1, 4, 7]


@pytest.mark.parametrize("spec", [
    "this.a == 1",
    "return this.a == 1",
    "function() { return this.a == 1; }",
    "function() { return obj.a == 1; }",
    Code("this.a == 1"),
])
def test_where_forms_see_the_document_as_this_and_obj(spec):
    assert where(spec) == [1, 4, 7]


def test_where_combines_with_other_conditions():
    pred = compile_filter({"x": {"$gt": 3}, "$where": "this.name.length == 2 && this.a == 0"})
    assert [d["_id"] for d in DOCS if pred(d)] == [6, 9]


def test_where_bad_type_and_placement():
    with pytest.raises(MongoError) as e:
        compile_filter({"$where": 1})
    assert e.value.code == 2 and e.value.message == "$where got bad type"
    with pytest.raises(MongoError) as e:
        compile_filter({"$where": ""})
    assert e.value.code == 2 and e.value.message == "code for $where cannot be empty"
    with pytest.raises(MongoError) as e:
        compile_filter({"$where": Code("true", {"x": 1})})
    assert e.value.code == 4649201
    with pytest.raises(MongoError) as e:
        compile_filter({"a": {"$where": "true"}})
    assert e.value.code == 2
    with pytest.raises(MongoError) as e:
        run([{"$match": {"$where": "true"}}])
    assert e.value.code == 2 and e.value.message == "$where is not allowed in this context"


def test_where_javascript_error_is_139():
    with pytest.raises(MongoError) as e:
        where("this.a.b.c.d == 1")
    assert e.value.code == 139 and "TypeError" in e.value.message


# $function (jstests/aggregation/expressions/expression_function.js)

def fn(body, args, **extra):
    return {"$function": {"body": body, "args": args, "lang": "js", **extra}}


def test_function_computes_over_fields():
    out = run([{"$project": {"r": fn("function(x, y) { return x * y + 1; }", ["$x", 2])}}, {"$limit": 3}])
    assert out == [{"_id": 0, "r": 1.0}, {"_id": 1, "r": 3.0}, {"_id": 2, "r": 5.0}]


def test_function_in_expr_filter_and_in_group_key():
    pred = compile_filter({"$expr": fn("function(n) { return n.endsWith('3'); }", ["$name"])})
    assert [d["_id"] for d in DOCS if pred(d)] == [3]
    out = run([{"$group": {"_id": fn("function(a) { return a % 2; }", ["$a"]), "n": {"$sum": 1}}},
               {"$sort": {"_id": 1}}])
    assert out == [{"_id": 0.0, "n": 7}, {"_id": 1.0, "n": 3}]


def test_function_body_may_be_code_and_args_may_be_empty():
    assert run([{"$project": {"_id": 0, "r": fn(Code("function() { return 'hi'; }"), [])}}],
               [{"_id": 1}]) == [{"r": "hi"}]


def test_values_convert_both_ways():
    doc = {"_id": 1, "i": 5, "l": Int64(7), "f": 1.5, "s": "x", "b": True, "n": None,
           "arr": [1, [2], {"k": "v"}], "d": dt.datetime(2020, 1, 2, 3, 4, 5, 6000), "o": ObjectId("5f" + "0" * 22)}
    body = """function(d) {
        return {types: [typeof d.i, typeof d.l, typeof d.f, typeof d.s, typeof d.b, d.n === null,
                        Array.isArray(d.arr), d.d instanceof Date, d.o instanceof ObjectId, d.missing === undefined],
                i: d.i, l: d.l, date: d.d, oid: d.o, arr: d.arr, int: NumberInt(4), nan: NaN, undef: undefined,
                next: new Date(d.d.getTime() + 1000), str: d.o.str};
    }"""
    (out,) = run([{"$project": {"_id": 0, "r": fn(body, ["$$ROOT"])}}], [doc])
    r = out["r"]
    assert r["types"] == ["number", "number", "number", "string", "boolean", True, True, True, True, True]
    assert r["i"] == 5.0 and type(r["i"]) is float  # a JS number comes back a double, as in mongod
    assert r["date"] == doc["d"] and r["next"] == dt.datetime(2020, 1, 2, 3, 4, 6, 6000)
    assert r["oid"] == doc["o"] and r["str"] == str(doc["o"])
    assert r["arr"] == [1.0, [2.0], {"k": "v"}]
    assert r["int"] == 4 and type(r["int"]) is int
    assert r["nan"] != r["nan"] and "undef" not in r or r["undef"] is None


DECIMAL_EDGES = [("-1E+6000", float("-inf")), ("1E+6000", float("inf")), ("Infinity", float("inf")),
                 ("-Infinity", float("-inf")), ("1E-6000", 0.0), ("-0", -0.0), ("2.5", 2.5)]


@pytest.mark.parametrize("text, number", DECIMAL_EDGES)
def test_a_decimal_of_any_magnitude_reaches_javascript_as_a_number(text, number):
    """A Decimal128 past a double's range is an infinity in JavaScript, as mongod's JS numbers: -1E+6000
    became a raw -inf the JSON handed to the engine refused (1 InternalError; found by the command
    fuzzer)."""
    (out,) = run([{"$project": {"_id": 0, "r": fn("function(x) { return [x, typeof x]; }", ["$d"])}}],
                 [{"_id": 1, "d": Decimal128(text)}])
    assert out["r"] == [number, "number"]
    (nan,) = run([{"$project": {"_id": 0, "r": fn("function(x) { return x !== x; }", ["$d"])}}],
                 [{"_id": 1, "d": Decimal128("NaN")}])
    assert nan["r"] is True


@pytest.mark.parametrize("spec,code", [
    ("x", 31260),
    ({"args": [], "lang": "js"}, 31261),
    ({"body": "$x", "args": [], "lang": "js"}, 31432),
    ({"body": 1, "args": [], "lang": "js"}, 31262),
    ({"body": "function(){}", "lang": "js"}, 31263),
    ({"body": "function(){}", "args": []}, 31418),
    ({"body": "function(){}", "args": [], "lang": "python"}, 31419),
])
def test_function_parse_errors_are_mongods(spec, code):
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": {"$function": spec}}}])
    assert e.value.code == code


def test_function_args_must_be_an_array_and_errors_are_139():
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": fn("function(){}", "$x")}}])
    assert e.value.code == 31266
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": fn("function() { throw new Error('boom'); }", [])}}])
    # the error, then the user's frames as mongod prints them (name@:line); never the prelude's glue
    assert e.value.code == 139 and e.value.message.split(" :\n")[0] == "Error: boom"
    assert "apply" not in e.value.message and "<input>" not in e.value.message
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": fn("function( { ", [])}}])
    assert e.value.code == 139 and "SyntaxError" in e.value.message


# $accumulator (jstests/aggregation/accumulators/accumulator_js.js)

AVG = {"init": "function() { return {count: 0, sum: 0}; }",
       "accumulate": "function(state, x) { return {count: state.count + 1, sum: state.sum + x}; }",
       "accumulateArgs": ["$x"],
       "merge": "function(a, b) { return {count: a.count + b.count, sum: a.sum + b.sum}; }",
       "finalize": "function(state) { return state.sum / state.count; }",
       "lang": "js"}


def test_accumulator_average_per_group():
    out = run([{"$group": {"_id": "$a", "avg": {"$accumulator": AVG}}}, {"$sort": {"_id": 1}}])
    assert out == [{"_id": 0, "avg": 4.5}, {"_id": 1, "avg": 4.0}, {"_id": 2, "avg": 5.0}]


def test_accumulator_init_args_without_finalize_and_many_documents():
    spec = {"init": "function(k) { return {key: k, names: []}; }", "initArgs": ["$a"],
            "accumulate": "function(s, n) { s.names.push(n); return s; }", "accumulateArgs": ["$name"],
            "merge": "function(a, b) { return a; }", "lang": "js"}
    (out,) = run([{"$match": {"a": 1}}, {"$group": {"_id": None, "r": {"$accumulator": spec}}}])
    assert out["r"] == {"key": 1.0, "names": ["n1", "n4", "n7"]}
    docs = [{"_id": i, "x": i} for i in range(3000)]  # past one batch of pending calls
    (out,) = run([{"$group": {"_id": None, "avg": {"$accumulator": AVG}}}], docs)
    assert out["avg"] == 1499.5


def test_accumulator_in_bucket():
    out = run([{"$bucket": {"groupBy": "$x", "boundaries": [0, 5, 10], "output": {"avg": {"$accumulator": AVG}}}}])
    assert out == [{"_id": 0, "avg": 2.0}, {"_id": 5, "avg": 7.0}]


@pytest.mark.parametrize("spec,code", [
    ("x", 4544703),
    ({**AVG, "init": "$x"}, 4544701),
    ({**AVG, "init": 1}, 4544702),
    ({**AVG, "lang": 1}, 4544704),
    ({**AVG, "lang": "py"}, 4544705),
    ({**AVG, "bogus": 1}, 4544706),
    ({k: v for k, v in AVG.items() if k != "init"}, 4544707),
    ({k: v for k, v in AVG.items() if k != "accumulate"}, 4544708),
    ({k: v for k, v in AVG.items() if k != "merge"}, 4544709),
    ({k: v for k, v in AVG.items() if k != "accumulateArgs"}, 4544710),
])
def test_accumulator_parse_errors_are_mongods(spec, code):
    with pytest.raises(MongoError) as e:
        run([{"$group": {"_id": None, "r": {"$accumulator": spec}}}])
    assert e.value.code == code


def test_accumulator_args_must_be_arrays():
    with pytest.raises(MongoError) as e:
        run([{"$group": {"_id": None, "r": {"$accumulator": {**AVG, "accumulateArgs": "$x"}}}}])
    assert e.value.code == 4544712
    with pytest.raises(MongoError) as e:
        run([{"$group": {"_id": None, "r": {"$accumulator": {**AVG, "initArgs": 1}}}}])
    assert e.value.code == 4544711


# The sandbox and the bounds

def test_no_file_network_or_module_access():
    body = """function() { return [typeof require, typeof load, typeof fetch, typeof std, typeof os,
                                   typeof process, typeof XMLHttpRequest, typeof import_meta, typeof scriptArgs]; }"""
    (out,) = run([{"$project": {"_id": 0, "r": fn(body, [])}}], [{"_id": 1}])
    assert out["r"] == ["undefined"] * 9
    # import() gives a promise that nothing ever settles: the context has no module loader and no job loop.
    body = "function() { var r = 'pending'; import('os').then(function(m) { r = typeof m.open; }); return r; }"
    (out,) = run([{"$project": {"_id": 0, "r": fn(body, [])}}], [{"_id": 1}])
    assert out["r"] == "pending"


class _Op:
    """An operation whose check raises 50 once past its deadline (as tidemark.operations does)."""

    def __init__(self, seconds: float, code: int = 50):
        self.deadline = time.monotonic() + seconds
        self.code = code
        self.ticks = interrupt.TICKS_PER_CHECK
        self.checks = 0

    def check(self) -> None:
        self.checks += 1
        if time.monotonic() > self.deadline:
            raise MongoError(self.code, "operation exceeded time limit" if self.code == 50 else "operation was interrupted")


@pytest.mark.parametrize("code", [50, 11601])
def test_an_infinite_loop_stops_at_the_interruption_check(code):
    op = _Op(0.1, code)
    start = time.monotonic()
    with pytest.raises(MongoError) as e:
        interrupt.running(op, lambda: where("while (true) {}", DOCS[:1]))
    assert e.value.code == code and op.checks >= 1
    assert time.monotonic() - start < 5
    assert where("this.a == 2") == [2, 5, 8]  # the engine is still usable


def test_a_long_call_completes_across_slices():
    op = _Op(60)
    body = "function() { var t = Date.now(); while (Date.now() - t < 150) {} return 1; }"
    out = interrupt.running(op, lambda: run([{"$project": {"_id": 0, "r": fn(body, [])}}], [{"_id": 1}]))
    assert out == [{"r": 1.0}] and op.checks >= 1


def test_a_memory_bomb_is_out_of_memory_and_the_engine_recovers():
    body = "function() { var a = []; for (;;) a.push('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' + a.length); }"
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": fn(body, [])}}], [{"_id": 1}])
    assert e.value.code == 146 and e.value.message == "Out of memory"
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": fn("function() { var s = 'x'; for (;;) s = s + s; }", [])}}], [{"_id": 1}])
    assert e.value.code == 146
    assert where("this.a == 2") == [2, 5, 8]


def test_deep_recursion_is_a_javascript_error():
    with pytest.raises(MongoError) as e:
        run([{"$project": {"r": fn("function f() { return f() + 1; }", [])}}], [{"_id": 1}])
    assert e.value.code == 139


def test_scripting_disabled_answers_mongods_errors():
    javascript.set_enabled(False)
    try:
        with pytest.raises(MongoError) as e:
            compile_filter({"$where": "true"})
        assert e.value.code == 6108304 and e.value.message == "no globalScriptEngine in $where parsing"
        with pytest.raises(MongoError) as e:
            run([{"$project": {"r": fn("function() { return 1; }", [])}}])
        assert e.value.code == 31264
        assert e.value.message == "Cannot run server-side javascript without the javascript engine enabled"
        with pytest.raises(MongoError) as e:
            run([{"$group": {"_id": None, "r": {"$accumulator": AVG}}}])
        assert e.value.code == 31264
    finally:
        javascript.set_enabled(True)
