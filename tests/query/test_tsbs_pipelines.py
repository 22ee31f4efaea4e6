"""Acceptance 3: the TSBS devops cpu-only query pipelines (spec/performance.md §1) give the same results
as a plain Python computation over the same rows.

The rows come from a small seeded generator of the TSBS shape written here (hosts with fixed tags, one
row per host every 10 s, ten random-walk usage metrics truncated to integers but stored as doubles).
"""

import datetime as dt
import random
from collections import defaultdict

import pytest

from tidemark.query.pipeline import run_pipeline

METRICS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq",
           "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
REGIONS = {"us-east-1": "abc", "us-west-1": "ab", "eu-west-1": "abc", "ap-southeast-2": "ab"}
START = dt.datetime(2016, 1, 1)
HOSTS = 9
DURATION = dt.timedelta(hours=13)
STEP = dt.timedelta(seconds=10)


def generate_rows(seed=7):
    rng = random.Random(seed)
    tags = []
    for i in range(HOSTS):
        region = rng.choice(sorted(REGIONS))
        tags.append({"hostname": f"host_{i}", "region": region, "datacenter": region + rng.choice(REGIONS[region]),
                     "rack": str(rng.randrange(100)), "os": rng.choice(["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]),
                     "arch": rng.choice(["x64", "x86"]), "team": rng.choice(["SF", "NYC", "LON", "CHI"]),
                     "service": str(rng.randrange(20)), "service_version": str(rng.randrange(2)),
                     "service_environment": rng.choice(["production", "staging", "test"])})
    state = [[rng.uniform(0, 100) for _ in METRICS] for _ in range(HOSTS)]
    rows = []
    t = START
    while t < START + DURATION:
        for h in range(HOSTS):
            doc = {"measurement": "cpu", "time": t}
            for m, name in enumerate(METRICS):
                state[h][m] = min(100.0, max(0.0, state[h][m] + rng.gauss(0, 1)))
                doc[name] = float(int(state[h][m]))
            doc["tags"] = dict(tags[h])
            rows.append(doc)
        t += STEP
    return rows


@pytest.fixture(scope="module")
def rows():
    return generate_rows()


@pytest.fixture()
def rng():
    return random.Random(42)


def window(rng, hours):
    span = int((DURATION - dt.timedelta(hours=hours)) / STEP)
    start = START + STEP * rng.randrange(span)
    return start, start + dt.timedelta(hours=hours)


def hosts(rng, n):
    return [f"host_{i}" for i in rng.sample(range(HOSTS), n)]


def run(pipeline, rows):
    return list(run_pipeline(pipeline, iter(rows)))


def trunc(t, unit):
    return t.replace(second=0, microsecond=0) if unit == "minute" else t.replace(minute=0, second=0, microsecond=0)


def naive_max_by_time(rows, start, end, names, metrics, unit):
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if start <= r["time"] < end and r["tags"]["hostname"] in names:
            for m in metrics:
                groups[trunc(r["time"], unit)][m].append(r[m])
    return [{"_id": k, **{f"max_{m}": max(groups[k][m]) for m in metrics}} for k in sorted(groups)]


def groupby_pipeline(start, end, names, metrics, unit):
    return [{"$match": {"time": {"$gte": start, "$lt": end}, "tags.hostname": {"$in": names}}},
            {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": unit}},
                        **{f"max_{m}": {"$max": f"${m}"} for m in metrics}}},
            {"$sort": {"_id": 1}}]


@pytest.mark.parametrize("name,hours,n_hosts,n_metrics,unit", [
    ("single-groupby-1-1-1", 1, 1, 1, "minute"),
    ("single-groupby-5-8-1", 1, 8, 5, "minute"),
    ("cpu-max-all-8", 8, 8, 10, "hour"),
])
def test_single_groupby_family(rows, rng, name, hours, n_hosts, n_metrics, unit):
    for _ in range(3):
        start, end = window(rng, hours)
        names = hosts(rng, n_hosts)
        metrics = METRICS[:n_metrics]
        got = run(groupby_pipeline(start, end, names, metrics, unit), rows)
        assert got == naive_max_by_time(rows, start, end, names, metrics, unit)
        buckets = 60 * hours if unit == "minute" else hours
        assert len(got) in (buckets, buckets + 1)  # a window not aligned to the unit touches one more bucket


@pytest.mark.parametrize("n_metrics", [1, 10], ids=["double-groupby-1", "double-groupby-all"])
def test_double_groupby(rows, rng, n_metrics):
    start, end = window(rng, 12)
    metrics = METRICS[:n_metrics]
    pipeline = [{"$match": {"time": {"$gte": start, "$lt": end}}},
                {"$group": {"_id": {"time": {"$dateTrunc": {"date": "$time", "unit": "hour"}},
                                    "hostname": "$tags.hostname"},
                            **{f"avg_{m}": {"$avg": f"${m}"} for m in metrics}}},
                {"$sort": {"_id.time": 1, "_id.hostname": 1}}]
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if start <= r["time"] < end:
            for m in metrics:
                groups[(trunc(r["time"], "hour"), r["tags"]["hostname"])][m].append(r[m])
    expected = [{"_id": {"time": t, "hostname": h}, **{f"avg_{m}": sum(v[m]) / len(v[m]) for m in metrics}}
                for (t, h), v in sorted(groups.items())]
    assert run(pipeline, rows) == expected
    assert len(expected) in (12 * HOSTS, 13 * HOSTS)


def test_high_cpu_1(rows, rng):
    start, end = window(rng, 12)
    for h in [f"host_{i}" for i in range(HOSTS)]:
        pipeline = [{"$match": {"time": {"$gte": start, "$lt": end}, "usage_user": {"$gt": 90.0},
                                "tags.hostname": {"$in": [h]}}}]
        expected = [r for r in rows if start <= r["time"] < end and r["usage_user"] > 90.0 and r["tags"]["hostname"] == h]
        assert run(pipeline, rows) == expected


def test_lastpoint(rows):
    pipeline = [{"$sort": {"tags.hostname": 1, "time": -1}},
                {"$group": {"_id": "$tags.hostname", "time": {"$first": "$time"},
                            **{m: {"$first": f"${m}"} for m in METRICS}}}]
    latest = {}
    for r in rows:
        h = r["tags"]["hostname"]
        if h not in latest or r["time"] > latest[h]["time"]:
            latest[h] = r
    expected = [{"_id": h, "time": latest[h]["time"], **{m: latest[h][m] for m in METRICS}} for h in sorted(latest)]
    assert run(pipeline, rows) == expected


def test_groupby_orderby_limit(rows, rng):
    _, end = window(rng, 1)
    pipeline = [{"$match": {"time": {"$lt": end}}},
                {"$group": {"_id": {"$dateTrunc": {"date": "$time", "unit": "minute"}}, "max_value": {"$max": "$usage_user"}}},
                {"$sort": {"_id": -1}}, {"$limit": 5}]
    groups = defaultdict(list)
    for r in rows:
        if r["time"] < end:
            groups[trunc(r["time"], "minute")].append(r["usage_user"])
    expected = [{"_id": k, "max_value": max(groups[k])} for k in sorted(groups, reverse=True)[:5]]
    assert run(pipeline, rows) == expected
