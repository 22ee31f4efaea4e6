"""Subprocess for the compaction crash tests: populate, save a snapshot, then close with compaction
and SIGKILL itself at one step of it.

Usage: python compact_crasher.py DBPATH SNAPSHOT_FILE STEP
STEP: copy (in the middle of the copy), copied (copy synced, not swapped), renamed (new file in
place, directory not yet synced), swapped (before the lock is released), none (clean close).
"""

import os
import pickle
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compact_helpers import populate, snapshot  # noqa: E402

from tidemark.storage import compact  # noqa: E402
from tidemark.storage.engine import open_engine  # noqa: E402


def die(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    dbpath, snapshot_file, step = sys.argv[1:4]
    engine = open_engine(dbpath, compact_on_close=True)
    populate(engine, n=400)
    with open(snapshot_file, "wb") as f:
        pickle.dump(snapshot(engine), f)
    if step == "copy":
        real_put, calls = compact._Copier.put, [0]

        def put(self, *args, **kwargs):
            calls[0] += 1
            if calls[0] == 500:
                self.txn.commit()  # a partly written copy reaches the disk
                die()
            return real_put(self, *args, **kwargs)

        compact._Copier.put = put
    elif step == "copied":
        compact.swap = die
    elif step == "renamed":
        real_fsync = compact._fsync_path

        def fsync(path, directory=False):
            if directory:
                die()
            real_fsync(path, directory)

        compact._fsync_path = fsync
    elif step == "swapped":
        import tidemark.storage.engine as engine_module
        engine_module.unlock_dbpath = die
    engine.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
