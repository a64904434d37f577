"""hvd for PyTorch: the collectives (on torch tensors, results as torch
tensors, in-place forms ending in `_`; allreduce, grouped_allreduce,
allgather, broadcast, alltoall and reducescatter differentiable),
DistributedOptimizer (with DDP's communication hooks: hvd.comm_hooks),
ZeroRedundancyOptimizer, SyncBatchNorm, the broadcast helpers for model and
optimizer state, and hvd.torch.elastic (TorchState, ElasticSampler, run).

    import torch, hvd.torch as hvd
    hvd.init()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size()),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
"""
from .. import *  # noqa: F401,F403  the whole hvd API, torch-aware already
from .. import Handle, ProcessSet, global_process_set  # noqa: F401
from . import elastic  # noqa: F401  hvd.elastic.TorchState after `import hvd.torch as hvd`
from . import comm_hooks  # noqa: F401  hvd.comm_hooks.powerSGD_hook, ...
from .compression import Compression, Compressor  # noqa: F401
from .functions import (allgather, allreduce, alltoall, broadcast,  # noqa: F401
                        broadcast_optimizer_state, broadcast_parameters, grouped_allgather,
                        grouped_allgather_async, grouped_allreduce, grouped_reducescatter,
                        grouped_reducescatter_async, reducescatter)
from .optimizer import DistributedOptimizer  # noqa: F401
from .shared import shared_zeros  # noqa: F401
from .sparse import sparse_allreduce, sparse_allreduce_async  # noqa: F401
from .sync_batch_norm import SyncBatchNorm  # noqa: F401
from .zero import ZeroRedundancyOptimizer  # noqa: F401

# Horovod's names for what hvd has under its own or not at all, so ported
# scripts run unchanged (docs/migrating-from-horovod.md).
HorovodInternalError = HvdInternalError  # noqa: F405


def ddl_built():
    """False: hvd has no IBM DDL backend."""
    return False


def ccl_built():
    """False: hvd has no oneCCL backend."""
    return False


def rocm_built():
    """False: hvd is not built for ROCm."""
    return False
