"""The ``tidemark`` import name: a home for what applications import from Tidemark.

The server itself lives in the ``server``, ``protocol`` and ``storage`` packages (that layout is
fixed); this package only holds :mod:`tidemark.testing`, the pytest plugin that runs a throwaway
Tidemark server inside the test process.
"""
