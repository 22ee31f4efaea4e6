"""The query-only optimize step of a filter's ``$expr``: mongod's constant folding.

mongod optimizes a *query's* parsed filter before it runs it (CanonicalQuery, ``$match``'s optimize):
each ``$expr``'s expression is optimized children first, and an operator all of whose arguments are
constant is evaluated then and there (``ExpressionNary::optimize`` and the operators that fold like it).
So an invalid constant (``{$anyElementTrue: null}``, ``{$divide: [1, 0]}``) fails the query even when
no document reaches it: on an empty collection, beside a clause that decides the match, in the branch
of a ``$cond`` that is not taken. A collection validator is parsed but never optimized: its ``$expr``
fails only when a document reaches it, so this step is never part of ``compile_filter``: the reads call
it (``server/collections.py``: ``FindSpec`` for find, count and distinct; ``open_read`` for a pipeline's
``$match`` stages); the write commands' filters (``server/commands/crud.py``) do not yet.

What folds (mongod 7.0's expression classes; where unsure, an operator is left alone, so the fold may
miss an error mongod raises but never adds one):

- an operator folds when every argument is constant: a literal, ``$literal``, an array or object of
  constants, or a folded operator. Field paths and ``$$`` variables (``$$NOW``, ``let`` names,
  ``$$REMOVE``) are not constant here (a narrower rule than mongod's, which never adds an error);
- operators whose ``optimize`` optimizes their arguments but never folds themselves: ``$let``,
  ``$map``, ``$filter``, ``$reduce``, ``$switch``, ``$function`` (JavaScript), ``$rand`` (not
  deterministic), ``$meta`` (reads metadata), ``$regexMatch``/``$regexFind``/``$regexFindAll``
  (mongod only precompiles a constant regex: its errors come from the parse, as here);
- ``$setIsSubset`` with a constant second operand that is not an array fails (17311) even when its
  first operand reads the document: its ``optimize`` checks that operand before precomputing it;
- operators left alone entirely (no ``optimize`` of their own in mongod, or reading the document
  implicitly, as ``$getField`` without ``input``): ``$getField``, ``$setField``, ``$unsetField``,
  ``$sortArray``, ``$zip``, ``$toHashedIndexKey``, the ``n`` forms ``$firstN``/``$lastN``/``$minN``/
  ``$maxN``, ``$median``, ``$percentile``: neither they nor their arguments are evaluated.

The step only raises; the compiled predicate is unchanged. Each constant operator is evaluated once
over its constant subtree, children before parents: the work is bounded by the expression's size
times its nesting depth (which BSON limits), and a filter without ``$expr`` costs a look at its keys.
"""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import MongoError
from tidemark.query.expr_base import type_name
from tidemark.query.expressions import compile_expression

__all__ = ["fold_filter_constants", "fold_expression_constants"]

# optimize() optimizes the arguments, then keeps the operator (never a constant)
_KEPT = frozenset({"$let", "$map", "$filter", "$reduce", "$switch", "$function", "$rand", "$meta",
                   "$regexMatch", "$regexFind", "$regexFindAll"})
# no optimize() of their own (or an implicit read of the document): arguments not evaluated either
_LEFT_ALONE = frozenset({"$getField", "$setField", "$unsetField", "$sortArray", "$zip", "$toHashedIndexKey",
                         "$firstN", "$lastN", "$minN", "$maxN", "$median", "$percentile", "$accumulator",
                         "$where"})


def fold_filter_constants(filter: Any, *, collation: Any = None) -> None:
    """Raise the error mongod's optimize of a query filter raises: every ``$expr`` of ``filter`` (at
    the top level or under ``$and``/``$or``/``$nor``, the only places ``$expr`` may be) has its
    constant sub-expressions evaluated, children first, in filter order. ``filter`` is a parsed
    (valid) filter document: call this once the query parsed (mongod parses the whole command before
    it optimizes), for queries only. A filter without ``$expr`` costs a look at its top-level keys."""
    if type(filter) is not dict and not isinstance(filter, dict):  # not a filter document: nothing to fold
        return
    if "$expr" not in filter and "$and" not in filter and "$or" not in filter and "$nor" not in filter:
        return  # (the usual filter: its keys looked up, no walk)
    for key, value in filter.items():
        if key == "$expr":
            fold_expression_constants(value, collation=collation)
        elif key in ("$and", "$or", "$nor") and type(value) is list:
            for clause in value:
                fold_filter_constants(clause, collation=collation)


def fold_expression_constants(expr: Any, *, collation: Any = None) -> bool:
    """Evaluate every constant operator of ``expr`` (children first), raising its error; True when
    ``expr`` as a whole is constant."""
    t = type(expr)
    if t is str:
        return not expr.startswith("$")  # a field path or a variable reads the document / command
    if t is list:
        return all([fold_expression_constants(e, collation=collation) for e in expr])  # every element
    if t is not dict or not expr:
        return True
    name = next(iter(expr))
    if not name.startswith("$"):  # an object expression: constant when all its values are
        return all([fold_expression_constants(v, collation=collation) for v in expr.values()])
    if name in ("$literal", "$const"):
        return True  # data, never evaluated as an expression
    if name in _LEFT_ALONE:
        return False
    arg = expr[name]
    if type(arg) is dict and arg and not next(iter(arg)).startswith("$"):
        children: Any = arg.values()  # named arguments ({date, format, ...}; $let's vars, $switch's branches)
    elif type(arg) is list:
        children = arg
    else:
        children = (arg,)
    constants = [fold_expression_constants(c, collation=collation) for c in children]
    constant = all(constants)
    if not constant and name == "$setIsSubset" and len(constants) == 2 and constants[1]:
        _check_subset_of_constant(children[1], collation)
    if not constant or name in _KEPT:
        return False
    try:
        compile_expression(expr, collation=collation)({}, {})
    except MongoError:
        raise  # the error mongod's optimize raises
    except Exception:  # noqa: BLE001 - the fold never adds an error the evaluation per document lacks
        return False
    return True


def _check_subset_of_constant(superset: Any, collation: Any) -> None:
    """``ExpressionSetIsSubset::optimize``: a constant second operand that is not an array is 17311 at
    once, whatever the first operand reads (mongod then precomputes the set; when both are constant the
    whole operator folds instead, with its evaluation's 17046 / 17042)."""
    value = compile_expression(superset, collation=collation)({}, {})
    if type(value) is not list:
        raise MongoError(17311, "both operands of $setIsSubset must be arrays. Second argument is of type: "
                                + type_name(value))
