"""Storage's own small exceptions.

Storage knows nothing of the wire, but each exception carries the MongoDB error ``code`` and
``code_name`` mongod would answer with, so ``server/dispatch.py`` can translate them in one place
without a lookup table of its own. Messages are complete sentences meant for the client.
"""

from __future__ import annotations

import errno
import os

# The largest BSON document a client may store (mongod's BSONObjMaxUserSize). The server raises
# 10334 BSONObjectTooLarge before handing a bigger document to storage.
MAX_DOCUMENT_SIZE = 16 * 1024 * 1024


class StorageError(Exception):
    """Base of every storage failure. ``code``/``code_name`` are the MongoDB equivalents."""

    code: int = 1
    code_name: str = "InternalError"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class DbPathUnusable(StorageError):
    """The dbpath is missing, not a directory, or not writable."""

    code = 29
    code_name = "NonExistentPath"


class DbPathInUse(StorageError):
    """Another process (or another engine in this process) holds the dbpath lock file."""

    code = 98
    code_name = "DBPathInUse"


class NamespaceNotFound(StorageError):
    code = 26
    code_name = "NamespaceNotFound"

    def __init__(self, ns: str, message: str | None = None):
        super().__init__(message or f"ns does not exist: {ns}")
        self.ns = ns


class NamespaceExists(StorageError):
    code = 48
    code_name = "NamespaceExists"

    def __init__(self, ns: str, message: str | None = None):
        super().__init__(message or f"Collection {ns} already exists.")
        self.ns = ns


class IndexNotFound(StorageError):
    code = 27
    code_name = "IndexNotFound"

    def __init__(self, ns: str, index_name: str):
        super().__init__(f"index not found with name [{index_name}]")
        self.ns = ns
        self.index_name = index_name


class IndexExists(StorageError):
    """An index with this name already exists on the collection (storage-level guard)."""

    code = 68
    code_name = "IndexAlreadyExists"

    def __init__(self, ns: str, index_name: str):
        super().__init__(f"An index named {index_name} already exists on {ns}")
        self.ns = ns
        self.index_name = index_name


class DuplicateKey(StorageError):
    """A unique index (or a clustered collection's record key) already holds this key.

    ``key`` is the encoded key (``tidemark.storage.keys`` bytes); ``tidemark.storage.keys.decode_key(key, directions)``
    recovers the values for mongod's ``keyValue``. Nothing of the failed operation was written.
    """

    code = 11000
    code_name = "DuplicateKey"

    def __init__(self, index_name: str, key: bytes, ns: str = ""):
        super().__init__(f"E11000 duplicate key error collection: {ns} index: {index_name}")
        self.index_name = index_name
        self.key = key
        self.ns = ns


class EngineClosed(StorageError):
    code = 91
    code_name = "ShutdownInProgress"

    def __init__(self, message: str = "The storage engine is shutting down"):
        super().__init__(message)


class CatalogChanged(StorageError):
    """A write was given a CollectionInfo that no longer matches the catalog (an index was
    created or dropped, or the collection renamed/dropped/recreated since it was read).
    Re-read the collection inside the write fn and retry."""

    code = 112
    code_name = "WriteConflict"

    def __init__(self, ns: str):
        super().__init__(f"the catalog entry of {ns} changed during the operation; retry it")
        self.ns = ns


class InvalidNamespace(StorageError, ValueError):
    code = 73
    code_name = "InvalidNamespace"


class NonCappedOplog(StorageError, ValueError):
    """mongod's DatabaseImpl::_checkCanCreateCollection: a ``local.oplog.*`` collection is capped."""

    code = 28838
    code_name = "Location28838"

    def __init__(self, message: str = "cannot create a non-capped oplog collection"):
        super().__init__(message)


class TooManyCollections(StorageError):
    """LMDB's max_dbs is reached: every collection and index uses one sub-database."""

    code = 96
    code_name = "OperationFailed"

    def __init__(self, max_dbs: int):
        super().__init__(f"too many collections and indexes: this storage engine holds at most {max_dbs} "
                         "(max_dbs); drop unused collections or restart with a larger limit")


class StorageDropped(StorageError):
    """A read used a CollectionInfo whose storage was dropped (and reclaimed) since."""

    code = 175
    code_name = "QueryPlanKilled"

    def __init__(self, what: str):
        super().__init__(f"collection or index dropped during the operation ({what})")


class OutOfDiskSpace(StorageError):
    """A write failed for lack of disk space (ENOSPC, or EDQUOT: a quota): nothing of it was written.
    mongod's OutOfDiskSpace (error_codes.yml), what it answers when a file write finds the disk full."""

    code = 14031
    code_name = "OutOfDiskSpace"

    def __init__(self, detail: str):
        super().__init__(f"the storage engine ran out of disk space: {detail}")


_NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_NO_SPACE_TEXTS = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))


def is_out_of_space(exc: BaseException) -> bool:
    """Whether a failed system or LMDB call means the disk (or the user's quota) is full: an OSError with
    ENOSPC/EDQUOT, or an LMDB error carrying that errno (py-lmdb's DiskError is ENOSPC; its errors
    carry only the text)."""
    if isinstance(exc, OSError):
        return exc.errno in _NO_SPACE_ERRNOS
    if not type(exc).__module__.startswith("lmdb"):
        return False
    if type(exc).__name__ == "DiskError":
        return True
    text = str(exc)
    return any(t in text for t in _NO_SPACE_TEXTS)


def storage_failure(exc: BaseException) -> Exception:
    """THE mapping of a failed system/LMDB call inside storage to what the client gets: no space ->
    OutOfDiskSpace 14031; any other OSError or LMDB error -> CommitFailed 8 UnknownError (as mongod
    answers a storage failure it cannot name); a StorageError or any other exception unchanged."""
    if isinstance(exc, StorageError):
        return exc
    if is_out_of_space(exc):
        return OutOfDiskSpace((exc.strerror if isinstance(exc, OSError) else None) or str(exc))
    if isinstance(exc, OSError):
        return CommitFailed(exc.strerror or str(exc))
    if type(exc).__module__.startswith("lmdb"):
        return CommitFailed(str(exc))
    return exc if isinstance(exc, Exception) else StorageError(repr(exc))


class TransactionTooLarge(StorageError):
    """One write dirties more pages than one LMDB transaction can hold. mongod's answer for a transaction
    too large for the storage engine's cache (TransactionTooLargeForCache)."""

    code = 388
    code_name = "TransactionTooLargeForCache"

    def __init__(self, message: str = "the write is too large for one storage transaction (too many dirty "
                                      "pages); split it into smaller writes"):
        super().__init__(message)


class CommitFailed(StorageError):
    """A commit failed for another storage reason (an I/O error): nothing of its group was written.
    mongod answers a storage engine failure it cannot name with UnknownError."""

    code = 8
    code_name = "UnknownError"

    def __init__(self, detail: str):
        super().__init__(f"the write could not be committed to storage ({detail}); none of it was applied")
