"""Aggregation expressions: compile an expression once into nested closures, evaluate per document.

Public API (used by stages, the time-series layer and the command layer):

- ``compile_expression(expr, *, allow_vars=True) -> fn(root_doc, variables)``. ``variables`` maps names
  without "$$" ("NOW", user ``let`` names, optionally "ROOT") to values. Field paths read
  CURRENT, which is the root document unless a ``$let`` rebinds it. Absent fields yield
  ``values.MISSING``; ``$$REMOVE`` is MISSING too, and callers that build documents drop MISSING fields.
- ``evaluate(expr, doc, variables=None)``, ``truthy(v)``, ``is_constant(expr)``,
  ``expression_fields(expr) -> set[str] | None`` (top-level fields read; None = the whole document),
  ``now_ms()`` (``$$NOW``'s value: the UTC instant to the millisecond).

Errors mirror mongod: 168 "Unrecognized expression '$foo'", 16020 arity, 15983 for an operator
object with more than one field ("An object representing an expression must have exactly one
field: ..."), 17276 undefined variable, operator-specific type errors.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from bson.int64 import Int64

from tidemark.protocol.errors import ErrorCode, MongoError
from tidemark.query import (
    docmeta,
    expr_accumulators,
    expr_arith,
    expr_arrays,
    expr_conversion,
    expr_dates,
    expr_logic,
    expr_objects,
    expr_sets,
    expr_strings,
    interrupt,
    javascript,
)
from tidemark.query.expr_base import (
    Compiled,
    check_field_name,
    const,
    traverse,
    type_name,
    validate_variable_name,
)
from tidemark.query.expr_logic import truthy
from tidemark.query.hashed import hash64
from tidemark.query.scoped import Scoped
from tidemark.query.value_repr import bson_repr
from tidemark.query.values import MISSING

__all__ = [
    "compile_expression",
    "defined_variables",
    "free_variables",
    "evaluate_let",
    "now_ms",
    "evaluate",
    "truthy",
    "is_constant",
    "expression_fields",
    "OPERATORS",
    "SPECIAL_OPERATORS",
    "SYSTEM_VARIABLES",
]

OPERATORS: dict[str, Any] = {}
for _module in (expr_arith, expr_logic, expr_strings, expr_arrays, expr_sets, expr_objects, expr_conversion,
                expr_dates, expr_accumulators):
    OPERATORS.update(_module.OPERATORS)

SYSTEM_VARIABLES = frozenset({"ROOT", "CURRENT", "NOW", "REMOVE", "CLUSTER_TIME", "USER_ROLES", "SEARCH_META"})
_NOT_SUPPORTED = frozenset({"$accumulator", "$where"})  # not expressions: 224 rather than 168
# Compiled by _compile_object itself rather than through OPERATORS.
SPECIAL_OPERATORS = frozenset({"$literal", "$const", "$let", "$meta", "$toHashedIndexKey", "$function"})


def compile_expression(expr: Any, *, allow_vars: bool = True, collation: Any = None) -> Compiled:
    """Compile ``expr`` into ``fn(root_doc, variables)``; parse errors are raised now, not per doc.

    ``collation`` (``collation.Collation``, None = simple) orders strings in comparisons, ``$in``,
    ``$indexOfArray``, set operators, ``$sortArray``, ``$min``/``$max``; operators read it as
    ``cc.collation`` from the sub-expression compiler they are given.

    A compiled expression is a pure function of its document and variables (``$$NOW`` and the
    command's ``let`` come in ``variables`` at run time), so an expression of strings, integers,
    booleans and nulls compiled under the simple collation is compiled once per shape
    (``_COMPILED``): a repeated query's ``$group`` keys and accumulator arguments are not compiled
    again. Errors are not remembered: an invalid expression raises at every compile.

    Inside ``defined_variables(names)`` (a pipeline being parsed), a reference to a user variable
    that neither ``names`` nor an enclosing ``$let``/``$map``/``$filter``/``$reduce`` defines fails
    17276 now, as mongod's VariablesParseState does; outside it the reference fails when it runs."""
    scope = PARSE_SCOPE.get()
    key = _shape_key(expr, allow_vars) if collation is None else None
    if key is not None:
        fn = _COMPILED.get(key)
        if fn is None:
            fn = _compile(expr, allow_vars, None)
            if len(_COMPILED) >= _COMPILED_MAX:
                _COMPILED.clear()
                _FREE.clear()
            _COMPILED[key] = fn
    else:
        fn = _compile(expr, allow_vars, collation)
    if scope is not None:
        # after compiling: a malformed binder or variable name keeps its own parse error
        free = _FREE.get(key) if key is not None else None
        if free is None:
            free = free_variables(expr)
            if key is not None:
                _FREE[key] = free
        for name in free:
            if name not in scope:
                raise MongoError(17276, f"Use of undefined variable: {name}")
    return fn


_COMPILED: dict[Any, Compiled] = {}
_FREE: dict[Any, tuple[str, ...]] = {}  # free_variables of the shapes in _COMPILED
_COMPILED_MAX = 1024
# The user variables defined where an expression is being parsed (command ``let``, a $lookup's
# ``let``; NOW): None when the caller does not say, and references are then only checked when they run.
# Set by ``defined_variables``' block, and directly by ``pipeline.parse_pipeline`` (every request: no
# block's calls).
PARSE_SCOPE: ContextVar[frozenset[str] | None] = ContextVar("tidemark_parse_scope", default=None)


def defined_variables(names: Iterable[str] | None) -> Scoped[frozenset[str] | None]:
    """Expressions compiled inside this block may reference only ``names`` (besides system variables
    and variables their own binders define): others fail 17276 when compiled. None: not checked."""
    return Scoped(PARSE_SCOPE, None if names is None else frozenset(names))


def free_variables(expr: Any) -> tuple[str, ...]:
    """The user variables ``expr`` references that it does not define itself, in the order met.

    Binders follow mongod's parse scopes: ``$let``'s ``vars`` are visible in ``in`` only (its
    bindings see the outer scope); ``$map``'s ``as`` (default "this") in ``in``; ``$filter``'s in
    ``cond`` (not ``input`` nor ``limit``); ``$reduce``'s "value" and "this" in ``in``."""
    out: dict[str, None] = {}
    _collect_free(expr, frozenset(), out)
    return tuple(out)


def _collect_free(expr: Any, bound: frozenset[str], out: dict[str, None]) -> None:
    t = type(expr)
    if t is str:
        if expr.startswith("$$"):
            name = expr[2:].partition(".")[0]
            if name not in bound and name not in SYSTEM_VARIABLES:
                out[name] = None
        return
    if t is list:
        for e in expr:
            _collect_free(e, bound, out)
        return
    if t is not dict:
        return
    if len(expr) == 1:
        op, arg = next(iter(expr.items()))
        if op == "$literal" or op == "$const":
            return
        if type(arg) is dict and op in _BINDERS:
            if op == "$let":
                names = arg.get("vars")
                names = names if type(names) is dict else {}
                for sub in names.values():
                    _collect_free(sub, bound, out)
                _collect_free(arg.get("in"), bound | set(names), out)
                return
            inner = bound | ({"value", "this"} if op == "$reduce" else {arg.get("as", "this")})
            scoped = "cond" if op == "$filter" else "in"
            for k, sub in arg.items():
                _collect_free(sub, inner if k == scoped else bound, out)
            return
    for sub in expr.values():
        _collect_free(sub, bound, out)


_BINDERS = frozenset({"$let", "$map", "$filter", "$reduce"})
# Not compiled once per shape: a constant holds the request's own (possibly mutable) value, and a
# JavaScript function keeps per-thread state of its own.
_UNSHARED_OPERATORS = frozenset({"$literal", "$const", "$function", "$accumulator", "$where"})


class _Unshaped(Exception):
    pass


def _shape_key(expr: Any, allow_vars: bool) -> Any:
    """A hashable key equal for two expressions exactly when they are the same BSON (types and field
    order included), or None when ``expr`` holds another type (floats: -0.0 == 0.0) or an unshared
    operator."""
    try:
        return (allow_vars, _shape(expr))
    except _Unshaped:
        return None


def compiled_once(expr: Any) -> bool:
    """Whether ``compile_expression(expr)`` under the simple collation is the one function of its shape
    (``_COMPILED``: no constant holding a request's own value, no JavaScript), which any request of that
    shape may hold."""
    return _shape_key(expr, True) is not None


def _shape(v: Any) -> Any:
    t = type(v)
    if t is str:
        return v
    if t is dict:
        items = []
        for k, x in v.items():
            if type(k) is not str or k in _UNSHARED_OPERATORS:
                raise _Unshaped
            items.append((k, x if type(x) is str else _shape(x)))  # (a string is its own shape: no call)
        return ("d", *items)
    if t is list:
        return ("l", *[_shape(x) for x in v])
    if t is int:
        return ("i", v)
    if t is bool:
        return ("b", v)
    if v is None:
        return ("n",)
    raise _Unshaped


def evaluate(expr: Any, doc: dict, variables: dict | None = None) -> Any:
    """Compile and evaluate once (convenience for tests and one-off constant expressions)."""
    return _compile(expr, True)(doc, variables if variables is not None else {})


def _compile(expr: Any, allow_vars: bool = True, coll: Any = None) -> Compiled:
    t = type(expr)
    if t is str:
        if expr.startswith("$"):
            return _compile_path(expr, allow_vars)
        return _mark_const(const(expr))
    if t is dict:
        return _compile_object(expr, allow_vars, coll)
    if t is list:
        items = [_compile(e, allow_vars, coll) for e in expr]
        if all(getattr(f, "is_const", False) for f in items):
            value = [_null_if_missing(f(None, {})) for f in items]
            return _mark_const(lambda doc, vars: list(value))
        return lambda doc, vars: [_null_if_missing(f(doc, vars)) for f in items]
    return _mark_const(const(expr))


def _mark_const(fn: Compiled) -> Compiled:
    fn.is_const = True  # type: ignore[attr-defined]
    return fn


def _null_if_missing(v: Any) -> Any:
    return None if v is MISSING else v


def _cc_factory(allow_vars: bool, coll: Any = None):
    def cc(expr: Any) -> Compiled:
        return _compile(expr, allow_vars, coll)
    cc.collation = coll  # type: ignore[attr-defined]
    return cc


def _compile_object(expr: dict, allow_vars: bool, coll: Any = None) -> Compiled:
    if not expr:
        return lambda doc, vars: {}
    first = next(iter(expr))
    if first.startswith("$"):
        if len(expr) != 1:
            raise MongoError(15983, "An object representing an expression must have exactly one field: "
                                    f"{bson_repr(expr)}")
        if first == "$literal" or first == "$const":
            return _mark_const(const(expr[first]))
        if first == "$let":
            return _compile_let(expr[first], allow_vars, coll)
        if first == "$function":
            return _compile_function(expr[first], allow_vars, coll)
        if first in ("$meta", "$toHashedIndexKey"):
            return _compile_meta(expr[first]) if first == "$meta" else _compile_hashed(expr[first], allow_vars, coll)
        compiler = OPERATORS.get(first)
        if compiler is None:
            if first in _NOT_SUPPORTED:
                raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"{first} is not supported by Tidemark")
            raise MongoError(ErrorCode.InvalidPipelineOperator, f"Unrecognized expression '{first}'")
        return compiler(expr[first], _cc_factory(allow_vars, coll))
    fields = []
    for name, sub in expr.items():
        check_field_name(name)
        fields.append((name, _compile(sub, allow_vars, coll)))

    def build(doc, vars):
        out = {}
        for name, fn in fields:
            v = fn(doc, vars)
            if v is not MISSING:
                out[name] = v
        return out
    return build


def _compile_let(spec: Any, allow_vars: bool, coll: Any = None) -> Compiled:
    if not isinstance(spec, dict):
        raise MongoError(16874, "$let only supports an object as its argument")
    for key in spec:  # the first unknown one, in the order given
        if key != "vars" and key != "in":
            raise MongoError(16875, f"Unrecognized parameter to $let: {key}")
    for key, code in (("vars", 16876), ("in", 16877)):
        if key not in spec:
            raise MongoError(code, f"Missing '{key}' parameter to $let")
    if not isinstance(spec["vars"], dict):
        raise MongoError(10065, "invalid parameter: expected an object (vars)")
    # mongod parses every variable's expression, then checks the names
    bindings = [(name, _compile(sub, allow_vars, coll)) for name, sub in spec["vars"].items()]
    for name, _fn in bindings:
        if not name:
            raise MongoError(16866, "empty variable names are not allowed")
        validate_variable_name(name, allow_current=True)
    body = _compile(spec["in"], allow_vars, coll)
    rebinds_current = "CURRENT" in spec["vars"]

    def run(doc, vars):
        new_vars = dict(vars)
        for name, fn in bindings:
            new_vars[name] = fn(doc, vars)  # all bindings see the outer scope, as in mongod
        if rebinds_current:
            current = new_vars.pop("CURRENT")
            new_vars.setdefault("ROOT", vars.get("ROOT", doc))
            return body(current, new_vars)
        return body(doc, new_vars)
    return run


def _compile_function(spec: Any, allow_vars: bool, coll: Any = None) -> Compiled:
    """``{$function: {body, args, lang: "js"}}`` (mongod's ExpressionFunction: codes and messages).
    The body compiles on first use, per thread (``javascript.JsFunction``); with scripting off the
    first evaluation answers 31264, as mongod's."""
    if not isinstance(spec, dict):
        raise MongoError(31260, f"$function requires an object as an argument, found: {type_name(spec)}")
    if "body" not in spec:
        raise MongoError(31261, "The body function must be specified.")
    body = _compile(spec["body"], allow_vars, coll)
    if not is_constant(spec["body"]):
        raise MongoError(31432, "The body function must be a constant expression")
    source = body(None, {})
    if not isinstance(source, str):  # (a JavaScript value, bson Code, is a str subclass: taken too)
        raise MongoError(31262, "The body function must evaluate to type string or code")
    if "args" not in spec:
        raise MongoError(31263, "The args field must be specified.")
    args = _compile(spec["args"], allow_vars, coll)
    if "lang" not in spec:
        raise MongoError(31418, "The lang field must be specified.")
    if spec["lang"] != "js" or type(spec["lang"]) is not str:
        raise MongoError(31419, "Currently the only supported language specifier is 'js'.")
    as_this = truthy(spec.get("_internalSetObjToThis", False))
    # (a $where, which alone sets this flag, sees its database's system.js globals, as mongod's)
    fn = javascript.JsFunction(str(source), where=as_this, stored=javascript.stored_globals() if as_this else ())

    def run(doc, vars):
        javascript.require_enabled()
        values = args(doc, vars)
        if type(values) is not list:
            raise MongoError(31266, "The args field must be of type array")
        if as_this:
            if len(values) != 1:
                raise MongoError(31422, "field path $$CURRENT must be the only element in args")
            return fn.predicate(values[0])
        return fn.call(values)
    return run


def _compile_meta(name: Any) -> Compiled:
    """``{$meta: "textScore" | "geoNearDistance" | "geoNearPoint" | "indexKey" | "sortKey"}`` from the
    read's DocMeta table; missing when the read has none for the document (``indexKey`` off an index
    scan, ``sortKey`` where no sort ran, or where no projection asked for it: ``DocMeta.wants``)."""
    if type(name) is not str:
        raise MongoError(17307, "$meta only supports string arguments")
    if name not in docmeta.NAMES:
        raise MongoError(17308, f"Unsupported argument to $meta: {name}")
    if name not in docmeta.SUPPORTED:
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"$meta {name!r} is not supported by Tidemark")

    def run(doc, vars):
        meta = vars.get(docmeta.META_VAR)
        value = meta.get(vars.get("ROOT", doc), name) if meta is not None else None
        return MISSING if value is None else value
    return run


def _compile_hashed(arg: Any, allow_vars: bool, coll: Any = None) -> Compiled:
    """``{$toHashedIndexKey: expr}``: the hashed index key of the value (an Int64)."""
    inner = _compile(arg, allow_vars, coll)
    return lambda doc, vars: Int64(hash64(_null_if_missing(inner(doc, vars))))


def evaluate_let(let: Any, *, now: _dt.datetime | None = None, cluster_time: Any = None) -> dict:
    """A command's variables: ``NOW`` (one instant for the whole command) and each ``let``
    expression evaluated once, in order (later ones may use earlier ones), as mongod seeds them.

    A ``let`` expression may not read a document field (4890500); ``NOW`` may be overridden with a
    date; other names follow the user-variable rules (16866/16867/16868)."""
    variables: dict = {"NOW": now_ms() if now is None else now}
    if cluster_time is not None:  # (a command's runtimeConstants: a standalone has no clock of its own)
        variables["CLUSTER_TIME"] = cluster_time
    if not let:
        return variables
    for name, expr in let.items():
        if name != "NOW":
            validate_variable_name(name)
        if expression_fields(expr) != set():
            raise MongoError(4890500, "Command let Expression tried to access a field, but this is not allowed "
                                      "becauseCommand let Expressions run before the query examines any documents.")
        value = _compile(expr, True)({}, variables)
        if name == "NOW" and not isinstance(value, _dt.datetime):
            raise MongoError(4631100, "Variable 'NOW' needs to be a date value")
        variables[name] = None if value is MISSING else value
    return variables


def split_path(path: str) -> list[str]:
    parts = path.split(".")
    for p in parts:  # mongod's FieldPath (server6556.js: a NUL); "$a.$id" reads a DBRef's id
        check_field_name(p)
    return parts


def now_ms() -> _dt.datetime:
    """The current UTC time as a naive datetime, to the millisecond (a BSON date): ``$$NOW``."""
    # (from the clock's integer nanoseconds: one call, where datetime.now(UTC) and its two
    # replace() calls are three, and each command asks)
    return _EPOCH + _dt.timedelta(milliseconds=time.time_ns() // 1_000_000)


_EPOCH = _dt.datetime(1970, 1, 1)


def _now(vars: dict) -> Any:
    now = vars.get("NOW")
    return now_ms() if now is None else now


def _compile_path(expr: str, allow_vars: bool) -> Compiled:
    if expr == "$":
        raise MongoError(16872, "'$' by itself is not a valid FieldPath")
    if not expr.startswith("$$"):
        parts = split_path(expr[1:])
        if len(parts) == 1:
            name = parts[0]

            def get1(doc, vars):
                try:
                    return doc.get(name, MISSING)
                except AttributeError:
                    return MISSING
            get1.field = name  # type: ignore[attr-defined]  # (expr_base.field_of)
            return get1
        if len(parts) == 2:
            a, b = parts

            def get2(doc, vars):
                try:
                    v = doc.get(a, MISSING)
                except AttributeError:
                    return MISSING
                if type(v) is dict:
                    return v.get(b, MISSING)
                return traverse(v, [b]) if type(v) is list else MISSING
            return get2
        indexed = tuple(enumerate(parts))

        def get_n(doc, vars):
            # traverse(doc, parts) with the common case, objects all the way down, inline
            v = doc
            for i, part in indexed:
                t = type(v)
                if t is dict:
                    v = v.get(part, MISSING)
                elif t is list:
                    return traverse(v, parts, i)
                else:
                    return MISSING
            return v
        return get_n
    if not allow_vars:
        raise MongoError(ErrorCode.FailedToParse, f"variables are not allowed here: {expr}")
    name, _, rest = expr[2:].partition(".")
    _validate_name_for_read(name)
    user_variable = name not in SYSTEM_VARIABLES
    if user_variable and not (name[0].islower() or ord(name[0]) > 127):  # no user variable is named so
        raise MongoError(17276, f"Use of undefined variable: {name}")
    try:
        parts = split_path(rest) if rest else []
    except MongoError as bad_path:
        if not user_variable:
            raise
        # mongod resolves the variable before it reads the path: an undefined one is 17276, only a
        # defined one meets the path's error; which names a scope defines is known when it runs
        return _undefined_or_bad_path(name, bad_path.code, bad_path.message)
    if name == "CURRENT":
        base: Compiled = lambda doc, vars: doc  # noqa: E731
    elif name == "ROOT":
        base = lambda doc, vars: vars.get("ROOT", doc)  # noqa: E731
    elif name == "REMOVE":
        return _mark_const(const(MISSING))
    elif name == "NOW":
        base = lambda doc, vars: _now(vars)  # noqa: E731
    elif name == "CLUSTER_TIME":
        # a standalone has no logical clock: mongod parses the variable and fails when it is read
        # (variables.cpp, 51144), so a view or a $cond branch that never reads it works; a command's
        # runtimeConstants may give it one
        def base(doc, vars):
            try:
                return vars["CLUSTER_TIME"]
            except KeyError:
                raise MongoError(51144, "Builtin variable '$$CLUSTER_TIME' is not available") from None
    elif name == "USER_ROLES":
        # the roles of the user the command's connection is authenticated as, read when evaluated (mongod
        # defines the variable per command when a query references it: Variables::defineUserRoles;
        # 51144 while enableAccessToUserRoles is false)
        base = lambda doc, vars: interrupt.user_roles()  # noqa: E731
    elif name == "SEARCH_META":
        raise MongoError(ErrorCode.QueryFeatureNotAllowed, f"$${name} is not supported by Tidemark")
    else:
        def base(doc, vars):
            try:
                return vars[name]
            except KeyError:
                raise MongoError(17276, f"Use of undefined variable: {name}") from None
    if not parts:
        return base
    return lambda doc, vars: traverse(base(doc, vars), parts)


def _undefined_or_bad_path(name: str, code: int, message: str) -> Compiled:
    def fail(doc, vars):
        if name not in vars:
            raise MongoError(17276, f"Use of undefined variable: {name}")
        raise MongoError(code, message)
    return fail


def _validate_name_for_read(name: str) -> None:
    """mongod's check of a referenced variable's name (variableValidation::validateNameForUserRead): a
    letter or non-ASCII character first, then letters, digits, '_' or non-ASCII characters."""
    if not name:
        raise MongoError(16866, "empty variable names are not allowed")
    if name[0].isascii() and not name[0].isalpha():
        raise MongoError(16867, f"'{name}' starts with an invalid character for a user variable name")
    for ch in name:
        if ch.isascii() and not (ch.isalnum() or ch == "_"):
            raise MongoError(16868, f"'{name}' contains an invalid character for a variable name: '{ch}'")


def is_constant(expr: Any) -> bool:
    """True when ``expr`` reads no field and no variable (it can be evaluated once)."""
    if type(expr) is str:
        return not expr.startswith("$")
    if isinstance(expr, list):
        return all(is_constant(e) for e in expr)
    if isinstance(expr, dict):
        if len(expr) == 1 and next(iter(expr)) in ("$literal", "$const"):
            return True
        if len(expr) == 1 and next(iter(expr)) in ("$rand", "$let", "$map", "$filter", "$reduce"):
            return False
        return all(is_constant(v) for v in expr.values())
    return True


def expression_fields(expr: Any) -> set[str] | None:
    """Top-level field names ``expr`` reads, or None when it needs the whole document."""
    out: set[str] = set()
    return out if _collect_fields(expr, out) else None


def _collect_fields(expr: Any, out: set[str]) -> bool:
    t = type(expr)
    if t is str:
        return _collect_string(expr, out)
    if t is list or t is not dict and isinstance(expr, list):
        values: Iterable[Any] = expr
    elif t is dict or isinstance(expr, dict):
        if len(expr) == 1:
            for op in expr:  # (the one key, without the calls of next(iter(...)))
                arg = expr[op]
            if op == "$literal" or op == "$const":
                return True
            if op == "$getField" or op == "$unsetField" or op == "$setField":
                if not isinstance(arg, dict) or "input" not in arg:
                    return False
            if op == "$let" and isinstance(arg, dict) and "CURRENT" in (arg.get("vars") or {}):
                return False
        values = expr.values()
    else:
        return True
    # (loops: a read's planning walks its $group here; a string that is no path costs no call)
    for v in values:
        if type(v) is str:
            if v[:1] == "$" and not _collect_string(v, out):
                return False
        elif not _collect_fields(v, out):
            return False
    return True


def _collect_string(expr: str, out: set[str]) -> bool:
    """A string's part of ``_collect_fields``: the top-level field of a path ``$a.b`` or
    ``$$CURRENT.a.b``; False for ``$$ROOT``/``$$CURRENT`` themselves (the whole document)."""
    if expr.startswith("$$"):
        name, _, rest = expr[2:].partition(".")
        if name in ("ROOT", "CURRENT"):
            if not rest:
                return False
            out.add(rest.split(".")[0])
        return True
    if len(expr) > 1 and expr[0] == "$":
        out.add(expr[1:] if "." not in expr else expr[1:].split(".")[0])
    return True
