"""`import hvd` from an installed prefix, with numpy and torch: exact
allreduce/allgather results per rank, and proof that the package and libhvd
both come from the prefix (CMAKE_PREFIX_PATH)."""
import os

import numpy as np
import torch

import hvd
import hvd.torch

prefix = os.path.realpath(os.environ["CMAKE_PREFIX_PATH"]) + os.sep
assert os.path.realpath(hvd.__file__).startswith(prefix), hvd.__file__
assert os.path.realpath(hvd.library_path()).startswith(prefix), hvd.library_path()
with open(os.path.join(prefix, "share", "hvd", "hvd.cdef")) as f:
    assert hvd.ffi.cdef() == f.read(), "hvd.ffi.cdef() differs from share/hvd/hvd.cdef"

hvd.init()
r, n = hvd.rank(), hvd.size()
total = n * (n - 1) // 2
got = hvd.allreduce(np.arange(4, dtype=np.float64) + r, op=hvd.Sum)
assert got.tolist() == [n * i + total for i in range(4)], got
got = hvd.allreduce(torch.full((3,), float(r + 1)), op=hvd.Average)
assert isinstance(got, torch.Tensor) and got.tolist() == [(n + 1) / 2] * 3, got
got = hvd.allgather(torch.tensor([r, 10 * r], dtype=torch.int32))
assert got.tolist() == [v for k in range(n) for v in (k, 10 * k)], got
assert callable(hvd.torch.DistributedOptimizer)
hvd.shutdown()
print("rank %d of %d: python ok (hvd %s from %s)" % (r, n, hvd.__version__, os.path.dirname(hvd.__file__)))
