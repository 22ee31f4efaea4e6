"""Server-side JavaScript (``$where``, ``$function``, ``$accumulator``) on QuickJS (the ``quickjs`` wheel).

Public API:

- ``set_enabled(flag)`` / ``enabled()``: ``--noscripting`` / ``security.javascriptEnabled: false`` turn
  JavaScript off; then ``$where`` answers 6108304 "no globalScriptEngine in $where parsing" (at parse,
  as mongod 7.0's JsFunction) and ``$function``/``$accumulator`` 31264 "Cannot run server-side javascript
  without the javascript engine enabled" (when they run, as mongod's getJsExecWithScope).
- ``JsFunction(source, *, where=False)``: a function compiled lazily, per thread, on first call;
  ``call(args, this=None)`` runs it with BSON values converted both ways; ``predicate(doc)`` (``$where``:
  ``this`` and the global ``obj`` are the document, the result is truthy-tested).

The sandbox: QuickJS's bare context (ECMAScript builtins only: no ``require``, ``load``, ``fetch``,
``std``/``os`` modules, timers or host objects), plus a small shell-like scope: ``NumberInt``,
``NumberLong``, ``NumberDecimal`` (plain numbers here), ``ObjectId`` (``.str``, ``toString``,
``equals``), ``ISODate`` (a ``Date``), ``tojson`` / ``tojsononeline`` (JSON), ``print`` / ``printjson`` /
``printjsononeline`` (no-ops), the helpers of mongod's scope that ``$where`` bodies use (``assert`` with
``eq``/``neq``/``lt``/``lte``/``gt``/``gte``/``isnull``, ``doassert``, ``isNumber``/``isString``/``isObject``,
``Object.keySet``, ``Array.sum``/``avg``/``contains``/``unique``, which map-reduce functions use), ``sleep(ms)`` (the call unwinds,
the host waits in wall-clock time with the operation's interruption checked, then runs the call again
with that sleep already done: a ``try``/``catch`` around ``sleep`` in user code sees the unwinding).

Values: int32 / Int64 / double / Decimal128 -> JS number (so longs past 2**53 and decimals are
approximated, where mongod gives NumberLong / NumberDecimal objects); string, bool, null, arrays,
documents as themselves; datetime -> ``Date``; ObjectId -> ``ObjectId``; regex -> ``RegExp`` (options i,
m, s); a missing value -> undefined; other types (binary, timestamp, ...) -> their string form. Back: a JS
number is a double (as in mongod), ``NumberInt(x)`` an int32, ``Date`` a datetime, ``ObjectId`` an
ObjectId, ``RegExp`` a regex, undefined null. ``this`` in ``$function`` / ``$accumulator`` is an object
without properties. An error answers 139 with the error and the user's stack frames (``name@:line``).
The glue keeps its own references to the builtins it uses, so code redefining ``JSON``, ``Date`` or
``Function.prototype.apply`` changes only what that code itself sees.

Bounds. Memory: each thread's engine has a heap limit (``HEAP_LIMIT_BYTES``); running out answers 146
ExceededMemoryLimit "Out of memory" and the thread's engine is thrown away (the server goes on). Time:
the engine stops a call after a CPU-time slice (``FIRST_SLICE_SECONDS``, doubling); between slices the
operation's interruption check runs (50 MaxTimeMSExpired, 11601 killOp) and the call is run again from
its inputs with the doubled slice (like the regex matcher): total work stays under twice the longest
slice, and a call's JavaScript side effects on globals may repeat. The engine runs with the GIL
released, so the call hands on the read's run token meanwhile (``interrupt.gil_released``).
Scopes: mongod pools its ``$where`` scopes per database and authenticated user (js_function.cpp:
``getPooledScope(dbName, "where" + getAuthenticatedUserNamesToken)``), and this module keys every scope
so: what one user's code leaves in the global scope of a database (a redefined ``Math.max``, a global
holding a document another user may not read) is never seen by another user's code, nor by code run in
another database. The key is the running operation's database (``interrupt.current().ns``) and user
(``interrupt.current().user``; None without authentication, one scope shared as in mongod).
Threads: QuickJS runtimes must not be shared between threads, so each thread has its own engine per
scope (the ``ENGINES_PER_THREAD`` most recently used) and compiles a function on its first call
there (a small LRU per engine).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.objectid import ObjectId
from bson.regex import Regex

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import interrupt
from tidemark.query.values import MISSING

__all__ = ["JsFunction", "enabled", "set_enabled", "require_enabled", "HEAP_LIMIT_BYTES", "JS_ERROR"]

HEAP_LIMIT_BYTES = 64 * 1024 * 1024
STACK_LIMIT_BYTES = 512 * 1024
FIRST_SLICE_SECONDS = 0.02
FUNCTIONS_PER_THREAD = 256
ENGINES_PER_THREAD = 16  # (database, user) scopes a thread keeps (each a QuickJS context: ~0.1 MB with its prelude)
JS_ERROR = ErrorCode.JSInterpreterFailure  # 139

_ENABLED = True


def set_enabled(flag: bool) -> None:
    """``--noscripting`` (False) / the default (True); set once at start-up."""
    global _ENABLED
    _ENABLED = bool(flag)


def enabled() -> bool:
    return _ENABLED


def require_enabled() -> None:
    """mongod's refusal for ``$function`` / ``$accumulator`` when scripting is off."""
    if not _ENABLED:
        raise MongoError(31264, "Cannot run server-side javascript without the javascript engine enabled")


# The shell-like scope and the marshalling helpers. Tagged objects {"\u0001t": kind, "v": value} carry
# the types JSON lacks; the reviver/replacer turn them into / out of JS values.
_PRELUDE = r"""
(function (g) {
  var T = "\u0001t";
  // The glue keeps its own references to the builtins it uses: code that redefines a global (JSON,
  // Date, Function.prototype.apply ...) changes what it sees itself, never how values cross over.
  var parse = JSON.parse, stringify = JSON.stringify, isArray = Array.isArray, apply = Reflect.apply;
  var hasOwn = Object.prototype.hasOwnProperty, DateC = Date, RegExpC = RegExp, NumberC = Number;
  var StringC = String, isFiniteC = isFinite, evalC = eval;
  function own(o, k) { return apply(hasOwn, o, [k]); }
  function ObjectId(hex) {
    if (!(this instanceof ObjectId)) return new ObjectId(hex);
    this.str = String(hex);
  }
  ObjectId.prototype.toString = function () { return 'ObjectId("' + this.str + '")'; };
  ObjectId.prototype.toJSON = function () { return {"$oid": this.str}; };
  ObjectId.prototype.equals = function (o) { return o instanceof ObjectId && o.str === this.str; };
  ObjectId.prototype.valueOf = function () { return this.str; };
  function NumberInt(x) { if (!(this instanceof NumberInt)) return new NumberInt(x); this.v = (Number(x) | 0); }
  NumberInt.prototype.valueOf = function () { return this.v; };
  NumberInt.prototype.toNumber = function () { return this.v; };
  NumberInt.prototype.toString = function () { return "NumberInt(" + this.v + ")"; };
  g.ObjectId = ObjectId;
  g.NumberInt = NumberInt;
  g.NumberLong = function (x) { return Number(x); };
  g.NumberDecimal = function (x) { return Number(x); };
  g.ISODate = function (s) { return s === undefined ? new Date() : new Date(s); };
  g.tojson = function (x) { return JSON.stringify(x); };
  g.tojsononeline = g.tojson;
  g.print = function () {};
  g.printjson = g.print;
  g.printjsononeline = g.print;
  // the shell helpers mongod's scope has too (its assert.js and types.js), which $where bodies use
  g.isNumber = function (x) { return typeof x === "number"; };
  g.isString = function (x) { return typeof x === "string"; };
  g.isObject = function (x) { return typeof x === "object"; };
  Array.sum = function (a) { var t = 0; for (var i = 0; i < a.length; i++) { t += a[i]; } return t; };
  Array.avg = function (a) { return a.length ? Array.sum(a) / a.length : NaN; };
  Array.contains = function (a, x) { for (var i = 0; i < a.length; i++) { if (a[i] == x) { return true; } } return false; };
  Array.unique = function (a) { var u = []; for (var i = 0; i < a.length; i++) { if (u.indexOf(a[i]) < 0) { u.push(a[i]); } } return u; };
  Object.keySet = function (o) {
    var keys = [];
    for (var k in o) { if (Object.prototype.hasOwnProperty.call(o, k)) keys.push(k); }
    return keys;
  };
  function doassert(msg) {
    if (typeof msg === "function") msg = msg();
    throw new Error(msg === undefined ? "assert failed" : String(msg));
  }
  function show(x) { return x instanceof RegExp ? String(x) : JSON.stringify(x); }
  function same(a, b) { return a == b || show(a) === show(b); }
  function check(ok, text, msg) { if (!ok) doassert(text + (msg === undefined ? "" : " : " + msg)); }
  function assert(ok, msg) { if (!ok) doassert(msg === undefined ? "assert failed" : msg); }
  assert.eq = function (a, b, msg) { check(same(a, b), "[" + show(a) + "] != [" + show(b) + "] are not equal", msg); };
  assert.neq = function (a, b, msg) { check(!same(a, b), "[" + show(a) + "] == [" + show(b) + "] are equal", msg); };
  assert.lt = function (a, b, msg) { check(a < b, "[" + show(a) + "] < [" + show(b) + "] is false", msg); };
  assert.lte = function (a, b, msg) { check(a <= b, "[" + show(a) + "] <= [" + show(b) + "] is false", msg); };
  assert.gt = function (a, b, msg) { check(a > b, "[" + show(a) + "] > [" + show(b) + "] is false", msg); };
  assert.gte = function (a, b, msg) { check(a >= b, "[" + show(a) + "] >= [" + show(b) + "] is false", msg); };
  assert.isnull = function (a, msg) { check(a === null || a === undefined, "supposed to be null (" + show(a) + ")", msg); };
  g.doassert = doassert;
  g.assert = assert;
  // sleep(ms), as mongod's scope has it (drivers' suites slow a $where down with it). QuickJS cannot
  // block, nor call the host while a time limit is set, so sleep() unwinds the call with SLEEP and the
  // host waits (interruptibly) and runs the call again; on that run the sleeps already waited return
  // at once (sleeps.done), so a call sleeps each time once.
  var SLEEP = {};
  var sleeps = {done: 0, next: 0, ms: 0};
  g.sleep = function (ms) {
    if (typeof ms !== "number") throw new Error("sleep takes a single numeric argument -- sleep(milliseconds)");
    if (sleeps.next++ < sleeps.done) return undefined;
    sleeps.ms = ms;
    throw SLEEP;
  };
  var fns = [];
  function revive(k, v) {
    if (v !== null && typeof v === "object" && !isArray(v) && own(v, T)) {
      switch (v[T]) {
        case "date": return new DateC(v.v);
        case "oid": return new ObjectId(v.v);
        case "num": return NumberC(v.v);
        case "undef": return undefined;
        case "re": return new RegExpC(v.v[0], v.v[1]);
      }
    }
    return v;
  }
  function replace(k, v) {
    var o = this[k];
    if (o instanceof DateC) return {"\u0001t": "date", "v": o.getTime()};
    if (o instanceof ObjectId) return {"\u0001t": "oid", "v": o.str};
    if (o instanceof RegExpC) return {"\u0001t": "re", "v": [o.source, o.flags]};
    if (o instanceof NumberInt) return {"\u0001t": "int", "v": o.v};
    if (typeof o === "number" && !isFiniteC(o)) return {"\u0001t": "num", "v": StringC(o)};
    if (o === undefined) return k === "" ? null : undefined;
    if (typeof o === "function") return {"\u0001t": "code", "v": StringC(o)};
    if (typeof o === "bigint") return NumberC(o);
    return v;
  }
  g.__tm_compile = function (src) {
    var f = (0, evalC)(src);  // indirect: the global scope
    if (typeof f !== "function") throw new TypeError("the body did not evaluate to a function");
    fns.push(f);
    return fns.length - 1;
  };
  g.__tm_call = function (id, thisJson, argsJson, where, sleepsDone) {
    // $function / $accumulator: 'this' is an object of no properties, as mongod's (not the global object)
    var self = thisJson === "" ? {} : parse(thisJson, revive);
    var args = parse(argsJson, revive);
    sleeps.done = sleepsDone;
    sleeps.next = 0;
    try {
      if (where) { g.obj = self; return apply(fns[id], self, args) ? "true" : "false"; }
      var r = apply(fns[id], self, args);
      var s = stringify(r, replace);
      return s === undefined ? "null" : s;
    } catch (e) {
      if (e === SLEEP) return "\u0001sleep " + sleeps.ms;
      throw e;
    }
  };
})(globalThis);
"""


def _to_js(v: Any) -> Any:
    """A Python BSON value as the JSON the prelude's reviver reads."""
    t = type(v)
    if t is str or t is bool or v is None:
        return v
    if t is int:
        return v
    if t is float:
        return v if math.isfinite(v) else {"\u0001t": "num", "v": repr(v).replace("inf", "Infinity")
                                           .replace("nan", "NaN")}
    if t is dict:
        return {k: _to_js(x) for k, x in v.items() if x is not MISSING}
    if t is list:
        return [_to_js(x) for x in v]
    if isinstance(v, dict):  # SON and other mappings
        return {k: _to_js(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_to_js(x) for x in v]
    if t is Int64 or isinstance(v, int):
        return int(v)
    if t is Decimal128:  # a JS number: a decimal past a double's range is an infinity (-1E+6000 too)
        d = v.to_decimal()
        return _to_js(float("nan") if d.is_nan() else float(d))
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(_dt.UTC).replace(tzinfo=None)
        ms = (v - _dt.datetime(1970, 1, 1)) // _dt.timedelta(milliseconds=1)
        return {"\u0001t": "date", "v": ms}
    if hasattr(v, "as_datetime") and hasattr(v, "__int__"):  # DatetimeMS
        return {"\u0001t": "date", "v": int(v)}
    if t is ObjectId:
        return {"\u0001t": "oid", "v": str(v)}
    if t is Regex:  # a RegExp (_js_flags)
        return {"\u0001t": "re", "v": [v.pattern, _js_flags(v.flags)]}
    if v is MISSING:
        return {"\u0001t": "undef"}
    return str(v)


# JavaScript has i, m and s of BSON's options (its u changes the pattern syntax; x and l it lacks)
_JS_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def _js_flags(flags: int | str) -> str:
    """A BSON regex's options as JavaScript RegExp flags."""
    if isinstance(flags, str):
        return "".join(f for f in flags if f in "ims")
    return "".join(letter for bit, letter in _JS_FLAGS if flags & bit)


def _from_tag(obj: dict) -> Any:
    kind = obj.get("\u0001t")
    if kind is None or len(obj) != 2:
        return obj
    v = obj["v"]
    if kind == "date":
        return _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=v)
    if kind == "oid":
        return ObjectId(v)
    if kind == "int":
        return int(v)
    if kind == "num":
        return float(v.replace("Infinity", "inf"))
    if kind == "re":
        return Regex(v[0], "".join(f for f in "ims" if f in v[1]))
    if kind == "code":
        from bson.code import Code
        return Code(v)
    return obj


def _from_js(text: str) -> Any:
    return json.loads(text, object_hook=_from_tag, parse_int=float)


def _wrap_source(source: str, where: bool) -> list[str]:
    """The candidate expressions that evaluate to the user's function: the function itself, or (a
    ``$where`` expression string) a function returning the expression, or running the statements."""
    s = source.strip()
    if s.startswith("function") or s.startswith("(") or "=>" in s.split("{", 1)[0]:
        return ["(" + s + "\n)"]
    if where:
        return ["(function () { return (" + s + "\n); })", "(function () {" + s + "\n})"]
    return ["(" + s + "\n)"]


class _Engine:
    """One thread's QuickJS context and its compiled functions (never used by another thread)."""

    def __init__(self) -> None:
        import quickjs  # type: ignore[import-untyped]  # imported on first use: start-up stays light
        self.quickjs = quickjs
        self.ctx = quickjs.Context()
        self.ctx.set_memory_limit(HEAP_LIMIT_BYTES)
        self.ctx.set_max_stack_size(STACK_LIMIT_BYTES)
        self.ctx.eval(_PRELUDE)
        self.compile_fn = self.ctx.get("__tm_compile")
        self.call_fn = self.ctx.get("__tm_call")
        self.ctx.eval("delete globalThis.__tm_compile; delete globalThis.__tm_call;")  # user code never sees them
        self.functions: OrderedDict[tuple[str, bool], int] = OrderedDict()
        self.slice = -1.0
        self.stored: StoredGlobals = ()  # the <db>.system.js globals this scope holds (``load_stored``)

    def load_stored(self, stored: StoredGlobals) -> None:
        """Make the scope's stored globals ``stored`` (mongod's Scope::loadStored): those no longer in
        system.js are deleted, the others (re)defined — a Code value as a function, any other as its
        value."""
        self._set_slice(1.0)
        names = {name for name, _ in stored}
        script = [f"delete globalThis[{json.dumps(name)}];" for name, _ in self.stored if name not in names]
        for name, value in stored:
            text = f"({value})" if isinstance(value, Code) else json.dumps(_to_js(value), allow_nan=False)
            script.append(f"globalThis[{json.dumps(name)}] = {text};")
        try:
            self.ctx.eval("\n".join(script))
        except self.quickjs.JSException as exc:
            raise _translate(exc, self) from None
        self.stored = stored

    def function_id(self, source: str, where: bool) -> int:
        key = (source, where)
        fid = self.functions.get(key)
        if fid is not None:
            self.functions.move_to_end(key)
            return fid
        if len(self.functions) >= FUNCTIONS_PER_THREAD:
            raise _Reset()  # the prelude's table only grows: start a fresh engine rather than leak
        self._set_slice(1.0)
        error: Exception | None = None
        for candidate in _wrap_source(source, where):
            try:
                fid = self.compile_fn(candidate)
                break
            except self.quickjs.JSException as exc:
                error = exc
        else:
            assert error is not None
            raise _translate(error, self)
        self.functions[key] = fid
        return fid

    def _set_slice(self, seconds: float) -> None:
        if seconds != self.slice:
            self.ctx.set_time_limit(seconds)
            self.slice = seconds

    def call(self, fid: int, this_json: str, args_json: str, where: bool) -> str:
        slice_ = FIRST_SLICE_SECONDS
        sleeps_done = 0
        while True:
            self._set_slice(slice_)
            try:
                result = interrupt.gil_released(self.call_fn, fid, this_json, args_json, where, sleeps_done)
            except self.quickjs.JSException as exc:
                if not str(exc).startswith("InternalError: interrupted"):
                    raise _translate(exc, self) from None
                interrupt.check()  # 50 / 11601 / 11600; otherwise run the call again with a longer slice
                slice_ *= 2
                continue
            if not result.startswith(_SLEEP_MARK):
                return result
            _sleep(float(result[len(_SLEEP_MARK):]) / 1000.0)  # the prelude's sleep(ms): wait, run again
            sleeps_done += 1


_SLEEP_MARK = "\u0001sleep "
SLEEP_CHECK_SECONDS = 0.01


def _sleep(seconds: float) -> None:
    """JavaScript's ``sleep``: wall-clock time, the run token handed on meanwhile, the operation's
    interruption checked every ``SLEEP_CHECK_SECONDS`` (mongod's sleep wakes on a kill or a deadline)."""
    deadline = time.monotonic() + max(seconds, 0.0)
    while True:
        interrupt.check()
        left = deadline - time.monotonic()
        if left <= 0:
            return
        interrupt.gil_released(time.sleep, min(left, SLEEP_CHECK_SECONDS))


class _Reset(Exception):
    """The thread's engine must be replaced (out of memory, or its function table is full)."""


def _is_oom(message: str) -> bool:
    """QuickJS throws "InternalError: out of memory", or null when even that error could not be made.
    The heap is freed while the exception unwinds, so the null cannot be told from a user's own
    ``throw null`` (rare): both answer 146 and get a fresh engine."""
    return (message.startswith("InternalError: out of memory") or message.strip() == "null"
            or "Failed obtaining QuickJS error string" in message)


def _translate(exc: Exception, engine: _Engine) -> Exception:
    message = str(exc)
    if isinstance(exc, engine.quickjs.StackOverflow):
        return MongoError(JS_ERROR, "InternalError: too much recursion")
    if _is_oom(message):
        return _OutOfMemory()
    return MongoError(JS_ERROR, _with_stack(message))


_FRAME = re.compile(r"\s*at (\S+) \((?:<input>(?::(\d+))?|native)\)")


def _with_stack(message: str) -> str:
    """mongod's form of a JavaScript error: the error, then " :" and the user's stack frames, one
    ``name@:line`` per line (the frames from the prelude's glue on, which begin at its ``apply``, are
    left out: meaningless to the client)."""
    lines = message.strip().split("\n")
    frames = []
    for line in lines[1:]:
        found = _FRAME.match(line)
        if found is None or line.strip() == "at apply (native)":
            break
        name, number = found.groups()
        frames.append(("" if name == "<anonymous>" else name) + "@:" + (number or ""))
    head = lines[0] or "uncaught exception"
    return head + " :\n" + "\n".join(frames) if frames else head


class _OutOfMemory(Exception):
    pass


_local = threading.local()


def _database() -> str:
    """The database of the operation running (its ``ns``); empty outside an operation."""
    ns = getattr(interrupt.current(), "ns", None)
    return ns.partition(".")[0] if type(ns) is str else ""


ScopeKey = tuple[str, Any]


def _scope_key() -> ScopeKey:
    """The scope of the operation running: its database and its authenticated user (see the module
    doc: mongod's pooled scope per database and user), ("", None) outside an operation."""
    return _database(), getattr(interrupt.current(), "user", None)


def _engines() -> OrderedDict[ScopeKey, _Engine]:
    engines = getattr(_local, "engines", None)
    if engines is None:
        engines = _local.engines = OrderedDict()
    return engines


def _engine() -> _Engine:
    """This thread's engine for the running operation's database and user (the least recently used
    of more than ``ENGINES_PER_THREAD`` is closed)."""
    engines = _engines()
    key = _scope_key()
    engine = engines.get(key)
    if engine is None:
        engine = engines[key] = _Engine()
        if len(engines) > ENGINES_PER_THREAD:
            engines.popitem(last=False)
    else:
        engines.move_to_end(key)
    return engine


def _drop_engine() -> None:
    """The next call in this scope starts afresh (out of memory, or a full function table)."""
    _engines().pop(_scope_key(), None)


def _out_of_memory() -> MongoError:
    _drop_engine()  # a context that ran out of memory may be unusable: the next call starts afresh
    return MongoError(ErrorCode.ExceededMemoryLimit, "Out of memory")


# (name, value) of each document of <db>.system.js, in _id order: the globals a $where or mapReduce scope
# starts with
StoredGlobals = tuple[tuple[str, Any], ...]
_stored_loader: Callable[[str], StoredGlobals] | None = None


def set_stored_loader(loader: Callable[[str], StoredGlobals] | None) -> None:
    """The server's reader of ``<db>.system.js`` (this package reads no storage)."""
    global _stored_loader
    _stored_loader = loader


def stored_globals() -> StoredGlobals:
    """The running operation's database's system.js globals, read now (a $where or mapReduce takes them
    when it is parsed, as mongod loads them into the scope per operation; $function and $accumulator do
    not see them)."""
    database = _database()
    if _stored_loader is None or not database:
        return ()  # outside an operation (pure use) there is no database, so no system.js to read
    return _stored_loader(database)


class JsFunction:
    """A user's JavaScript function (its source), run per thread on QuickJS (see the module doc);
    ``stored``: the system.js globals its scope must hold first (``stored_globals``)."""

    __slots__ = ("source", "where", "stored")

    def __init__(self, source: str, *, where: bool = False, stored: StoredGlobals = ()):
        self.source = source
        self.where = where
        self.stored = stored

    def _run(self, this_json: str, args_json: str) -> str:
        for _ in range(2):
            engine = _engine()
            try:
                if engine.stored != self.stored:
                    engine.load_stored(self.stored)
                fid = engine.function_id(self.source, self.where)
                return engine.call(fid, this_json, args_json, self.where)
            except _Reset:
                _drop_engine()
            except _OutOfMemory:
                raise _out_of_memory() from None
        raise MongoError(JS_ERROR, "could not compile the function")

    def call(self, args: list, this: Any = None) -> Any:
        """``fn.apply(this, args)`` with BSON values in and out (see the module doc)."""
        this_json = "" if this is None else json.dumps(_to_js(this), allow_nan=False)
        result = self._run(this_json, json.dumps([_to_js(a) for a in args], allow_nan=False))
        return _from_js(result)

    def predicate(self, doc: dict) -> bool:
        """``$where``: the function with ``this`` (and ``obj``) the document, truthy-tested."""
        return self._run(json.dumps(_to_js(doc), allow_nan=False), "[]") == "true"
