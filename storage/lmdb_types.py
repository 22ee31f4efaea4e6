"""The LMDB types storage is annotated with, from py-lmdb's own stubs (lmdb 3.0+).

Every transaction is opened with ``buffers=False`` (py-lmdb's default): keys and values come back
as ``bytes`` copies that outlive the transaction, never memoryviews, hence ``Transaction[bytes]``.
``Txn`` and ``Cursor`` are for annotations only (py-lmdb's classes cannot be subscripted at run time).
"""

from __future__ import annotations

from typing import TypeAlias

import lmdb

Txn: TypeAlias = "lmdb.Transaction[bytes]"  # a read or write transaction (write ones run on the writer thread)
Cursor: TypeAlias = "lmdb.Cursor[bytes]"
Handle: TypeAlias = lmdb._Database  # a named sub-database, as Environment.open_db returns it
