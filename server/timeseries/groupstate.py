"""Groups of a columnar ``$group`` kept as NumPy totals while every value comes from dense runs (pure).

groupbatch.py cuts a batch of dense rows into runs (consecutive rows of one meta and one truncated
time, hence of one group). ``DenseGroups`` takes a batch's runs and keeps, per group *slot* (groups in
first-seen order), one array entry per accumulator instead of Python accumulator objects: the exact
total and count of a ``$sum``/``$avg``, the winner of a ``$max``/``$min``, the first/last value, the
count of ``$count``. Output documents are built once, at the end: as BSON straight from the arrays
(``encoded``, groupbson.py) when they go to a cursor untouched, else dicts. The generic ``_id``
expression runs once per meta: a flat-object ``_id`` (or a bare ``$dateTrunc``) is a per-meta
template (kept across queries with its encoded element, keyed by the ``_id`` expression and the
meta's BSON: ``_TEMPLATES``), and a group of such a meta is keyed (template part, truncated ms) with its ``_id`` made
only when dicts are asked for (``_filled_ids``).

The ``$sort`` right after the group (``sorted_results``) is one stable ``np.lexsort`` over per-slot
keys: a ``_id`` part that is a bare ``$dateTrunc`` sorts by its truncated ms (every value a date), a
part fixed per meta by the meta's rank under the generic sort key (``query.sort.make_sort_key``, so
BSON type order, arrays' least/greatest element and missing values are the generic ones; when every
meta's part is a string, by Python's string order, which is that key's for strings); ties keep
first-seen order, as the generic stable sort does. It declines (None) for any other key, and without
``allowDiskUse`` when (groups + 8) x the largest document's BSON size could pass the sort's memory
limit (the generic sort must then raise).

Exactness: the results equal what the generic accumulators give when fed the same runs in row order
(groupbatch's per-run feed):
- ``$sum``/``$avg``: taken only while every value fed to that accumulator so far is integral and
  their absolute sum stays below 2**53, so every partial total is exact in any order; the result is
  the total (``$avg``: divided by the count), as ``_Sum``'s fsum folding gives for exact totals;
- ``$max``/``$min``: taken only for batches without ``-0.0`` (NumPy's reductions need not keep the
  first of equal zeros), NaN never reaches here; ``$first``/``$last``: a group's first/last run;
- a batch that cannot be taken leaves the state untouched (``feed`` checks first and answers False): the caller then
  turns every group into generic accumulators (``materialize``, fed with the same totals) and goes on
  the generic way.
Memory: the generic stage's rule (``stage_group._Groups``), per group its overhead and ``_id``; the
accumulators here add nothing to it: ``Accumulator.memory()`` of a $sum/$avg/$count is 0 and that of a
$max/$min/$first/$last keeping a number or a date is the 16 bytes of the null or missing it starts
with, so the generic stage counts no change for them either (no per-row work is needed to agree).
Counted with or without allowDiskUse (``used``; ``over(limit)`` tells it from a bound — every templated
group at the largest template ``_id`` ever made — and counts exactly only past that bound, so a query far
below the limit counts nothing per group): past the limit, 292 without allowDiskUse (raised here), or
the caller spills (groupbatch: ``_Batch._spill``). Nothing else here grows with the runs or series
read: the run tokens are not kept (``materialize`` hands on each slot's first one, ``_slot_tokens``),
``_loop``'s token cache is cut back to them past ``TOKENS_SLACK`` + twice the groups, and what is kept per
meta (templates, sizes, elements) is only the metas' the caller keeps (``renumber``, groupbatch's
``_Batch._compact``): a grouping of a million series into ten groups holds ten groups.
"""

from __future__ import annotations

import datetime as _dt
import threading
from typing import Any

import numpy as np

from tidemark.protocol.codec import EncodedRun
from tidemark.query.expr_base import KIND_LONG, make_integer
from tidemark.query.memory import approx_size as _approx_size
from tidemark.query.sort import make_sort_key
from tidemark.query.stage_group import _GROUP_OVERHEAD, _memory_error, group_key
from tidemark.query.values import MISSING
from tidemark.timeseries import groupbson
from tidemark.timeseries.groupruns import Runs

_EPOCH = _dt.datetime(1970, 1, 1)
_LAZY = object()  # a slot's _id not made yet (``DenseGroups._filled_ids``)
# fewer documents are cheaper as dicts the cursor encodes (~3 us each) than laid out by groupbson's
# ~25 NumPy calls (~80 us whatever the count)
ENCODED_MIN = 32
_EXACT_SUM = float(2**53)
_SUPPORTED = {"$sum", "$avg", "$max", "$min", "$first", "$last"}
_INT_LOW, _INT_HIGH = np.iinfo(np.int64).min, np.iinfo(np.int64).max
# Templates across queries (``_IdMaker.learn``): (the group's ``id_shape``, a meta's BSON token) ->
# (base ``_id``, part key, time keys), a pure function of the two (the planner's ``_id``s read only the
# meta and the truncated time, no variable; a template's time parts are substituted wherever it is
# used). Entries are shared and never mutated (nor is the base ``_id``: pipeline documents are never
# mutated, query/README.md); cleared when full. ``_ELEMENTS``: the same keys -> (the base ``_id``, its
# element: ``groupbson.element``, its dates' offsets in it: ``groupbson.date_offsets``), taken only with
# that very base (its dates are located in the bytes).
_TEMPLATES: dict[tuple[bytes, bytes | None], tuple[Any, Any, Any]] = {}
_ELEMENTS: dict[tuple[bytes, bytes | None], tuple[Any, bytes | None, list[int] | None]] = {}
_TEMPLATES_MAX = 4096
# The largest ``approx_size`` of a template ``_id`` ever made (only grows): every group of a template
# counts at most this for its ``_id``, the bound ``DenseGroups.over`` reads before counting exactly
_ID_SIZE_BOUND = [0]
_ID_SIZE_LOCK = threading.Lock()  # (templates are made on the worker threads)
# run tokens a cache keyed by them (``DenseGroups.slot_of_token``, groupbatch's ``_accumulators``) may hold past
# twice the groups before it is cut back to one per group
TOKENS_SLACK = 4096
_F8, _I4 = np.dtype("<f8"), np.dtype("<i4")  # the BSON values' layouts (dtype objects: a string is parsed per use)
_NO_INTS = np.zeros(0, dtype=np.int64)  # (shared: replaced, never written)
_NO_INTS.flags.writeable = False
_TRUE = np.ones(1, dtype=bool)  # (shared: never written)
_TRUE.flags.writeable = False
# the ufuncs' reductions themselves (one C call each; ``np.count_nonzero``/``np.any`` are Python wrappers)
_ANY, _ALL = np.logical_or.reduce, np.logical_and.reduce


def ms_to_datetime(ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=int(ms))


def supports(group: Any) -> bool:
    """True when every accumulator has a dense-run form here (a measurement field, or ``$count``)."""
    return facts(group).supported


class _Facts:
    """What a group's shape fixes here, whatever its filter, constants or data (``facts``): made once per
    shape, shared by its queries, never mutated."""

    __slots__ = ("fields", "id_fn", "time_field", "supported", "bare_trunc", "time_keys", "states", "kinds",
                 "tail", "places", "value_bytes")

    def __init__(self, group: Any):
        fields, tf = group.fields, group.time_field
        self.fields, self.id_fn, self.time_field = fields, group.id_fn, tf
        self.supported = all((spec.name in _SUPPORTED and spec.field is not None)
                             or (spec.name == "$count" and spec.field is None) for _, spec in fields)
        spec = group.group_spec["_id"]
        # the ``_id`` is a bare ``$dateTrunc`` / the names of its parts that are (a flat object; None: no
        # template can be made of it)
        self.bare_trunc = isinstance(spec, dict) and list(spec) == ["$dateTrunc"]
        time_keys = [k for k, v in spec.items() if isinstance(v, dict) and "$dateTrunc" in v] \
            if isinstance(spec, dict) and not self.bare_trunc else None
        if time_keys and any(_has_trunc(v) for k, v in spec.items() if k not in time_keys):
            time_keys = None  # a time part inside another part: it is not fixed per meta (no template)
        self.time_keys = time_keys
        # per accumulator: its state arrays (name, initial value, dtype) (``DenseGroups._grow``)
        self.states = []
        for _, acc in fields:
            time_valued = acc.field is not None and acc.field == tf
            dtype = np.int64 if time_valued else np.float64
            self.states.append([(name, fill, np.int64 if name == "count" else dtype)
                                for name, fill in _initial(acc.name, time_valued)])
        # ``encoded``'s tail: per accumulator what its value is ("count": an int32, "sum"/"avg"/"value": a
        # double), its layout (``groupbson.tail_layout``); kinds None when a value has no fixed layout (a
        # time-valued accumulator: they do not reach NumPy totals today)
        kinds: list[str] = []
        layout = []
        for name, acc in fields:
            if acc.field is None:
                kind, bson_type = "count", groupbson.INT32
            elif acc.name in ("$sum", "$avg"):
                kind, bson_type = acc.name[1:], groupbson.DOUBLE
            elif acc.field == tf:
                kind, bson_type = "time", groupbson.DATE
            else:
                kind, bson_type = "value", groupbson.DOUBLE
            kinds.append(kind)
            layout.append((name, bson_type))
        self.kinds: list[str] | None = None if "time" in kinds else kinds
        self.tail, self.places = groupbson.tail_layout(tuple(layout))
        # the bytes of the accumulator elements of a document with 8-byte values (type, name, NUL, value);
        # None when a name holds a NUL
        names = [name.encode() for name, _ in fields]
        self.value_bytes = None if any(b"\x00" in name for name in names) else \
            sum(1 + len(name) + 1 + 8 for name in names)


# ``_Facts`` by the id of a group's accumulator list (the planner's ``_Shape.fields``, shared by the queries
# of a shape, as is its compiled ``_id``: both are held by the entry, so an id is their own while it is
# found): cleared when full
_FACTS: dict[int, _Facts] = {}


def facts(group: Any) -> _Facts:
    """The ``_Facts`` of ``group``'s shape."""
    fields = group.fields
    found = _FACTS.get(id(fields))
    if found is not None and found.fields is fields and found.id_fn is group.id_fn \
            and found.time_field == group.time_field:
        return found
    made = _Facts(group)
    if len(_FACTS) >= _TEMPLATES_MAX:
        _FACTS.clear()
    _FACTS[id(fields)] = made
    return made


class _IdMaker:
    """Group ``_id``s for (meta index, truncated ms): the generic compiled ``_id`` on a representative
    row for each meta's first group; later groups of that meta reuse it with the truncated time
    substituted when the ``_id`` is a flat object whose time parts are bare ``$dateTrunc`` (checked on
    the first one: they must evaluate to the truncated datetime) or a bare ``$dateTrunc``.

    ``make`` also gives a cheap group key for ids built from a template: (id of the ``_id`` without its
    time parts, truncated ms), equal exactly when the generic ``group_key``s are equal; None for ids
    evaluated without a template (the caller then keys every group generically)."""

    def __init__(self, group: Any, metas: list[Any], tokens: list[bytes | None], shape: _Facts):
        self.group, self.metas, self.tokens = group, metas, tokens
        self.bare_trunc, self.time_keys = shape.bare_trunc, shape.time_keys
        self.templates: dict[int, Any] = {}  # meta index -> (base _id, part id, time keys) | None
        self._parts: dict[Any, int] = {}
        self._when: dict[int, _dt.datetime] = {}

    def when(self, ms: int) -> _dt.datetime:
        found = self._when.get(ms)
        if found is None:
            found = self._when[ms] = ms_to_datetime(ms)
        return found

    def learn(self, owner: int, trunc: Any, first_ms: Any, variables: dict[str, Any]) -> Any:
        """Meta ``owner``'s template (made now from its first group: (meta index, ``trunc``) whose first
        row is at ``first_ms``: ints or NumPy integers, read only when no template is remembered), or
        None when its ``_id``s are not made from one; returns the ``_id`` it evaluated (None when it
        evaluated none: a template remembered from an earlier query, ``_TEMPLATES``)."""
        shape = self.group.id_shape
        key = (shape, self.tokens[owner])
        made = _TEMPLATES.get(key) if shape is not None else None
        if made is not None:
            base, part_key, time_keys = made
            self.templates[owner] = base, -1 if part_key is None else self._part(part_key), time_keys
            return None
        idv = self._evaluate(owner, int(first_ms), variables)
        made = self._template(idv, None if trunc is None else int(trunc))
        if made is not None:
            size = _approx_size(made[0])
            if size > _ID_SIZE_BOUND[0]:
                with _ID_SIZE_LOCK:
                    _ID_SIZE_BOUND[0] = max(_ID_SIZE_BOUND[0], size)
            if shape is not None:
                if len(_TEMPLATES) >= _TEMPLATES_MAX:
                    _TEMPLATES.clear()
                    _ELEMENTS.clear()
                _TEMPLATES[key] = made
        self.templates[owner] = None if made is None else \
            (made[0], -1 if made[1] is None else self._part(made[1]), made[2])
        return idv

    def make(self, owner: int, trunc: int | None, first_ms: int, variables: dict[str, Any]) -> tuple[Any, Any]:
        template = self.templates.get(owner, False)
        if template is False:
            idv = self.learn(owner, trunc, first_ms, variables)
            template = self.templates[owner]
            if template is None:  # (a template from an earlier query is never None: ``idv`` is set)
                return idv, None
        elif template is None:
            return self._evaluate(owner, first_ms, variables), None
        base, part, time_keys = template
        if time_keys is None:  # the _id does not depend on the time
            return base, (part, None)
        assert trunc is not None  # a template with time parts comes from a group truncating times
        when = self.when(trunc)
        if self.bare_trunc:
            return when, (part, trunc)
        idv = dict(base)
        for name in time_keys:
            idv[name] = when
        return idv, (part, trunc)

    def of(self, owner: int, trunc: int | None) -> Any:
        """The ``_id`` of (meta ``owner``, truncated ms) from the meta's template (``make`` made it)."""
        base, _part, time_keys = self.templates[owner]
        if time_keys is None:
            return base
        when = self.when(trunc)  # type: ignore[arg-type]  # a template with time parts: a timed group
        if self.bare_trunc:
            return when
        idv = dict(base)
        for name in time_keys:
            idv[name] = when
        return idv

    def _evaluate(self, owner: int, first_ms: int, variables: dict[str, Any]) -> Any:
        group = self.group
        has_meta, meta = self.metas[owner]
        rep = {group.time_field: ms_to_datetime(first_ms)}
        if has_meta:
            rep[group.meta_field] = meta
        return group.id_fn(rep, variables)

    def _part(self, key: Any) -> int:
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = len(self._parts)
        return found

    def _template(self, idv: Any, trunc: int | None) -> Any:
        """(base ``_id``, its part key (None for a bare ``$dateTrunc``), time keys) of a meta whose first
        group's ``_id`` is ``idv``, or None."""
        if trunc is None:
            return idv, _key(idv), None
        when = self.when(trunc)
        if self.bare_trunc:
            return (idv, None, ()) if type(idv) is _dt.datetime and idv == when else None
        if self.time_keys is None or type(idv) is not dict or not self.time_keys:
            return None
        time_keys = self.time_keys
        for k in time_keys:  # (loops, not generators: once per meta and query)
            v = idv.get(k)
            if type(v) is not _dt.datetime or v != when:
                return None
        # the generic key with the time parts left out (their names stay, in place)
        pairs = tuple([(k, None if k in time_keys else group_key(v)) for k, v in idv.items()])
        return idv, ("obj", pairs), tuple(time_keys)


def _has_trunc(value: Any) -> bool:
    """True when the ``_id`` part ``value`` holds a ``$dateTrunc`` (at any depth)."""
    if isinstance(value, dict):
        return "$dateTrunc" in value or any(_has_trunc(v) for v in value.values())
    return isinstance(value, list) and any(_has_trunc(v) for v in value)


def _key(idv: Any) -> Any:
    t = type(idv)
    return idv if (t is str or t is _dt.datetime or t is int) else group_key(idv)


class DenseGroups:
    """Group slots (first-seen order) with one NumPy state entry per accumulator; see the module."""

    # made by ``_loop`` when it takes over (most reads never get there): {cheap key (``_IdMaker``): slot}
    # until an id has none, and its cache of run tokens (meta index, truncated ms) -> slot: each slot's
    # first token (``_slot_tokens``) and those met since, rebuilt from the slots when it outgrows them
    slot_of_key: dict[Any, int]
    slot_of_token: dict[tuple[Any, ...], int]

    def __init__(self, group: Any, ctx: Any, metas: list[Any], tokens: list[bytes | None], shape: _Facts | None = None):
        """``metas``: (has meta, meta) by meta index; ``tokens``: each one's BSON (None: no meta); ``shape``:
        ``facts(group)`` when the caller has it."""
        self.group, self.ctx = group, ctx
        self.ids: list[Any] = []  # _LAZY for an id from a template, made when first asked (``_filled_ids``)
        self._lazy = False
        # per slot: the meta index and truncated ms (0 when the group truncates no time: ``timed``
        # False) of its first run
        self.slot_owner = self.slot_trunc = _NO_INTS
        self._slot_metas: list[int] = []  # the distinct meta indexes of ``slot_owner``, ascending
        self.timed = group.unit_ms is not None
        # False while every slot's _id is from a template (``slots``: keys matched as arrays),
        # True once ``_loop`` took over (the dicts, from then on)
        self._looping = False
        # while templated: the keys of ``slot_of_key`` as arrays (template part code, truncated ms, slot)
        self._keys: tuple[np.ndarray | None, np.ndarray, np.ndarray] = (_NO_INTS, _NO_INTS, _NO_INTS)
        self._key_code: Any = None  # every known key's code while they are one (``_keys``' codes then None)
        self._generic_keys = False
        self._heads: dict[int, bytes | None] = {}  # meta index -> its _id element (``_element``)
        # meta index -> the offsets of its element's dates (``groupbson.date_offsets``), made with it
        self._date_at: dict[int, list[int] | None] = {}
        # the generic stage's count of the groups (``used``): ``_used`` of the slots ``_loop`` made, and the
        # first ``_templated`` slots (``slots``: their ids one size per meta) counted when asked
        self._used = 0
        self._templated = 0
        self._id_sizes: dict[int, int] = {}  # meta index -> approx_size of its ids (template ids)
        self._facts = shape if shape is not None else facts(group)
        self._ids = _IdMaker(group, metas, tokens, self._facts)
        self._cap = 0
        self._state: list[dict[str, np.ndarray]] = [{} for _ in group.fields]
        self._abs_fed = [0.0] * len(group.fields)  # per $sum/$avg: sum of |values| fed so far

    # -- slots
    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(self._cap * 2, need)  # (the first feed's groups exactly: most queries feed once)
        for states, state in zip(self._facts.states, self._state, strict=True):
            for name, fill, dtype in states:
                old = state.get(name)
                grown = np.empty(cap, dtype=dtype)
                grown.fill(fill)
                if old is not None:
                    grown[:len(old)] = old
                state[name] = grown
        self._cap = cap

    def slots(self, owners: np.ndarray, truncs: np.ndarray | None, first_times: np.ndarray,
              meta: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The slot of each run token (meta index, truncated ms; ``truncs`` None when the group truncates
        no time; a token may repeat), slots created in token order when new, and the positions of the
        tokens that made one (a new key's first): as many as the tokens only when every token made one,
        so the slots are then the next ones in order (``feed`` reads that). ``meta``: every token's meta
        index, when the caller knows them all one (a ``_id`` that reads no meta path).

        While every meta of these runs has a template ``_id`` (made here for a meta seen first), the
        group key is (the template's part, truncated ms), found among the known keys by one sort
        (``_keyed_slots``), and the new slots' ids are left to ``_filled_ids`` (a document made straight as
        BSON needs none); else, from then on, a token at a time by the dicts (``_loop``)."""
        if self._looping:
            return self._loop(owners, truncs, first_times)
        ids, ctx = self._ids, self.ctx
        templates = ids.templates
        if meta is None:
            metas, where = _distinct(owners)
            meta_list, firsts = metas.tolist(), where.tolist()
        else:
            metas, meta_list, firsts = None, [meta], [0]
        # per meta: its key code (the template's part, and whether the key has no time: 2 part + 1)
        meta_codes, meta_timeless = [], []
        for owner, i in zip(meta_list, firsts, strict=True):
            if owner not in templates:  # a template depends only on the meta: made in any order
                ids.learn(owner, None if truncs is None else truncs[i], first_times[i], ctx.variables)
            template = templates[owner]
            if template is None:
                return self._loop(owners, truncs, first_times)
            timeless = template[2] is None
            meta_codes.append(template[1] * 2 + 1 if timeless or truncs is None else template[1] * 2)
            meta_timeless.append(timeless)
        n = len(owners)
        token_truncs = np.zeros(n, dtype=np.int64) if truncs is None else truncs
        have = len(self.ids)
        # the group key as two integers: (part, truncated ms), or (part, no time) as another code
        code, codes = None, None
        if metas is None or len(meta_list) == 1:  # (one meta: its code is every token's)
            code = meta_codes[0]
            key_truncs = np.zeros(n, dtype=np.int64) if truncs is None or meta_timeless[0] else token_truncs
        else:
            at = metas.searchsorted(owners)  # each token's meta (its position in ``metas``)
            codes = np.array(meta_codes, dtype=np.int64)[at]
            if truncs is None or all(meta_timeless):
                key_truncs = np.zeros(n, dtype=np.int64)
            elif any(meta_timeless):  # (metas of both kinds)
                key_truncs = np.where(np.array(meta_timeless)[at], 0, token_truncs)
            else:
                key_truncs = token_truncs
        slots, new_at = self._keyed_slots(code, codes, key_truncs, have)
        made = len(new_at)
        if made:
            every = made == n  # (every token a new key: new_at is every position, in order)
            new_owners = owners if every else owners[new_at]
            new_truncs = token_truncs if every else token_truncs[new_at]
            self.ids.extend([_LAZY] * made)
            self._lazy = True
            self._add_slots(new_owners, new_truncs, meta_list if len(meta_list) == 1 else None)
            topk = self.group.topk
            if topk is not None and truncs is not None:
                topk.offer_many(new_truncs)
            # the generic stage's accounting (``used``): past the limit 292, or with allowDiskUse a spill by
            # the caller once the runs are fed
            self._templated += made
            if not ctx.allow_disk_use and self.over(ctx.group_memory_limit):
                raise _memory_error(ctx.group_memory_limit)
        return slots, new_at

    def _loop(self, owner_array: np.ndarray, trunc_array: np.ndarray | None,
              first_array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``slots`` a token at a time, by the dicts (made from the key arrays when first needed)."""
        owners: list[Any] = owner_array.tolist()
        truncs: list[Any] = [None] * len(owners) if trunc_array is None else trunc_array.tolist()
        first_times: list[Any] = first_array.tolist()
        if not self._looping:
            self._looping = True
            self.slot_of_token, self.slot_of_key = self._slot_tokens(), self._key_table()
        elif len(self.slot_of_token) > TOKENS_SLACK + 2 * len(self.ids):
            # tokens grow with metas x truncated times, groups may not (many series, few groups): a
            # cache, so kept in proportion to the groups
            self.slot_of_token = self._slot_tokens()
        table, slot_of_key = self.slot_of_token, self.slot_of_key
        group, ctx = self.group, self.ctx
        # past the limit: 292, or with allowDiskUse a spill by the caller once the runs are fed
        check, limit = not ctx.allow_disk_use, ctx.group_memory_limit
        sizes = self._id_sizes
        out = []
        created = []
        for r, token in enumerate(zip(owners, truncs, strict=True)):
            slot = table.get(token)
            if slot is None:
                idv, key = self._ids.make(token[0], token[1], first_times[r], ctx.variables)
                if key is None or self._generic_keys:
                    if not self._generic_keys:
                        self._generic_keys = True
                        slot_of_key = self.slot_of_key = {_key(v): i for i, v in enumerate(self._filled_ids())}
                    key = _key(idv)
                slot = slot_of_key.get(key)
                if slot is None:
                    slot = slot_of_key[key] = len(self.ids)
                    self.ids.append(idv)
                    created.append(r)
                    if group.topk is not None and token[1] is not None:
                        group.topk.offer(token[1])
                    # the generic stage's accounting (the keys; accumulators: the module)
                    if key is not None and not self._generic_keys:
                        # a template's ids differ only in dates (one size): measured once per meta
                        size = sizes.get(token[0])
                        if size is None:
                            size = sizes[token[0]] = _approx_size(idv)
                    else:
                        size = _approx_size(idv)
                    self._used += _GROUP_OVERHEAD + size
                    if check and self.over(limit):
                        raise _memory_error(limit)
                table[token] = slot
            out.append(slot)
        if created:
            picked = np.asarray(created, dtype=np.int64)
            self._add_slots(np.asarray(owners, dtype=np.int64)[picked],
                            np.asarray(truncs, dtype=np.int64)[picked] if self.timed else np.zeros(len(picked), np.int64))
        return np.asarray(out, dtype=np.int64), np.asarray(created, dtype=np.int64)

    @property
    def used(self) -> int:
        """What the generic stage counts for these groups (``stage_group._Groups``): per group its overhead
        and the ``approx_size`` of its ``_id`` (accumulators: the module)."""
        if not self._templated:
            return self._used
        sizes, templates = self._id_sizes, self._ids.templates
        owners = _distinct(self.slot_owner[:self._templated])[0].tolist()
        for owner in owners:  # (a template's ids differ only in dates: one size)
            if owner not in sizes:
                sizes[owner] = _approx_size(templates[owner][0])
        of_meta = np.zeros(owners[-1] + 1, dtype=np.int64)
        of_meta[owners] = [sizes[owner] for owner in owners]
        ids = int(of_meta[self.slot_owner[:self._templated]].sum())
        return self._used + _GROUP_OVERHEAD * self._templated + ids

    def over(self, limit: int) -> bool:
        """``used > limit``: told from a bound (the largest template ``_id`` ever made, ``_ID_SIZE_BOUND``, for
        every templated group) while that is within the limit, so the common case counts nothing per group."""
        if self._used + self._templated * (_GROUP_OVERHEAD + _ID_SIZE_BOUND[0]) <= limit:
            return False
        return self.used > limit

    def _add_slots(self, owners: np.ndarray, truncs: np.ndarray, metas: list[int] | None = None) -> None:
        """Slots of (meta index, truncated ms) ``owners``/``truncs`` added (``metas``: the distinct of
        ``owners`` ascending, when the caller knows them)."""
        if metas is None:
            metas = _distinct(owners)[0].tolist()
        held = self._slot_metas
        if metas != held:
            self._slot_metas = sorted(set(held).union(metas)) if held else metas
        if len(self.slot_owner):
            owners, truncs = np.concatenate([self.slot_owner, owners]), np.concatenate([self.slot_trunc, truncs])
        self.slot_owner, self.slot_trunc = owners, truncs

    def _slot_tokens(self) -> dict[tuple[Any, ...], int]:
        """{run token: slot} of each slot's first run token (meta index, truncated ms or None): one token
        per group, whatever the runs or metas met (a token's slot is its group key's, so any other token
        of a slot is found again from its key)."""
        owners = self.slot_owner.tolist()
        truncs = self.slot_trunc.tolist() if self.timed else [None] * len(owners)
        return {token: slot for slot, token in enumerate(zip(owners, truncs, strict=True))}

    def owners(self) -> list[int]:
        """The meta indexes some slot holds (ascending): the metas the groups still need."""
        return list(self._slot_metas)

    def renumber(self, keep: list[int]) -> None:
        """Meta ``keep[i]`` is meta ``i`` from now on (``keep``: ascending, holding every meta of ``owners``);
        what this state keeps per meta of the others is dropped (the caller renumbers its meta lists)."""
        index = np.zeros(max(keep[-1] + 1 if keep else 0, 1), dtype=np.int64)
        index[keep] = np.arange(len(keep), dtype=np.int64)
        if len(self.slot_owner):
            self.slot_owner = index[self.slot_owner]
        self._slot_metas = index[self._slot_metas].tolist() if self._slot_metas else []
        new_of = dict(zip(keep, range(len(keep)), strict=True))
        ids = self._ids
        ids.templates = {new_of[m]: t for m, t in ids.templates.items() if m in new_of}
        self._id_sizes = {new_of[m]: v for m, v in self._id_sizes.items() if m in new_of}
        self._heads = {new_of[m]: v for m, v in self._heads.items() if m in new_of}
        self._date_at = {new_of[m]: v for m, v in self._date_at.items() if m in new_of}
        if self._looping:
            self.slot_of_token = self._slot_tokens()

    def _keyed_slots(self, code: int | None, codes: np.ndarray | None, truncs: np.ndarray,
                     have: int) -> tuple[np.ndarray, np.ndarray]:
        """(slot of each key (``codes``, ``truncs``: the template part's code — ``code`` when it is every
        key's — and the truncated ms), the keys known so far (``_keys``) or new ones numbered from ``have``
        in first-seen order; the positions of the keys that made a slot): one stable lexicographic sort
        of the known and the new keys (a key's first position leads its stretch, the known keys' before
        the new ones'), no loop. Keys of one code (a ``_id`` reading no meta, or one meta's) sort by the
        times alone."""
        known_codes, known_truncs, known_slots = self._keys
        m, n = len(known_truncs), len(truncs)
        all_truncs = np.concatenate([known_truncs, truncs]) if m else truncs
        all_codes: np.ndarray | None = None  # (None: every key's code is ``code``)
        one = code is not None and (not m or self._key_code == code)
        if one:  # the times alone, one stable sort
            order = all_truncs.argsort(kind="stable")
            sorted_truncs = all_truncs[order]
            changes = sorted_truncs[1:] != sorted_truncs[:-1]  # (each key's stretch after the first)
        else:
            if codes is None:  # (one code, the known keys' others)
                codes = np.empty(n, dtype=np.int64)
                codes.fill(code)
            all_codes = np.concatenate([self._known_codes(), codes]) if m else codes
            order = np.lexsort((all_truncs, all_codes))
            sorted_codes, sorted_truncs = all_codes[order], all_truncs[order]
            changes = sorted_codes[1:] != sorted_codes[:-1]
            changes |= sorted_truncs[1:] != sorted_truncs[:-1]
        key_code = code if one else None
        if _ALL(changes):  # no key repeats: every token's is new, numbered in token order
            created = np.arange(n, dtype=np.int64)
            new_slots = created + have if have else created
            self._keys = (all_codes, all_truncs, np.concatenate([known_slots, new_slots]) if m else new_slots)
            self._key_code = key_code
            return new_slots, created
        starts = np.concatenate([_TRUE, changes])  # (a key's first position in the sorted keys)
        key_of = np.empty(m + n, dtype=np.int64)
        key_of[order] = starts.cumsum() - 1
        heads = order[starts]  # each key's first position
        slot_of = np.empty(len(heads), dtype=np.int64)
        # the new keys by their first token (first-seen order)
        if m:
            known = heads < m
            slot_of[known] = known_slots[heads[known]]
            new_keys = (~known).nonzero()[0]
            new_keys = new_keys[heads[new_keys].argsort()]
        else:  # (every key new)
            new_keys = heads.argsort()
        created = heads[new_keys] - m
        new_slots = np.arange(have, have + len(created), dtype=np.int64)
        slot_of[new_keys] = new_slots
        if len(created):
            self._keys = (None if all_codes is None else
                          np.concatenate([all_codes[:m], all_codes[created + m]]) if m else all_codes[created],
                          np.concatenate([known_truncs, truncs[created]]) if m else truncs[created],
                          np.concatenate([known_slots, new_slots]) if m else new_slots)
            self._key_code = key_code
        return slot_of[key_of[m:]] if m else slot_of[key_of], created

    def _known_codes(self) -> np.ndarray:
        """The codes of ``_keys`` (kept as None while they are one, ``_key_code``)."""
        codes, truncs, _ = self._keys
        if codes is None:
            codes = np.empty(len(truncs), dtype=np.int64)
            codes.fill(self._key_code)
        return codes

    def _key_table(self) -> dict[Any, int]:
        """{group key: slot} of ``_keys`` as ``_IdMaker.make`` keys them ((part, truncated ms or None))."""
        _, truncs, slots = self._keys
        return {(code >> 1, None if code & 1 else trunc): slot
                for code, trunc, slot in zip(self._known_codes().tolist(), truncs.tolist(), slots.tolist(),
                                             strict=True)}

    def _filled_ids(self) -> list[Any]:
        """Every slot's ``_id``, those from a template made now (once)."""
        if self._lazy:
            ids, of = self.ids, self._ids.of
            owners = self.slot_owner.tolist()  # (a lazy slot's: every slot's but a loop's own new ones)
            truncs = self.slot_trunc.tolist() if self.timed else [None] * len(owners)
            for slot in range(len(owners)):
                if ids[slot] is _LAZY:
                    ids[slot] = of(owners[slot], truncs[slot])
            self._lazy = False
        return self.ids

    # -- feeding
    def feed(self, runs: Runs) -> bool:
        """Add runs (``groupruns.Runs`` in arrival order) when their values can join the NumPy state
        exactly (see the module: each ``$sum``/``$avg`` integral and within 2**53, no ``-0.0`` for a
        ``$max``/``$min``); False, nothing added, when they cannot (the caller materializes). Their
        facts are read once (``Runs.exactness``). ``slots`` is asked once
        for all the runs' tokens (meta index, truncated ms) in run order, repeats and all (keys matched
        as arrays by one sort, or the dicts: no distinct-token pass first). A ``_id`` that reads no meta
        path is the same for every meta: its runs all count as meta 0 (the first meta's)."""
        fractional, abs_sums, neg_zeros = runs.exactness()
        fields, abs_fed = self.group.fields, self._abs_fed
        for j, (_, spec) in enumerate(fields):
            name = spec.name
            if name in ("$sum", "$avg") and spec.field is not None:
                if fractional[j] or abs_fed[j] + abs_sums[j] >= _EXACT_SUM:
                    return False
            elif neg_zeros[j] and name in ("$max", "$min"):
                return False
        if not runs.table.shape[0]:
            return True
        # (truncated ms, first ms, row count) of the runs: one cast, each a contiguous row
        heads = runs.table[:, :3].T.astype(np.int64, order="C")
        truncs = heads[0] if runs.timed else None
        have = len(self.ids)
        if self.group.id_meta:
            slots, created = self.slots(runs.owner, truncs, heads[1])
        else:
            slots, created = self.slots(np.zeros(heads.shape[1], dtype=np.int64), truncs, heads[1], 0)
        counts = heads[2]
        n = len(self.ids)
        if n > self._cap:
            self._grow(n)
        # every run made a slot (``slots``): they are have..n in run order, each fed once, so a ufunc's
        # ``at`` is the ufunc over that slice of the state (a view), a $first/$last the values themselves
        fresh = slice(have, n) if len(created) == len(slots) else None
        tf = self.group.time_field
        for j, (_, spec) in enumerate(fields):
            state, name = self._state[j], spec.name
            fed: tuple[tuple[Any, np.ndarray, np.ndarray], ...]  # (ufunc, state, values) of ``ufunc.at``
            if spec.field is None:  # $count
                fed = ((np.add, state["count"], counts),)
            else:
                values = runs.values(j).astype(np.int64) if spec.field == tf else runs.values(j)
                if name in ("$sum", "$avg"):
                    abs_fed[j] += abs_sums[j]
                    fed = ((np.add, state["total"], values), (np.add, state["count"], counts))
                elif name == "$max":
                    fed = ((np.maximum, state["value"], values),)
                elif name == "$min":
                    fed = ((np.minimum, state["value"], values),)
                else:
                    if fresh is not None:  # $first, $last: each slot's one run
                        state["value"][fresh] = values
                    elif name == "$first":
                        if len(created):
                            state["value"][slots[created]] = values[created]
                    else:  # $last: each slot's last run here
                        unique, at = np.unique(slots[::-1], return_index=True)
                        state["value"][unique] = values[len(slots) - 1 - at]
                    continue
            for ufunc, target, taken in fed:
                if fresh is None:
                    ufunc.at(target, slots, taken)
                else:
                    part = target[fresh]
                    ufunc(part, taken, out=part)
        return True

    # -- results
    def _values(self, j: int, picked: Any) -> list[Any]:
        """Accumulator j's result for the slots ``picked`` (an index array or slice), as the generic
        accumulator's ``result()``."""
        spec = self.group.fields[j][1]
        state, n = self._state[j], len(self.ids)
        if spec.field is None:
            return [c if c <= 2147483647 else make_integer(c, KIND_LONG) for c in state["count"][:n][picked].tolist()]
        values: list[Any]  # NumPy types tolist() as Any
        if spec.name == "$sum":
            values = state["total"][:n][picked].tolist()
            return values
        if spec.name == "$avg":
            return [t / c for t, c in zip(state["total"][:n][picked].tolist(), state["count"][:n][picked].tolist(),
                                          strict=True)]
        values = state["value"][:n][picked].tolist()
        if spec.field == self.group.time_field:
            return [self._ids.when(v) for v in values]
        return values

    def _elements(self, owners: list[int]) -> None:
        """``_element`` of each of ``owners`` (metas with a template) made now, those not made yet at once."""
        heads = self._heads
        if len(owners) == 1:  # (a one-meta read: no list made)
            if owners[0] in heads:
                return
            missing = owners
        else:
            missing = [owner for owner in owners if owner not in heads]
            if not missing:
                return
        shape, tokens, templates = self.group.id_shape, self._ids.tokens, self._ids.templates
        if shape is not None:  # those made by an earlier query from this very base _id (``_ELEMENTS``)
            left = []
            for owner in missing:
                found = _ELEMENTS.get((shape, tokens[owner]))
                if found is not None and found[0] is templates[owner][0]:
                    heads[owner], self._date_at[owner] = found[1], found[2]
                else:
                    left.append(owner)
            if not left:
                return
            missing = left
        shown = [_shown(templates[owner][0]) for owner in missing]
        made = groupbson.elements(shown)
        heads.update(zip(missing, made, strict=True))
        bare, date_at = self._ids.bare_trunc, self._date_at
        for owner, element, base in zip(missing, made, shown, strict=True):
            time_keys = templates[owner][2]
            date_at[owner] = None if element is None else \
                groupbson.date_offsets(element, base, list(time_keys) if time_keys else None, bare)
        if shape is not None:
            for owner, element in zip(missing, made, strict=True):
                key = (shape, tokens[owner])
                if key in _TEMPLATES:  # (kept only with its template: cleared together)
                    _ELEMENTS[key] = (templates[owner][0], element, date_at[owner])

    def _element(self, owner: int) -> bytes | None:
        """The ``_id`` element of meta ``owner``'s template ``_id`` (``groupbson.element``), encoded once."""
        if owner not in self._heads:
            self._elements([owner])
        return self._heads[owner]

    def encoded(self, slots: list[int] | np.ndarray | None = None) -> EncodedRun | None:
        """The output documents of ``slots`` (default: every group, first-seen order) as BSON made
        straight from the arrays (``groupbson``), one ``EncodedRun``: exactly ``encode_in_order`` of ``results``' dicts;
        None when some ``_id`` is not from a template, a value has no fixed layout here (a ``$count``
        past int32, a time-valued accumulator), or there are fewer than ``ENCODED_MIN`` documents."""
        templates, shape = self._ids.templates, self._facts
        kinds = shape.kinds
        n = len(self.ids)
        count = n if slots is None else len(slots)
        if kinds is None or self._generic_keys or count < ENCODED_MIN:
            return None
        picked: Any = slice(0, n) if slots is None else np.asarray(slots, dtype=np.intp)
        metas = self._slot_metas
        if len(metas) == 1:  # (every slot one meta's: so are those picked)
            used, owners_picked = metas, None
        else:
            owners_picked = self.slot_owner[picked]
            used = _distinct(owners_picked)[0].tolist()
        if self._looping and None in map(templates.get, used):  # (not looping: every slot's meta has one)
            return None
        self._elements(used)
        if owners_picked is None:
            heads: list[Any] = [self._heads[used[0]]]
            offsets: list[Any] = [self._date_at[used[0]]]
        else:
            heads = [self._heads[owner] for owner in used]
            offsets = [self._date_at[owner] for owner in used]
        if None in heads or None in offsets:
            return None
        if n > self._cap:
            self._grow(n)
        dates = self.slot_trunc[picked] if offsets[0] else None
        fills = []
        for (at, width), kind, state in zip(shape.places, kinds, self._state, strict=True):
            values: np.ndarray
            if kind == "count":  # an int32 (a long past it: the dict path)
                values = state["count"][picked]
                if int(values.max()) > 2147483647:
                    return None
                values = values.astype(_I4)
            elif kind == "sum":
                values = np.asarray(state["total"][picked], _F8)
            elif kind == "avg":
                values = np.asarray(state["total"][picked] / state["count"][picked], _F8)
            else:
                values = np.asarray(state["value"][picked], _F8)
            fills.append((at, width, values))
        if owners_picked is None:
            return groupbson.one_head(heads[0], offsets[0], count, dates, shape.tail, fills)
        index = np.empty(used[-1] + 1, dtype=np.int64)  # each document's head (its meta's place in ``used``)
        index[used] = np.arange(len(used))
        return groupbson.documents(heads, offsets, index[owners_picked], dates, shape.tail, fills)

    def results(self, slots: list[int] | None = None) -> list[dict[str, Any]]:
        """The output documents of ``slots`` (default: every group, first-seen order); only their
        values and ``_id``s are made."""
        n = len(self.ids)
        self._grow(max(n, 1))
        keys = ["_id"] + [name for name, _ in self.group.fields]
        picked: Any = slice(0, n) if slots is None else np.asarray(slots, dtype=np.intp)
        columns = [self._values(j, picked) for j in range(len(keys) - 1)]
        if slots is None:
            ids = self._filled_ids()
        else:
            ids = [self._id_of(slot) for slot in slots]
        shown = [None if idv is MISSING else idv for idv in ids]
        return [dict(zip(keys, row, strict=True)) for row in zip(shown, *columns, strict=True)]

    def _id_of(self, slot: int) -> Any:
        """Slot ``slot``'s ``_id`` (made from its template when not made yet)."""
        idv = self.ids[slot]
        if idv is _LAZY:
            idv = self.ids[slot] = self._ids.of(int(self.slot_owner[slot]),
                                                int(self.slot_trunc[slot]) if self.timed else None)
        return idv

    # -- the $sort after the group
    def sorted_results(self, spec: dict[str, Any], limit: int | None, ctx: Any, raw: bool = False) -> list[Any] | None:
        """The first ``limit`` output documents (None: all) as the generic stable ``$sort`` by ``spec``
        orders them (ties keep first-seen order), from the slots' meta indexes and truncated times;
        None when that cannot be told exactly here: a key that is not a part of the ``_id`` built from
        a template, or documents the generic sort might find over its memory limit (it must then
        raise; ``_max_doc_size`` bounds its estimate). ``raw`` (they go to a cursor untouched): a
        list of ONE item, an ``EncodedRun`` of them all, when ``encoded`` can make them (the ``$sort``
        passes it on whole and the cursor cuts it into batches).

        The slots' order: each key is either the truncated time (a ``_id`` part that is a bare
        ``$dateTrunc``: every value a date, ordered by its ms) or fixed per meta (ranked by the generic
        sort key)."""
        templates = self._ids.templates
        owners = self.slot_owner
        if self._generic_keys or not len(owners) or (self._looping and None in map(templates.get, self._slot_metas)):
            return None
        columns = []
        for path, direction in spec.items():
            if type(direction) is not int or direction not in (1, -1):
                return None
            if path == "_id":
                time_valued = self._ids.bare_trunc
                if not time_valued and self._ids.time_keys:
                    return None  # a whole-document comparison with a time part
            elif path.startswith("_id.") and "." not in path[4:] and not self._ids.bare_trunc:
                time_valued = self._ids.time_keys is not None and path[4:] in self._ids.time_keys
            else:
                return None
            if time_valued:
                if not self.timed:
                    return None
                column = self.slot_trunc
                columns.append(column if direction == 1 else -column)
            else:
                columns.append(self._meta_ranks(path, direction)[owners])
        if len(columns) == 1:  # (one key: the stable argsort lexsort would make)
            order = columns[0].argsort(kind="stable")
        else:
            order = np.lexsort(columns[::-1]) if columns else np.arange(len(owners))
        if not ctx.allow_disk_use:
            biggest = self._max_doc_size()
            # the generic estimate counts each document's BSON size once (every 8th one 8 times
            # past the first 1,024): at most (n + 8) times the largest
            if biggest is None or (len(self.ids) + 8) * biggest > ctx.memory_limit:
                return None
        picked = order if limit is None else order[:limit]
        if raw:
            encoded = self.encoded(picked)
            if encoded is not None:
                return [encoded]
        return self.results(picked.tolist())

    def _meta_ranks(self, path: str, direction: int) -> np.ndarray:
        """Per meta index: the rank of the value at ``path`` (a ``_id`` part fixed per meta) in the
        generic sort order for ``direction`` (equal keys, equal ranks)."""
        ranks = np.zeros(max(self._ids.templates) + 1, dtype=np.int64)
        strings = self._string_parts(path[4:]) if path.startswith("_id.") else None
        if strings is not None:
            # every value a string: the generic key orders strings as Python does (code points), and
            # equal strings tie
            order = sorted(set(strings.values()), reverse=direction == -1)
            rank_of = dict(zip(order, range(len(order)), strict=True))
            for owner, value in strings.items():
                ranks[owner] = rank_of[value]
            return ranks
        key = make_sort_key([(path, direction)])
        keyed = sorted(((key({"_id": _shown(template[0])}), owner) for owner, template in self._ids.templates.items()
                        if template is not None), key=lambda pair: pair[0])
        rank, previous = -1, None
        for i, (k, owner) in enumerate(keyed):
            if i == 0 or k != previous:
                rank, previous = rank + 1, k
            ranks[owner] = rank
        return ranks

    def _string_parts(self, name: str) -> dict[int, str] | None:
        """{meta index: its template ``_id``'s value at ``name``} when every template ``_id`` is an object
        whose ``name`` is a string, else None."""
        out = {}
        for owner, template in self._ids.templates.items():
            if template is None:
                continue
            base = template[0]
            value = base.get(name) if type(base) is dict else None
            if type(value) is not str:
                return None
            out[owner] = value
        return out

    def _max_doc_size(self) -> int | None:
        """An upper bound of the BSON size of every output document: per meta template, its ``_id``
        element (``_element``; a time part substituted keeps the size: a date for a date) with 8-byte
        values (doubles, dates, or a ``$count`` as a long)."""
        values = self._facts.value_bytes
        if values is None:
            return None  # BSON cannot hold a name: let the generic sort say
        owners = list(self._ids.templates)
        if self._ids.bare_trunc:  # every _id a date: one size (one meta's template, not one per meta)
            owners = owners[:1] if all(t is not None for t in self._ids.templates.values()) else []
            if not owners:
                return None
        if None in map(self._ids.templates.__getitem__, owners):
            return None
        self._elements(owners)
        biggest = 0
        for owner in owners:
            element = self._element(owner)
            if element is None:  # a value BSON cannot hold: let the generic sort say
                return None
            biggest = max(biggest, 4 + len(element) + values + 1)
        return biggest

    def materialize(self) -> tuple[dict[Any, tuple[Any, list[Any]]], dict[tuple[Any, ...], list[Any]]]:
        """Generic accumulators fed with each group's state so far: ({group key: (_id, accumulators)}
        in slot order, {run token: accumulators} of each group's first run token: ``_slot_tokens``, a
        start for the caller's token cache, one per group)."""
        ids = self._filled_ids()
        n = len(ids)
        self._grow(max(n, 1))
        fields = self.group.fields
        everything = slice(0, n)
        fed = []
        for j, (_, spec) in enumerate(fields):
            state = self._state[j]
            if spec.field is None or spec.name in ("$sum", "$avg"):
                fed.append((state.get("total", np.zeros(0))[:n].tolist(), state["count"][:n].tolist()))
            else:
                fed.append((self._values(j, everything), None))
        table = {}
        accumulators = []
        for i in range(n):
            accs = []
            for j, (_, spec) in enumerate(fields):
                acc = spec.new()
                values, counts = fed[j]
                if spec.field is None:
                    acc.process_many([None] * counts[i])
                elif counts is not None:
                    acc.process_exact_doubles(values[i], counts[i])
                else:
                    acc.process(values[i])
                accs.append(acc)
            table[_key(ids[i])] = (ids[i], accs)
            accumulators.append(accs)
        return table, {token: accumulators[slot] for token, slot in self._slot_tokens().items()}


def _distinct(owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values of ``owners`` ascending, the first position of each), as ``np.unique`` with
    ``return_index`` gives them: by one comparison when they are all one meta's (most batches of a
    one-series query, or every batch of a ``_id`` reading no meta), else by one stable sort."""
    if not len(owners) or not _ANY(owners != owners[0]):
        return owners[:1], np.zeros(len(owners[:1]), dtype=np.int64)
    order = owners.argsort(kind="stable")
    ordered = owners[order]
    heads = np.empty(len(owners), dtype=bool)
    heads[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=heads[1:])
    return ordered[heads], order[heads]


def _shown(idv: Any) -> Any:
    return None if idv is MISSING else idv


def _initial(name: str, time_valued: bool) -> list[tuple[str, Any]]:
    if name in ("$sum", "$avg"):
        return [("total", 0.0), ("count", 0)]
    if name == "$count":
        return [("count", 0)]
    if name == "$max":
        return [("value", _INT_LOW if time_valued else -np.inf)]
    if name == "$min":
        return [("value", _INT_HIGH if time_valued else np.inf)]
    return [("value", 0)]

