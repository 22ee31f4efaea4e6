"""Documents <-> durable LMDB records; see README.md. Import submodules directly (storage.engine,
tidemark.storage.keys, tidemark.storage.errors): importing this package loads nothing else."""
