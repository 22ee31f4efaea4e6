"""The read interface of a bucket: what every read path asks of a bucket, stored or in memory.

Every read path — the generic unpack (``view.py``), the columnar ``$group`` (``groupbatch.py``,
``densecolumns.py``), lastpoint (``lastpoint.py``), reads of ``system.buckets`` (``scan.py``) — takes
buckets as :class:`BucketView` objects and never asks where they come from. The implementations:

- ``stored.StoredBucket``: a packed record copied out of a short read transaction, decoded lazily;
- ``stored.DocumentBucket``: an already decoded v1 document (a bucket that left memory mid-read, a
  bucket document given by a client);
- ``bucketview.LiveBucket``: the committed rows of an in-memory bucket, read from its columns.

They declare nothing: the protocol is structural, and ``_implementations`` below makes mypy check that
each of them satisfies it (``make lint``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from tidemark.timeseries.bucketcache import CachedBucket
    from tidemark.timeseries.bucketview import LiveBucket
    from tidemark.timeseries.rowbson import Rows
    from tidemark.timeseries.stored import DocumentBucket, StoredBucket


class BucketView(Protocol):
    """One bucket as a read sees it (its rows fixed when the read took it)."""

    @property
    def id(self) -> Any:
        """The bucket's ``_id`` (an ObjectId whose first 4 bytes are its start time)."""

    @property
    def cached(self) -> CachedBucket | None:
        """The ``bucketcache`` entry whose memos depend only on the stored bytes (None when the bucket
        is not a stored record, or caching is off)."""

    def summary(self) -> dict[str, Any]:
        """``{_id, control, meta?}``: what bucket predicates and lastpoint read (shared: do not mutate)."""

    def head(self) -> dict[str, Any]:
        """``{_id, meta?}``: what a bucket predicate on the meta field alone reads — for an in-memory
        bucket without working out its control (a read of one series among many in-memory buckets
        tests each one's meta; shared: do not mutate)."""

    def time_range(self, time_field: str) -> tuple[int | None, int | None]:
        """``control.min`` and ``control.max`` of the time field in ms (None: not a date), as
        ``summary`` holds them — for an in-memory bucket from its time column alone."""

    def column_names(self) -> list[str]:
        """The ``data`` field names, in bucket order."""

    def dense(self, name: str) -> tuple[int, np.ndarray] | None:
        """(BSON type, read-only NumPy values) of a column every row holds with one fixed-width type,
        else None."""

    def unpack(self, fields: Iterable[str] | None = None, positions: np.ndarray | None = None, *,
               time_field: str, meta_field: str | None) -> Rows:
        """The measurements (``rowbson``: as dicts, or as their BSON documents): the time field first,
        then the meta field (``meta_field``, when the bucket has a meta), then the columns every row
        holds, then the others; only ``fields`` when given, only the rows at ``positions`` (ascending)
        when given."""

    def document(self) -> dict[str, Any]:
        """The whole v1 bucket document."""

    def derived(self) -> dict[str, Any]:
        """A memo for values derived from exactly these rows (shared by reads of the same content)."""


if TYPE_CHECKING:
    def _implementations(live: LiveBucket, stored: StoredBucket, document: DocumentBucket) -> list[BucketView]:
        """Never called: mypy checks here that every implementation satisfies the protocol."""
        return [live, stored, document]
