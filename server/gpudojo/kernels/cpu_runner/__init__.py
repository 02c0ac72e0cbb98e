"""Runs a learner's CUDA C on the CPU when there is no GPU: g++ with gpudojo_cuda.h, each
block's threads as fibers (launcher.cpp), guard pages around every array.

Used by the kernel-run child process only; the server imports nothing from here but MODE_NOTE.
"""

# Shown with every result of the emulator, errors included (imported by the server: keep this
# module free of heavy imports).
MODE_NOTE = (
    "CPU emulation: results are exact, times are not a GPU's. Each block's threads run as fibers on one "
    "CPU core, so barriers and warp shuffles (warps of 32 by thread id) behave as on a GPU; the memory-access "
    "report counts sectors and bank conflicts per warp instruction, but caches, occupancy and races between "
    "blocks are not shown."
)
