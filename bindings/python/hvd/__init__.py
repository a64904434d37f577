"""hvd — collectives for data-parallel deep learning (Python binding).

    import hvd
    hvd.init()
    avg = hvd.allreduce(np.ones(4) * hvd.rank())   # numpy, torch or DLPack

The collectives take numpy arrays, torch tensors or any `__dlpack__` object
without copying and return results in the caller's type. Errors are raised
as hvd.HvdError subclasses carrying hvd's message. For PyTorch training see
hvd.torch (DistributedOptimizer, broadcast_parameters, ...).
"""
import os as _os

from . import ffi  # noqa: F401  (hvd.ffi.cdef(): declarations for cffi)
from . import hvd_c as _c
from ._errors import (HvdAlreadyInitializedError, HvdBackendError, HvdError, HvdInternalError,
                      HvdInvalidArgument, HvdMismatchError, HvdNotInitializedError,
                      HvdPeerLostError, HvdShutdownError, HvdTimeoutError, HvdUnsupportedError)
from ._handle import Handle
from .basics import dump_flight_record, get_stats
from .basics import (cross_rank, cross_size, cuda_built, gloo_built, gloo_enabled, init,
                     is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
                     mpi_enabled, mpi_threads_supported, nccl_built, rank, shutdown, size,
                     start_timeline, stop_timeline)
from .objects import allgather_object, broadcast_object
from .ops import (Average, Max, Min, Product, Sum, allgather, allgather_async, allreduce,
                  allreduce_, allreduce_async, allreduce_async_, alltoall, alltoall_async,
                  barrier, barrier_async, broadcast, broadcast_, broadcast_async,
                  broadcast_async_, grouped_allreduce, grouped_allreduce_async, join, join_async,
                  poll, reducescatter, reducescatter_async, synchronize)
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send  # point to point
from .process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from .ops import grouped_allreduce_, grouped_allreduce_async_  # in-place forms (Horovod's)
from .ops import (grouped_allgather, grouped_allgather_async, grouped_reducescatter,  # noqa: F401
                  grouped_reducescatter_async)

# Adaptive summation (docs/python.md): allreduce of floating-point CPU
# tensors over any number of ranks.
Adasum = _c.HVD_OP_ADASUM

__version__ = _c.hvd_version()


def library_path():
    """Path of the libhvd shared library this package loaded (for ctypes/cffi):
    the copy inside the package (build tree, wheel) or the prefix's libhvd
    (cmake --install, python3-hvd), wherever its extension's RPATH led."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and _os.path.basename(fields[5].rstrip("\n")).startswith("libhvd.so"):
                return fields[5].rstrip("\n")
    return None
