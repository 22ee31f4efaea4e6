"""The pieces of a document validation error's details (mongod's doc_validation_error), shared by the
query-operator generator (``validation_error``) and the ``$jsonSchema`` rules (``jsonschema``).

A ``DetailContext`` says whether the error is being generated truncated: mongod generates it a second
time without ``specifiedAs`` and ``consideredValue(s)`` when the first one is too large."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tidemark.query.values import bson_type_name

__all__ = ["DetailContext", "MAX_CONSIDERED_VALUES", "entry", "considered", "type_names"]

# internalQueryMaxDocValidationErrorConsideredValues (mongod's default)
MAX_CONSIDERED_VALUES = 10


class DetailContext:
    """Per generation: ``truncate`` leaves out what grows with the validator or the document."""

    __slots__ = ("truncate",)

    def __init__(self, truncate: bool = False):
        self.truncate = truncate

    def specified(self, out: dict, spec: Any) -> None:
        if not self.truncate:
            out["specifiedAs"] = spec


def entry(operator: str, spec: Any, ctx: DetailContext) -> dict:
    """``{operatorName, specifiedAs}``: how every operator's details begin."""
    out = {"operatorName": operator}
    ctx.specified(out, spec)
    return out


def considered(out: dict, values: list | None, cut: bool, ctx: DetailContext) -> None:
    """The values an operator considered: one as ``consideredValue``, else ``consideredValues`` (an
    empty array too), ``consideredValuesTruncated`` past the limit; nothing for a missing path."""
    if values is None or ctx.truncate:
        return
    if len(values) == 1:
        out["consideredValue"] = values[0]
    else:
        out["consideredValues"] = values
    if cut:
        out["consideredValuesTruncated"] = True


def type_names(out: dict, key: str, values: Iterable[Any]) -> None:
    """``consideredType`` (one type) or ``consideredTypes`` (sorted names) of ``values``; nothing for none."""
    names = sorted({bson_type_name(v) for v in values})
    if len(names) == 1:
        out[key] = names[0]
    elif names:
        out[key + "s"] = names
