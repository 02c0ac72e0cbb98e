"""The seven steps of `make gpu-check` (bench/gpu_check.py runs them; bench/GPU_CHECK.md says what
each proves). One module a step, and `step` for what every step uses."""
