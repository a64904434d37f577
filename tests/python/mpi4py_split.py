"""mpi4py program that hands hvd a sub-communicator (run with mpirun -np 4).

COMM_WORLD is split into two halves; each half initialises hvd on its own
communicator and runs allreduces independent of the other half, while
mpi4py keeps working beside hvd. Exits non-zero on any wrong value.
"""
import sys

import numpy as np
from mpi4py import MPI

import hvd

world = MPI.COMM_WORLD
assert world.Get_size() == 4, "run with mpirun -np 4"
color = world.Get_rank() // 2  # ranks 0,1 -> half 0; ranks 2,3 -> half 1
half = world.Split(color, world.Get_rank())

hvd.init(comm=half)
errors = []
if hvd.size() != 2 or hvd.rank() != world.Get_rank() % 2:
    errors.append(f"rank/size {hvd.rank()}/{hvd.size()} in half {color}")

for step in range(50):
    x = np.full(8, world.Get_rank() + 1 + step, dtype=np.float32)
    got = hvd.allreduce(x, op=hvd.Sum, name=f"half.{step}")
    members = [2 * color + 1, 2 * color + 2]
    expect = sum(m + step for m in members)
    if not np.all(got == expect):
        errors.append(f"step {step}: got {got[0]}, expected {expect}")
        break

# mpi4py still works beside hvd, on the world and on the half.
total = world.allreduce(world.Get_rank(), op=MPI.SUM)
if total != 6:
    errors.append(f"mpi4py world allreduce gave {total}")
if half.allreduce(1, op=MPI.SUM) != 2:
    errors.append("mpi4py half allreduce failed")

hvd.shutdown()
half.Free()
if errors:
    print(f"rank {world.Get_rank()}: FAILED: {errors}", flush=True)
    sys.exit(1)
print(f"rank {world.Get_rank()}: half {color} OK", flush=True)
