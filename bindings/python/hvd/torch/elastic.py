"""TorchState: a model and optimizer as elastic state (hvd.elastic).

    state = hvd.torch.elastic.TorchState(model, optimizer, epoch=0, batch=0)

save() keeps in-memory copies of model.state_dict() and
optimizer.state_dict(); restore() loads them back; sync() broadcasts the
parameters and optimizer state from rank 0 (broadcast_parameters /
broadcast_optimizer_state) plus the extra values like ObjectState.
"""
import copy

from ..elastic.state import ObjectState
from .functions import broadcast_optimizer_state, broadcast_parameters


class TorchState(ObjectState):
    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model = model
        self.optimizer = optimizer
        self._saved_model = None
        self._saved_optimizer = None
        super().__init__(**kwargs)

    def save(self):
        if self.model is not None:
            self._saved_model = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
        super().save()

    def restore(self):
        if self.model is not None and self._saved_model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None and self._saved_optimizer is not None:
            self.optimizer.load_state_dict(self._saved_optimizer)
            _forget_pending_gradients(self.optimizer)
        super().restore()

    def sync(self):
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            _forget_pending_gradients(self.optimizer)
            broadcast_optimizer_state(self.optimizer, root_rank=0)
        super().sync()
        # Every rank now holds rank 0's state: that is the new commit.
        self.save()


def _forget_pending_gradients(optimizer):
    """A DistributedOptimizer interrupted mid-step holds handles of the old
    world's allreduces; drop them so the next backward starts clean."""
    if not hasattr(optimizer, "_hvd_synchronize_handles"):
        return
    optimizer._handles.clear()
    for p in optimizer._delay:
        optimizer._delay[p] = optimizer.backward_passes_per_step
    optimizer._synchronized = False
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None
