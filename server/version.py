"""The versions Tidemark reports: the MongoDB version it behaves as, and its own.

Light on purpose (no imports at all): ``tidemark --version`` reads it without importing the server, and
``__version__`` is the package's version (pyproject.toml reads it: ``[tool.setuptools.dynamic]``), so
nothing has to ask ``importlib.metadata`` (~30 ms of imports) at run time.
"""

from __future__ import annotations

__version__ = "0.1.0"

MONGODB_VERSION = "7.0.0"
VERSION_ARRAY = [7, 0, 0, 0]
GIT_VERSION = "0000000000000000000000000000000000000000"


def tidemark_version() -> str:
    return __version__
