"""A ``$match`` stage that carries its filter already parsed (and compiled), so a command parses a
filter once and the sources below it (time-series ``read_source``, ``deps.leading_matches``) reuse
the parse instead of repeating it.

``MatchStage`` *is* the stage document ``{"$match": filter}`` (a dict: everything that reads stages
sees the same value); a copy of it is a plain dict again, and readers then parse as before.
"""

from __future__ import annotations

from typing import Any

from tidemark.query.match_ast import Node


class MatchStage(dict):
    """``{"$match": filter}`` plus ``node`` (its parse, validated) and ``predicate`` (``compile_node(node,
    variables=variables, collation=collation)``; None when not compiled). ``variables``: the command's
    (``let``, ``$$NOW``), which a ``$expr`` in the filter reads."""

    __slots__ = ("node", "predicate", "collation", "variables")

    def __init__(self, flt: dict, node: Node, predicate: Any = None, collation: Any = None,
                 variables: dict | None = None):
        super().__init__({"$match": flt})
        self.node = node
        self.predicate = predicate
        self.collation = collation
        self.variables = variables


def parsed(stage: Any) -> MatchStage | None:
    """The stage as a ``MatchStage`` when it carries its parse, else None."""
    return stage if type(stage) is MatchStage else None
