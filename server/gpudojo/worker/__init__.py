"""Child-process entry points: everything that runs compilers, learners' code or CUDA.

The server never imports these modules; it starts them with ``python -m``.
"""
