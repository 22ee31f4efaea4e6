"""Dropped storage under concurrent reads: every read sees its own snapshot's data or a clear
StorageDropped, never another collection's records; buried sub-databases are reclaimed while reads
keep coming (a small max_dbs fills up otherwise) and all of them once the reads stop, with no write."""

import threading
import time

import bson
from storage_helpers import id_keys

from tidemark.storage.catalog import index_db_name, records_db_name
from tidemark.storage.engine import open_engine
from tidemark.storage.errors import StorageDropped, TooManyCollections

ROUNDS = 150
READERS = 3


def test_drop_and_recreate_under_concurrent_reads(tmp_path):
    engine = open_engine(str(tmp_path / "db"), max_dbs=int(__import__("os").environ.get("MAXDBS", "48")))  # ~20 collections (+ _id index) alive at once
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = [0] * READERS

    def reader(k):
        ns = f"a.x{k % 2}"
        try:
            while not stop.is_set():
                with engine.read() as r:
                    info = r.get_collection(ns)
                    if info is None:
                        continue
                    try:
                        docs = [bson.decode(v) for _, v in r.scan(info)]
                    except StorageDropped:
                        continue
                    # the snapshot's own collection, whole: never a reused handle's records
                    assert docs == [{"_id": i, "uuid": str(info.uuid)} for i in range(len(docs))], docs
                    assert len(docs) == 5
                reads[k] += 1
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(READERS)]
    for t in threads:
        t.start()
    try:
        for n in range(ROUNDS):
            ns = f"a.x{n % 2}"
            engine.write_sync(lambda w, ns=ns: w.drop_collection(ns) if w.get_collection(ns) else None)

            def create(w, ns=ns):
                info = w.create_collection(ns, {})
                for i in range(5):
                    w.insert(info, bson.encode({"_id": i, "uuid": str(info.uuid)}),
                             id_keys({"_id": i}))
                return info

            # a reader the machine deschedules holds its snapshot, and so every drop since, for as long:
            # on a loaded machine the buried sub-databases may fill the 48 for a moment; they must be
            # reclaimed once that reader goes on (never: the create keeps failing past the deadline)
            deadline = time.monotonic() + 20
            while True:
                try:
                    engine.write_sync(create)
                    break
                except TooManyCollections:
                    assert time.monotonic() < deadline, "buried sub-databases were not reclaimed"
                    time.sleep(0.01)
            assert not failures, failures
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert not failures, failures
    assert min(reads) > 0
    live = set()
    with engine.read() as r:
        for ns in ("a.x0", "a.x1"):
            info = r.get_collection(ns)
            live |= {records_db_name(info.ident)} | {index_db_name(i) for i in info.index_idents.values()}
    deadline = time.monotonic() + 5
    while set(engine._handles) != live or engine._maybe_graveyard:  # no read open: reclaimed without a write
        assert time.monotonic() < deadline, (sorted(engine._handles), sorted(live))
        time.sleep(0.001)
    engine.close()
