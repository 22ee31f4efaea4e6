"""$_internalUnpackBucket / $_unpackBucket stages (placeholder; filled in by the next commit)."""

from __future__ import annotations

EXTRA_STAGES: dict = {}
