"""The memo keys and columns of a planned columnar group (``columnar._group_keys``), remembered per group
shape and condition-path set: always what the fresh formulas give for that group (the definitions the
keys had when made per query), whichever shapes and filters came before — a memo whose key missed a
part the keys depend on (a path, the time field, a field, the unit) hands one group another's keys."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tidemark.timeseries import columnar

_OPS = [np.greater, np.greater_equal, np.less, np.less_equal, np.equal]
_FIELDS = ["a", "b", "c", "t", "time"]


def _fresh(group: columnar.ColumnarGroup, field_columns: set[str]) -> tuple[list[str], str, str]:
    """columns, fast_arrays' key and the runs' key as made per query before the memo."""
    columns = sorted(field_columns | {p for p, _, _ in group.conditions} - {group.time_field})
    fast = "fast arrays " + repr((group.time_field, tuple(columns)))
    runs = "runs " + repr((group.time_field, group.unit_ms, tuple((spec.name, spec.field) for _, spec in group.fields),
                           tuple(sorted({path for path, _, _ in group.conditions}))))
    return columns, fast, runs


specs = st.builds(
    lambda unit, accs: {"_id": {"$dateTrunc": {"date": "$TF", "unit": unit}} if unit else "$m",
                        **{f"out{i}": {op: f"${field}" if field else 1} for i, (op, field) in enumerate(accs)}},
    st.sampled_from([None, "second", "minute", "hour"]),
    st.lists(st.tuples(st.sampled_from(["$max", "$min", "$sum", "$avg", "$first", "$last"]),
                       st.sampled_from(["a", "b", "c", None])), min_size=1, max_size=3))
conditions = st.lists(st.tuples(st.sampled_from(_FIELDS), st.sampled_from(_OPS), st.integers(-5, 5)), max_size=5)


def _spec(raw: dict, tf: str) -> dict:
    out = dict(raw)
    if isinstance(out["_id"], dict):
        out["_id"] = {"$dateTrunc": {"date": "$" + tf, "unit": out["_id"]["$dateTrunc"]["unit"]}}
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(specs, st.sampled_from(["t", "time"]), conditions), min_size=1, max_size=6))
def test_remembered_keys_are_the_fresh_ones(reads):
    for raw, tf, conds in reads + reads[::-1]:  # each (shape, paths) seen again after the others
        spec = _spec(raw, tf)
        shape = columnar._shape(spec, tf, "m")
        if shape is None:
            continue
        group = columnar.ColumnarGroup(spec, shape, list(conds), tf, "m")
        columns, fast, runs = _fresh(group, {spec.field for _, spec in shape.fields if spec.field is not None})
        assert (group.columns, group.fast_key, group.runs_key) == (columns, fast, runs)


def test_one_shape_keeps_keys_per_path_set():
    spec = {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "x": {"$max": "$a"}}
    shape = columnar._shape(spec, "t", "m")
    one = columnar.ColumnarGroup(spec, shape, [("t", np.greater, 1), ("t", np.less, 9)], "t", "m")
    two = columnar.ColumnarGroup(spec, shape, [("t", np.greater, 1), ("b", np.less, 9.0)], "t", "m")
    again = columnar.ColumnarGroup(spec, shape, [("t", np.less_equal, 5)], "t", "m")
    assert one.columns == ["a"] and two.columns == ["a", "b"]
    assert one.runs_key != two.runs_key and one.fast_key != two.fast_key
    assert (again.columns, again.fast_key, again.runs_key) == (one.columns, one.fast_key, one.runs_key)
    other_time = columnar.ColumnarGroup(spec, shape, [("t", np.greater, 1)], "time", "m")
    assert other_time.fast_key != one.fast_key and other_time.columns == ["a", "t"]
