"""Documents <-> durable LMDB records; see README.md. Import submodules directly (storage.engine,
storage.keys, storage.errors): importing this package loads nothing else."""
