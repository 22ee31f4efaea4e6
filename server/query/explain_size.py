"""An explain document kept under the BSON size limit, as mongod keeps it.

mongod builds each plan's stage tree (a ``winningPlan``, each of ``rejectedPlans``, an
``executionStages``) in its own builder and, before adding a stage, looks at how many bytes that tree
already holds: past ``internalQueryExplainSizeThresholdBytes`` (10 MB) the stage and everything below
it become ``{warning: "stats tree exceeded BSON size limit for explain"}``
(plan_explainer_impl.cpp ``statsToBSON``); an IXSCAN whose ``indexBounds`` would take its tree past
the threshold shows ``{warning: "index bounds omitted due to BSON size limit for explain"}`` in their
place (a ``$in`` of 400,000 values is as many intervals). The explained ``command`` is appended last and only if it
fits under BSONObjMaxUserSize (16 MB); else a ``warning`` says it was left out
(explain_common.cpp ``appendIfRoom``). So an explain of a query with a huge ``$in`` answers instead of
failing with 10334.

Pure: takes the finished explain document, returns it (pruned trees are new dicts).
"""

from __future__ import annotations

from typing import Any

import bson

from tidemark.protocol.codec import CODEC_OPTIONS

MAX_USER_SIZE = 16 * 1024 * 1024  # BSONObjMaxUserSize
TREE_WARNING = "stats tree exceeded BSON size limit for explain"
BOUNDS_WARNING = "index bounds omitted due to BSON size limit for explain"
_CHILDREN = ("inputStage", "inputStages")
_TREES = ("winningPlan", "executionStages")
_SKIP = frozenset({"command", "parsedQuery", "filter", "indexBounds", "serverInfo", "serverParameters"})


def _size(key: str, value: Any) -> int:
    """Bytes of the element ``key: value`` (a BSON document of it, less its own envelope)."""
    return len(bson.encode({key: value}, codec_options=CODEC_OPTIONS)) - 5


def prune_tree(stage: Any, threshold: int) -> Any:
    """``stage`` and its inputs, each stage entered past ``threshold`` bytes of the tree replaced by
    mongod's warning. The bytes counted are those mongod's builder holds when it reaches the stage: the
    fields written before it in document order, with the headers of the documents opened so far."""
    used = 4  # (the tree document's length prefix)

    def opened(key: str) -> None:
        nonlocal used
        used += len(key.encode()) + 6  # an embedded document's type byte, name, NUL and length prefix

    def walk(node: Any) -> Any:
        nonlocal used
        if not isinstance(node, dict):
            return node
        if used > threshold:
            return {"warning": TREE_WARNING}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "indexBounds" and used + _size(key, value) - len(key) - 2 > threshold:
                # an index scan's bounds that would take the tree past the threshold: mongod's warning
                # in their place (its IXSCAN explain: bounds objsize checked before they are appended)
                key, value = "warning", BOUNDS_WARNING
            if key not in _CHILDREN:
                used += _size(key, value)
                out[key] = value
        for key, value in node.items():  # (inputs after the stage's own fields, as mongod writes them)
            if key == "inputStage":
                opened(key)
                out[key] = walk(value)
                used += 1
            elif key == "inputStages" and isinstance(value, list):
                opened(key)
                children = []
                for i, child in enumerate(value):
                    opened(str(i))
                    children.append(walk(child))
                    used += 1
                out[key] = children
                used += 1
        order = ("warning" if key == "indexBounds" and "indexBounds" not in out else key for key in node)
        return {key: out[key] for key in order if key in out}  # the fields in the stage's own order

    return walk(stage)


def _prune_all(doc: Any, threshold: int) -> Any:
    if isinstance(doc, list):
        return [_prune_all(item, threshold) for item in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in _TREES:
            out[key] = prune_tree(value, threshold)
        elif key == "rejectedPlans" and isinstance(value, list):
            out[key] = [prune_tree(plan, threshold) for plan in value]
        elif key in _SKIP or not isinstance(value, dict | list):
            out[key] = value
        else:
            out[key] = _prune_all(value, threshold)
    return out


def fit_explain(reply: dict, threshold: int) -> dict:
    """``reply`` (an explain document) with its stage trees pruned past ``threshold`` bytes each and its
    ``command`` left out (a ``warning`` in its place) when the rest leaves no room for it."""
    if len(bson.encode(reply, codec_options=CODEC_OPTIONS)) <= min(threshold, MAX_USER_SIZE - 1):
        return reply  # no tree can pass the threshold, and the command fits (the common case)
    fitted = _prune_all(reply, threshold)
    if "command" not in fitted:
        return fitted
    command = fitted["command"]
    rest = {key: value for key, value in fitted.items() if key != "command"}
    if len(bson.encode(rest, codec_options=CODEC_OPTIONS)) + _size("command", command) < MAX_USER_SIZE:
        return fitted
    warning = "'command' has been omitted due to BSON size limit"
    return {("warning" if key == "command" else key): (warning if key == "command" else value)
            for key, value in fitted.items()}
