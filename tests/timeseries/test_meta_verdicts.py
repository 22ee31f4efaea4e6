"""The insert-time meta check (a meta that would break an index's key is refused at insert) probes each
distinct meta once per index list, not once per insert: a workload's metas recur, and probing every
distinct meta of every insert cost ~25 % of a TSBS load's server CPU."""

from __future__ import annotations

import bson

from tidemark.timeseries import indexes

_SPECS = ({"v": 2, "key": {"meta": 1, "control.min.t": 1, "control.max.t": 1}, "name": "meta_1_t_1"},)


def _rules():
    specs = ({"v": 2, "key": {"meta.a": 1, "meta.b": 1, "control.min.t": 1, "control.max.t": 1}, "name": "ab"},)
    rules = indexes.measurement_rules(specs, "t")
    assert rules is not None and rules.meta_specs
    return rules


def test_a_recurring_meta_is_probed_once(monkeypatch):
    rules = _rules()
    probed = []
    real = type(rules).meta_error
    monkeypatch.setattr(type(rules), "meta_error", lambda self, meta: probed.append(meta) or real(self, meta))
    metas = [bson.encode({"a": f"h{h}", "b": [1, 2]}) for h in range(3)]
    for _ in range(5):  # five inserts carrying the same three metas
        assert rules.column_batch_error(metas, 3) is False
    assert len(probed) == 3


def test_the_verdict_of_a_refused_meta_is_remembered_too():
    specs = ({"v": 2, "key": {"meta.a": 1, "meta.b": 1, "control.min.t": 1, "control.max.t": 1}, "name": "ab"},)
    rules = indexes.measurement_rules(specs, "t")
    parallel = {"a": [1, 2], "b": [3, 4]}
    raw = bson.encode({"": parallel})
    first = rules.meta_verdict(None, raw, lambda: parallel)
    assert first is not None and first.code == 171  # CannotIndexParallelArrays
    assert rules.meta_verdict(None, raw, lambda: (_ for _ in ()).throw(AssertionError("probed again"))) is first


def test_a_long_meta_under_a_single_path_index_needs_no_probe():
    """Index keys have no size limit (mongod since 4.2; storage/longkeys.py): nothing can refuse a meta
    under one ascending meta path, so no rules apply to the default {meta, time} index."""
    assert indexes.measurement_rules(_SPECS, "t") is None
