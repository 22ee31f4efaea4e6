"""The dbpath: checks that it is usable and holds its exclusive lock file while the engine runs."""

from __future__ import annotations

import fcntl
import os

from tidemark.storage.errors import DbPathInUse, DbPathUnusable, OutOfDiskSpace, is_out_of_space

LOCK_FILE = "mongod.lock"
# Like mongod: the data are readable by the server's user only.
DIR_MODE = 0o700
FILE_MODE = 0o600


def prepare_dbpath(dbpath: str) -> None:
    if os.path.exists(dbpath) and not os.path.isdir(dbpath):
        raise DbPathUnusable(f"dbpath ({dbpath}) is not a directory")
    try:
        if not os.path.isdir(dbpath):
            os.makedirs(dbpath, mode=DIR_MODE, exist_ok=True)
        if not os.path.exists(os.path.join(dbpath, "data.mdb")):
            # a new database (the directory may have been made empty for it): private to this user;
            # an existing one keeps the permissions its owner chose
            os.chmod(dbpath, DIR_MODE)
    except OSError as exc:
        raise DbPathUnusable(f"Data directory {dbpath} not found and cannot be created: "
                             f"{exc.strerror}") from exc
    if not os.access(dbpath, os.W_OK | os.X_OK):
        raise DbPathUnusable(f"Data directory {dbpath} is not writable")


def lock_dbpath(dbpath: str) -> int:
    path = os.path.join(dbpath, LOCK_FILE)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except OSError as exc:
        raise DbPathUnusable(f"Unable to create/open the lock file: {path} ({exc.strerror})."
                             " Is a mongod instance already running?") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise DbPathInUse(f"Unable to lock the lock file: {path} ({exc.strerror}). Another mongod "
                          f"instance is already running on the {dbpath} directory") from exc
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as exc:  # e.g. a full disk: a clear start-up error, not a traceback
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        message = f"Unable to write the process id to the lock file {path} ({exc.strerror})"
        raise (OutOfDiskSpace(message) if is_out_of_space(exc) else DbPathUnusable(message)) from exc
    return fd


def unlock_dbpath(fd: int) -> None:
    """Release the lock; an empty lock file marks a clean shutdown (as mongod leaves it)."""
    os.ftruncate(fd, 0)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
