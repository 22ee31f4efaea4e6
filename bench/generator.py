"""The TSBS devops "cpu-only" workload (performance.md §1), generated from a seed.

The dataset is kept column-wise and compact: one ``uint8`` array of shape (ticks, hosts, 10) holds every
field value (they are integers in [0, 100]), and a row's time and host follow from its position, because rows
are time-major and host-minor: row ``i`` is tick ``i // scale`` and host ``i % scale``.  Scale 1000 x 1 day
(8.64M rows) therefore costs 86 MB, not 8.64M dicts.

Invariants:
- the same (scale, duration, seed) always yields the same tags and values, on any machine (tags come from
  ``random.Random(seed)``, the random walks from ``numpy.random.Generator(PCG64(seed))``, one draw per tick);
- every field value is ``int(walk)`` where ``walk`` starts uniform in [0, 100) and moves by Normal(0, 1) per
  tick, clamped to [0, 100]; documents carry it as a double.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

START = dt.datetime(2016, 1, 1)  # naive UTC, like the bson codec returns dates
START_MS = 1451606400000  # START in epoch milliseconds
INTERVAL_S = 10
INTERVAL_MS = INTERVAL_S * 1000

FIELDS = (
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
)

# region -> its availability zones, as TSBS's devops generator lists them
REGIONS = {
    "us-east-1": ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"),
    "us-west-1": ("us-west-1a", "us-west-1b"),
    "us-west-2": ("us-west-2a", "us-west-2b", "us-west-2c"),
    "eu-west-1": ("eu-west-1a", "eu-west-1b", "eu-west-1c"),
    "eu-central-1": ("eu-central-1a", "eu-central-1b"),
    "ap-southeast-1": ("ap-southeast-1a", "ap-southeast-1b"),
    "ap-southeast-2": ("ap-southeast-2a", "ap-southeast-2b"),
    "ap-northeast-1": ("ap-northeast-1a", "ap-northeast-1c"),
    "sa-east-1": ("sa-east-1a", "sa-east-1b", "sa-east-1c"),
}
OS_NAMES = ("Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10")
ARCHS = ("x64", "x86")
TEAMS = ("SF", "NYC", "LON", "CHI")
ENVIRONMENTS = ("production", "staging", "test")

TAG_NAMES = (
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
)


def parse_duration(text: str) -> int:
    """'1d', '12h', '30m', '90s' or plain seconds -> seconds (a positive multiple of the 10 s interval)."""
    m = re.fullmatch(r"\s*(\d+)\s*([dhms]?)\s*", text)
    if not m:
        raise ValueError(f"invalid duration {text!r}: use e.g. 1d, 12h, 30m, 600s")
    seconds = int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60, "s": 1, "": 1}[m.group(2)]
    if seconds < INTERVAL_S or seconds % INTERVAL_S:
        raise ValueError(f"duration {text!r} must be a positive multiple of {INTERVAL_S}s")
    return seconds


def make_tags(scale: int, seed: int) -> list[dict[str, str]]:
    """One tag set per host, drawn once from ``random.Random(seed)``; key order is TAG_NAMES."""
    rng = random.Random(seed)
    regions = list(REGIONS)
    hosts = []
    for i in range(scale):
        region = rng.choice(regions)
        hosts.append(
            {
                "hostname": f"host_{i}",
                "region": region,
                "datacenter": rng.choice(REGIONS[region]),
                "rack": str(rng.randrange(100)),
                "os": rng.choice(OS_NAMES),
                "arch": rng.choice(ARCHS),
                "team": rng.choice(TEAMS),
                "service": str(rng.randrange(20)),
                "service_version": str(rng.randrange(2)),
                "service_environment": rng.choice(ENVIRONMENTS),
            }
        )
    return hosts


@dataclass
class Dataset:
    """The generated rows. ``values[tick, host, field]`` is the field value (an integer 0..100)."""

    scale: int
    duration_s: int
    seed: int
    tags: list[dict[str, str]]
    values: np.ndarray = field(repr=False)

    @property
    def ticks(self) -> int:
        return self.values.shape[0]

    @property
    def rows(self) -> int:
        return self.ticks * self.scale

    @property
    def end_ms(self) -> int:
        """Exclusive end of the data: one interval after the last tick."""
        return START_MS + self.ticks * INTERVAL_MS

    def tick_ms(self, tick: int) -> int:
        return START_MS + tick * INTERVAL_MS

    def tick_of_ms(self, ms: int) -> int:
        """The first tick at or after ``ms`` (clamped to [0, ticks])."""
        return min(max(0, -((START_MS - ms) // INTERVAL_MS)), self.ticks)

    def host_index(self, hostname: str) -> int:
        return int(hostname.rsplit("_", 1)[1])

    def iter_rows(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, int, tuple]]:
        """(time_ms, host index, 10 field values as floats) for rows [start, stop) in load order."""
        stop = self.rows if stop is None else stop
        scale = self.scale
        for tick in range(start // scale, -(-stop // scale)):
            block = self.values[tick].tolist()
            ms = START_MS + tick * INTERVAL_MS
            lo = max(start - tick * scale, 0)
            hi = min(stop - tick * scale, scale)
            for h in range(lo, hi):
                yield ms, h, tuple(float(v) for v in block[h])


def generate(scale: int, duration_s: int, seed: int) -> Dataset:
    """Generate the whole dataset (about 1 s per million rows)."""
    if scale < 1:
        raise ValueError("scale must be >= 1")
    ticks = duration_s // INTERVAL_S
    rng = np.random.Generator(np.random.PCG64(seed))
    walk = rng.uniform(0.0, 100.0, size=(scale, len(FIELDS)))
    values = np.empty((ticks, scale, len(FIELDS)), dtype=np.uint8)
    for tick in range(ticks):
        values[tick] = walk  # float -> uint8 truncates toward zero; walk is within [0, 100]
        walk += rng.standard_normal(size=walk.shape)
        np.clip(walk, 0.0, 100.0, out=walk)
    return Dataset(scale, duration_s, seed, make_tags(scale, seed), values)
