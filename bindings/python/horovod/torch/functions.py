"""horovod.torch.functions: hvd.torch's broadcast helpers."""
from hvd.torch import allgather_object, broadcast_object, broadcast_parameters  # noqa: F401
import hvd.torch as _h


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """hvd.torch.broadcast_optimizer_state; `model` (Horovod's, for
    optimizers whose state refers to the model) is not needed."""
    return _h.broadcast_optimizer_state(optimizer, root_rank)
