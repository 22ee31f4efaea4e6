"""The MongoDB query language over in-memory documents (see README.md). Import the submodules."""
