"""A read view kept past its ``with engine.read()`` block holds no LMDB transaction (py-lmdb frees a reader
slot only when the transaction object dies, and a suspended generator may keep the view): using it then
fails loudly, and no reader slot pins a snapshot."""

import pytest


def test_a_view_kept_past_its_block_has_no_transaction(engine):
    engine.write_sync(lambda w: w.create_collection("db.c"))
    with engine.read() as r:
        assert r.get_collection("db.c") is not None
    with pytest.raises(AttributeError):
        r.get_collection("db.c")
    slots = engine._env.readers().splitlines()[1:]  # (pid, thread, txnid: "-" for a slot not reading)
    assert all(line.split()[-1] == "-" for line in slots)
