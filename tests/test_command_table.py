"""Acceptance 6: every command in the table has help text and at least one end-to-end test.

End-to-end tests declare what they cover with ``@pytest.mark.commands("name", ...)`` (on a test,
a class, or as a module ``pytestmark``). This test reads those markers statically from every test
module under tests/, so it needs no server and does not depend on which tests were selected.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tidemark.auth.rules import RULES
from tidemark.dispatch import FAMILIES, build_table

TESTS = Path(__file__).resolve().parent

# Commands whose family landed before its end-to-end tests declared coverage. Every command in the
# table is covered now, so the list is empty; it must stay that way (add the marker with the command).
PENDING_COVERAGE: frozenset[str] = frozenset()


def _is_commands_marker(node: ast.AST) -> bool:
    # pytest.mark.commands(...) or mark.commands(...)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "commands"
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "mark"
    )


def covered_commands() -> dict[str, list[str]]:
    """command name -> test files declaring it."""
    covered: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if _is_commands_marker(node):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        covered.setdefault(arg.value, []).append(path.relative_to(TESTS).as_posix())
    return covered


def test_table_is_sorted_and_names_are_unique():
    table = build_table()
    assert list(table) == sorted(table)
    names = [name for family in FAMILIES for spec in family.COMMANDS for name in (spec.name, *spec.aliases)]
    assert len(names) == len(set(names))


def test_every_command_and_alias_has_help_text():
    missing = [name for name, spec in build_table().items() if not spec.help or not spec.help.strip()]
    assert missing == [], f"commands without help text: {missing}"


@pytest.mark.slow
def test_every_command_and_alias_has_an_end_to_end_test():
    covered = covered_commands()
    missing = [name for name in build_table() if name not in covered and name not in PENDING_COVERAGE]
    assert missing == [], (
        f"commands without an end-to-end test declaring @pytest.mark.commands(...): {missing} "
        "(see tests/README.md)"
    )


def test_every_command_has_an_authorization_rule():
    # server/auth/rules.py: the action(s) each command needs under --auth (or OPEN for the handshake and
    # authentication commands). A command without a rule would be refused by every user.
    # (RULES may also hold mongod's rules of commands other families are adding.)
    missing = sorted({spec.name for spec in build_table().values()} - set(RULES))
    assert missing == [], f"commands without an authorization rule in server/auth/rules.py: {missing}"


@pytest.mark.slow
def test_pending_coverage_names_only_uncovered_commands_of_the_table():
    table, covered = build_table(), covered_commands()
    stale = [name for name in PENDING_COVERAGE if name not in table or name in covered]
    assert stale == [], f"drop these from PENDING_COVERAGE (gone or covered): {stale}"


@pytest.mark.slow
def test_marker_scan_finds_markers_in_this_repository():
    assert "hello" in covered_commands()
