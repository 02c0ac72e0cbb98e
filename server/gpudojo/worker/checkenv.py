"""The environment the exercise service gives the check process (gpudojo.worker.checkkit
reads it). A module of its own so that the server names these without importing pytest."""

ENV_WORK = "GPUDOJO_EXERCISE_WORK"  # the scratch copy of the learner's folder
ENV_RESULTS = "GPUDOJO_EXERCISE_RESULTS"  # where result lines go
ENV_MANIFEST = "GPUDOJO_EXERCISE_MANIFEST"  # the exercise.toml
ENV_GPUS = "GPUDOJO_CHECK_GPUS"  # GPUs this machine has for the learner's code (0: CPU variant)
ENV_SCRATCH = "GPUDOJO_EXERCISE_SCRATCH"  # the folder the learner's programs see (copy, HOME, TMPDIR)
