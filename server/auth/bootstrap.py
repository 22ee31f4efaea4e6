"""Create the first (root) user straight into a dbpath, before the server starts.

The Docker entrypoint runs ``python -m tidemark.auth.bootstrap --dbpath /data --username NAME`` with the
password on stdin (never on a command line, never in the log) when the container starts on an
empty data directory with ``MONGO_INITDB_ROOT_USERNAME`` / ``MONGO_INITDB_ROOT_PASSWORD``. The user
is the same document ``createUser`` writes (role ``root`` on ``admin``, SCRAM-SHA-1 and SCRAM-SHA-256
credentials with the default iteration counts). It refuses to run when a user already exists.
"""

from __future__ import annotations

import argparse
import sys

from tidemark.auth import accounts, store
from tidemark.params import ServerParams
from tidemark.storage.engine import open_engine


def create_root_user(dbpath: str, username: str, password: str) -> None:
    params = ServerParams()
    creds = accounts.credentials(username, password, accounts.mechanisms_arg(
        None, params["authenticationMechanisms"], "createUser"), True, params)
    doc = accounts.user_document("admin", username, creds, [("root", "admin")])
    engine = open_engine(dbpath)
    try:
        if store.exists_any(engine):
            raise SystemExit(f"tidemark bootstrap: {dbpath} already has users; nothing created")
        engine.write_sync(store.insert(store.USERS, doc))
    finally:
        engine.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tidemark.auth.bootstrap",
                                     description="create the root user of a new Tidemark data directory "
                                                 "(password read from stdin)")
    parser.add_argument("--dbpath", required=True)
    parser.add_argument("--username", required=True)
    args = parser.parse_args(argv)
    password = sys.stdin.read()
    if not args.username or not password:
        parser.error("a user name and a password (on stdin) are required")
    create_root_user(args.dbpath, args.username, password)
    print(f"tidemark bootstrap: created user {args.username!r} with role root on admin")
    return 0


if __name__ == "__main__":
    sys.exit(main())
