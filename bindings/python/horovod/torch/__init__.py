"""horovod.torch: hvd.torch under Horovod's names and signatures
(docs/migrating-from-horovod.md)."""
from hvd.torch import *  # noqa: F401,F403
from hvd.torch import (Compression, DistributedOptimizer, SyncBatchNorm,  # noqa: F401
                       broadcast_parameters)

from . import elastic  # noqa: F401
from .functions import allgather_object, broadcast_object, broadcast_optimizer_state  # noqa: F401,E501
from .mpi_ops import *  # noqa: F401,F403
from .mpi_ops import (Adasum, Average, HorovodInternalError, Max, Min, Product,  # noqa: F401
                      ProcessSet, Sum, add_process_set, allgather, allgather_async, allreduce,
                      allreduce_, allreduce_async, allreduce_async_, alltoall, alltoall_async,
                      barrier, broadcast, broadcast_, broadcast_async, broadcast_async_,
                      ccl_built, cross_rank, cross_size, cuda_built, ddl_built,
                      global_process_set, gloo_built, gloo_enabled, grouped_allgather,
                      grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
                      grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter,
                      grouped_reducescatter_async, init, is_initialized, join, local_rank,
                      local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                      poll, rank, reducescatter, reducescatter_async, remove_process_set,
                      rocm_built, shutdown, size, sparse_allreduce_async, start_timeline,
                      stop_timeline, synchronize)
