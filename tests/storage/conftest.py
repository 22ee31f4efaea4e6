"""Fixtures for storage tests: a fresh engine in a temporary dbpath."""

import pytest

from tidemark.storage.engine import open_engine


@pytest.fixture
def dbpath(tmp_path):
    return str(tmp_path / "db")


@pytest.fixture
def engine(dbpath):
    eng = open_engine(dbpath)
    yield eng
    eng.close()
