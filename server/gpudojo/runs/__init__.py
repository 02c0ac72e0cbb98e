"""One-click labs: lab manifests, the run service (torchrun or python, a queue, process
trees, per-rank streams, root causes, checks) and its SQLite store."""
