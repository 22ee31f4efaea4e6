"""Which measurement fields a pipeline can observe (pure): the leading ``$match`` stages that run right
after unpack, and the top-level fields the rest of the pipeline reads, so bucket reads decode only
those columns."""

from __future__ import annotations

from typing import Any

from tidemark.protocol.errors import MongoError
from tidemark.query import match
from tidemark.query.expressions import expression_fields
from tidemark.query.match import compile_node, parse_filter
from tidemark.query.parsed_match import MatchStage

ALL = None  # "every field"


def leading_matches(pipeline: list[dict[str, Any]]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Parse the leading ``$match`` stages (those we can run exactly right after unpack)."""
    nodes = []
    for stage in pipeline:
        # parsed (and validated) by the command: not parsed again (nor checked). (``parsed_match.parsed``'s
        # test inline: every read on a view asks it of each leading stage and of the first other one)
        if type(stage) is MatchStage:
            nodes.append(stage.node)
            continue
        if not (isinstance(stage, dict) and "$match" in stage and len(stage) == 1):
            break
        try:
            node = parse_filter(stage["$match"])
            compile_node(node)  # validates; $expr with unknown variables stays in the pipeline
        except MongoError:
            break
        nodes.append(node)
    return nodes, pipeline[len(nodes):]


def refs(value: Any, out: set[str]) -> bool:
    """Add the top-level fields expression ``value`` reads to ``out``; False if it may read the whole
    document (``expressions.expression_fields`` decides: ``$$ROOT``, ``$getField`` without ``input``, ...)."""
    fields = expression_fields(value)
    if fields is None:
        return False
    out.update(fields)
    return True


_SORTED_ACCUMULATORS = ("$top", "$bottom", "$topN", "$bottomN")


def _sort_by_refs(group: dict[str, Any], out: set[str]) -> bool:
    """Add the fields the ``sortBy`` of ``$top``/``$bottom``/``$topN``/``$bottomN`` accumulators sort on:
    they are named without a ``$`` (``{sortBy: {"o.k": 1}}``), so ``refs`` cannot see them. False if a
    ``sortBy`` is not a plain object (the stage will refuse it; decode everything meanwhile)."""
    for acc in group.values():
        if not isinstance(acc, dict) or len(acc) != 1:
            continue
        op, arg = next(iter(acc.items()))
        if op in _SORTED_ACCUMULATORS and isinstance(arg, dict) and "sortBy" in arg:
            if not isinstance(arg["sortBy"], dict):
                return False
            out.update(key.split(".", 1)[0] for key in arg["sortBy"])
    return True


def _filter_top_fields(node: Any, out: set[str]) -> bool:
    """Add the top-level fields filter ``node`` reads to ``out``; False if it may read any field."""
    paths = match.filter_fields(node)
    if paths is None:
        return False
    out.update(path.split(".", 1)[0] for path in paths)
    return True


def _is_exclusion(value: Any) -> bool:
    return value is False or (type(value) in (int, float) and value == 0)


def needed_fields(pipeline: list[dict[str, Any]], filter_nodes: list[Any]) -> set[str] | None:
    """Top-level measurement fields the rest of the pipeline can observe, or None for all: those the
    leading filters read (``filter_fields``) and those the stages after them read (``pipeline_fields``)."""
    read = filter_fields(filter_nodes)
    if read is ALL:
        return ALL
    rest = pipeline_fields(pipeline)
    return ALL if rest is ALL else read | rest


def filter_fields(filter_nodes: list[Any]) -> set[str] | None:
    """Top-level fields the filters ``filter_nodes`` read, or None when they may read any."""
    out: set[str] = set()
    for node in filter_nodes:
        if not _filter_top_fields(node, out):
            return ALL
    return out


def pipeline_fields(pipeline: list[dict[str, Any]]) -> set[str] | None:
    """Top-level fields the stages ``pipeline`` (after the leading filters) read before the document is
    no longer the measurement, or None when they may read any."""
    out: set[str] = set()
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            return ALL
        name, body = next(iter(stage.items()))
        if name == "$match":
            try:
                if not _filter_top_fields(parse_filter(body), out):
                    return ALL
            except MongoError:
                return ALL
        elif name == "$sort" and isinstance(body, dict):
            out.update(key.split(".", 1)[0] for key in body)
        elif name in ("$limit", "$skip"):
            continue
        elif name == "$count":
            return out
        elif name == "$group" and isinstance(body, dict):
            return out if refs(body, out) and _sort_by_refs(body, out) else ALL
        elif name == "$project" and isinstance(body, dict):
            others = [v for k, v in body.items() if k != "_id"]
            if not others or any(_is_exclusion(v) for v in others):
                return ALL  # an exclusion projection (or {_id: 0}) keeps every other field
            if not _is_exclusion(body.get("_id", 1)):
                out.add("_id")
            for key, value in body.items():
                if key == "_id" and _is_exclusion(value):
                    continue
                out.add(key.split(".", 1)[0])
                if not refs(value, out):
                    return ALL
            return out
        else:
            return ALL
    return ALL
