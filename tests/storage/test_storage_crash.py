"""kill -9 durability: every acknowledged write survives, and indexes agree with records."""

import os
import signal
import subprocess
import sys

import bson
import pytest

from tidemark.storage.catalog import index_db_name, records_db_name
from tidemark.storage.engine import open_engine
from tidemark.storage.keys import decode_key, encode_key

WRITER = os.path.join(os.path.dirname(__file__), "crash_writer.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_writer_until(dbpath, acks_wanted, base):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, WRITER, dbpath, str(base)], stdout=subprocess.PIPE, env=env, text=True)
    acked = set()
    try:
        assert proc.stdout.readline().strip() == "ready"
        for line in proc.stdout:
            acked.add(int(line.split()[1]))
            if len(acked) >= acks_wanted:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        # anything the writer printed before dying was acknowledged too
        rest = proc.communicate(timeout=30)[0]
    acked.update(int(line.split()[1]) for line in rest.splitlines() if line.startswith("ack "))
    return acked


def check_consistent(dbpath, acked):
    eng = open_engine(dbpath)
    try:
        with eng.read() as r:
            info = r.get_collection("db.crash")
            docs = {rid: bson.decode(v) for rid, v in r.scan(info)}
            ids = {d["_id"] for d in docs.values()}
            assert acked <= ids, f"{len(acked - ids)} acknowledged writes lost"
            assert len(ids) == len(docs) == r.count(info)
            id_entries = list(r.index_scan(info, "_id_"))
            assert sorted((encode_key([d["_id"]]), rid) for rid, d in docs.items()) == id_entries
            k_entries = {(decode_key(k, [1])[0], rid) for k, rid in r.index_scan(info, "k_1")}
            assert k_entries == {(d["k"], rid) for rid, d in docs.items()}
            assert r.data_size(info) == sum(len(bson.encode(d)) for d in docs.values())
            journaled = {i for _, _, p in r.journal_scan() for i in bson.decode(p)["ids"]}
            assert journaled == ids  # each batch's journal record committed with its records
            assert [c.ns for c in r.list_collections("db")] == ["db.crash"]
            live = {records_db_name(info.ident)} | {index_db_name(i) for i in info.index_idents.values()}
        with eng._env.begin() as txn:  # buried sub-databases of dropped collections were deleted
            assert {key for key, _ in txn.cursor()} == live | {b"_catalog", b"_meta", b"_journal", b"_chunks", b"_longkeys"}
        return len(ids)
    finally:
        eng.close()


@pytest.mark.slow
def test_acknowledged_writes_survive_sigkill(tmp_path):
    dbpath = str(tmp_path / "db")
    acked = run_writer_until(dbpath, 2000, base=0)
    first = check_consistent(dbpath, acked)
    # a second crash on the recovered database
    acked |= run_writer_until(dbpath, 1000, base=1_000_000_000)
    second = check_consistent(dbpath, acked)
    assert second > first
