"""hvd for PyTorch: the collectives (on torch tensors, results as torch
tensors, in-place forms ending in `_`), DistributedOptimizer and the
broadcast helpers for model and optimizer state.

    import torch, hvd.torch as hvd
    hvd.init()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1 * hvd.size()),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
"""
from .. import *  # noqa: F401,F403  the whole hvd API, torch-aware already
from .. import Handle, ProcessSet, global_process_set  # noqa: F401
from .compression import Compression, Compressor  # noqa: F401
from .functions import broadcast_optimizer_state, broadcast_parameters  # noqa: F401
from .optimizer import DistributedOptimizer  # noqa: F401
from .sparse import sparse_allreduce, sparse_allreduce_async  # noqa: F401
