"""horovod.torch.functions: hvd.torch's broadcast helpers."""
import hvd.torch as _h
from hvd.torch import broadcast_parameters  # noqa: F401

from .mpi_ops import _all, _root

# Horovod names the object collectives after the object's type when no name
# is given, so they match across ranks even when the ranks' earlier unnamed
# collectives differ (e.g. one that failed on some ranks only).


def broadcast_object(obj, root_rank=0, name=None, process_set=_all):
    """hvd.torch.broadcast_object with Horovod's global root rank."""
    name = type(obj).__name__ if name is None else name
    return _h.broadcast_object(obj, _root(root_rank, process_set), name, process_set)


def allgather_object(obj, name=None):
    name = type(obj).__name__ if name is None else name
    return _h.allgather_object(obj, name)


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """hvd.torch.broadcast_optimizer_state; `model` (Horovod's, for
    optimizers whose state refers to the model) is not needed."""
    return _h.broadcast_optimizer_state(optimizer, root_rank)
