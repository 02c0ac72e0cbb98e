"""Memory timelines: captures (CUDA snapshots, CPU profiler timelines), their analysis in a
child process (intervals, peak, OOMs, windows, diffs), and the training-memory estimator."""
