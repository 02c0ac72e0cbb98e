"""The environment the exercise service gives the check process (gpudojo.worker.checkkit
reads it). A module of its own so that the server names these without importing pytest."""

ENV_WORK = "GPUDOJO_EXERCISE_WORK"  # the scratch copy of the learner's folder
ENV_RESULTS_FD = "GPUDOJO_EXERCISE_RESULTS_FD"  # the pipe result lines go to (inherited by pytest only)
ENV_MANIFEST = "GPUDOJO_EXERCISE_MANIFEST"  # the exercise.toml
ENV_GPUS = "GPUDOJO_CHECK_GPUS"  # GPUs this machine has for the learner's code (0: CPU variant)
ENV_SCRATCH = "GPUDOJO_EXERCISE_SCRATCH"  # the folder the learner's programs see (copy, HOME, TMPDIR)
ENV_SANDBOX = "GPUDOJO_CHECK_SANDBOX"  # JSON: bwrap, the folders to hide and the checks folder; absent: none

# What a learner program's environment never carries (checkkit strips these prefixes).
CHECK_PREFIXES = ("GPUDOJO_EXERCISE", "GPUDOJO_CHECK_", "PYTEST_", "COV_")
