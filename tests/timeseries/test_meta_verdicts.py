"""The insert-time meta check (a meta that would break an index's key is refused at insert) probes each
distinct meta once per index list, not once per insert: a workload's metas recur, and probing every
distinct meta of every insert cost ~25 % of a TSBS load's server CPU."""

from __future__ import annotations

import bson

from tidemark.timeseries import indexes


def _rules():
    specs = ({"v": 2, "key": {"meta": 1, "control.min.t": 1, "control.max.t": 1}, "name": "meta_1_t_1"},)
    rules = indexes.measurement_rules(specs, "t")
    assert rules is not None and rules.meta_specs
    return rules


def test_a_recurring_meta_is_probed_once(monkeypatch):
    rules = _rules()
    probed = []
    real = type(rules).meta_error
    monkeypatch.setattr(type(rules), "meta_error", lambda self, meta: probed.append(meta) or real(self, meta))
    metas = [bson.encode({f"tag{i}": "x" * 30 for i in range(8)} | {"host": f"h{h}"}) for h in range(3)]
    for _ in range(5):  # five inserts carrying the same three metas
        assert rules.column_batch_error(metas, 3, {}) is False
    assert len(probed) == 3


def test_the_verdict_of_a_meta_too_long_is_remembered_too():
    rules = _rules()
    long_meta = {"name": "y" * 600}
    raw = bson.encode({"": long_meta})
    first = rules.meta_verdict(None, raw, lambda: long_meta)
    assert first is not None and first.code == 17280  # KeyTooLong: the meta index's key would not fit
    assert rules.meta_verdict(None, raw, lambda: (_ for _ in ()).throw(AssertionError("probed again"))) is first
