"""Subprocess for the crash test: writes acknowledged records forever, printing each acked id.

Usage: python crash_writer.py DBPATH BASE_ID. Every line "ack <n>" is printed only after the write's
future resolved, i.e. after its group commit was fsynced.
"""

import sys
import threading

import bson

from tidemark.storage.engine import open_engine
from tidemark.storage.keys import encode_key

NS = "db.crash"
INDEX = {"v": 2, "key": {"k": 1}, "name": "k_1"}


def keys(doc):
    return {"_id_": [encode_key([doc["_id"]])], "k_1": [encode_key([doc["k"]])]}


def main() -> None:
    base = int(sys.argv[2])
    engine = open_engine(sys.argv[1], map_size=1 << 20)  # small map: growth happens under the kill too

    def setup(w):
        info = w.get_collection(NS) or w.create_collection(NS, {})
        if info.index_spec("k_1") is None:
            info = w.create_index(info, INDEX, [])

    engine.write_sync(setup)
    print("ready", flush=True)
    out_lock = threading.Lock()

    def writer(worker: int) -> None:
        n = 0
        while True:
            ids = [base + worker * 10_000_000 + n + i for i in range(5)]
            n += 5

            def fn(w, ids=ids, worker=worker):
                info = w.get_collection(NS)
                for _id in ids:
                    doc = {"_id": _id, "k": _id % 1000, "pad": "p" * 200}
                    w.insert(info, bson.encode(doc), keys(doc))
                w.journal_append(b"worker%d" % worker, bson.encode({"ids": ids}))
                if worker == 0:  # churn: drops leave buried sub-databases to reclaim
                    churn = f"db.tmp{ids[0]}"
                    w.create_collection(churn, {})
                    w.drop_collection(churn)

            engine.write(fn).result()
            with out_lock:
                sys.stdout.write("".join(f"ack {i}\n" for i in ids))
                sys.stdout.flush()

    threads = [threading.Thread(target=writer, args=(k,), daemon=True) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
