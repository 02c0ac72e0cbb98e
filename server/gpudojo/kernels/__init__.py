"""The kernel workbench: compile CUDA C and numba kernels, report resources, SASS and
occupancy, and run kernels on a GPU or in numba's simulator (always in child processes)."""
