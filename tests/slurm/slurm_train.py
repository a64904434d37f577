"""The issue's `srun -n 2 python3 train.py`, reduced to its collective: hvd's
Python package under srun (with or without --mpi=pmix). Prints the same line
as slurm_probe.c, after checking the sums exactly."""
import numpy as np

import hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
x = np.arange(1, 5, dtype=np.float32) * (rank + 1)
y = np.asarray(hvd.allreduce(x, name="slurm.sum", op=hvd.Sum))
want = np.arange(1, 5, dtype=np.float32) * (size * (size + 1) // 2)
assert np.array_equal(y, want), (rank, y, want)
backend = "mpi" if hvd.mpi_enabled() else "gloo" if hvd.gloo_enabled() else "?"
print("rank=%d size=%d local_rank=%d backend=%s elastic=0 sum=%s ok"
      % (rank, size, hvd.local_rank(), backend, ",".join("%g" % v for v in y)), flush=True)
hvd.shutdown()
