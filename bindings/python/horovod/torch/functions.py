"""horovod.torch.functions: hvd.torch's broadcast helpers."""
import hvd.torch as _h
from hvd.torch import allgather_object, broadcast_parameters  # noqa: F401

from .mpi_ops import _all, _root


def broadcast_object(obj, root_rank=0, name=None, process_set=_all):
    """hvd.torch.broadcast_object with Horovod's global root rank."""
    return _h.broadcast_object(obj, _root(root_rank, process_set), name, process_set)


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """hvd.torch.broadcast_optimizer_state; `model` (Horovod's, for
    optimizers whose state refers to the model) is not needed."""
    return _h.broadcast_optimizer_state(optimizer, root_rank)
