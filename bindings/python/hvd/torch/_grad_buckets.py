"""DistributedOptimizer's gradients as views of shared buffers (DDP's
gradient_as_bucket_view), so that shared memory reduces them between the
ranks' buffers: each byte read once and written once instead of passing
through hvd's slots, and adjacent gradients need no fusion copy. With a
comm_hook, _hook_reducer.py lays out each of its buckets the same way (the
bucket's buffer is then the gradients themselves).

The first step runs on the gradients as autograd made them and records the
order their hooks fired. At its end every dense CPU gradient gets a place,
in that order, in one buffer per dtype from hvd_alloc_shared
(hvd.shared_zeros), with its parameter's strides, and p.grad becomes that
view (holding the step's reduced values). Later backward passes accumulate
into it in place. A gradient found elsewhere when its hook fires
(zero_grad(set_to_none=True), or assigned by the user) is copied into its
view first, as DDP does.
"""
import warnings

import torch

from .._errors import HvdError
from .shared import shared_zeros


def _dense_strides(p):
    """Whether p's elements fill p.numel() places without gaps or overlap
    (contiguous, channels_last, ...): then a view with its strides fits."""
    expected = 1
    for stride, size in sorted((st, s) for s, st in zip(p.size(), p.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def eligible(p):
    return (p.requires_grad and p.device.type == "cpu" and p.layout == torch.strided
            and p.numel() > 0 and _dense_strides(p)
            and (p.grad is None or (not p.grad.is_sparse and p.grad.dtype == p.dtype)))


def lay_out(members):
    """One shared buffer holding the gradients of `members` (_Param states
    of one dtype) in that order, each p.grad now a view of it (with the
    step's values); the buffer, or None with a warning where
    hvd_alloc_shared fails (a small /dev/shm)."""
    try:
        flat = shared_zeros(sum(st.param.numel() for st in members),
                            dtype=members[0].param.dtype)
    except HvdError as e:
        warnings.warn("DistributedOptimizer: gradients stay in private memory: %s" % e)
        return None
    offset = 0
    with torch.no_grad():
        for st in members:
            p = st.param
            view = flat.as_strided(p.size(), p.stride(), offset)
            offset += p.numel()
            if p.grad is not None:
                view.copy_(p.grad)
            p.grad = view
            st.view = view
    return flat


class GradBuckets:
    def __init__(self):
        self._order = {}  # id -> _Param state, in the order their hooks first fired
        self.built = False

    def note(self, st):
        """A hook fired (first step only: after build() nothing is recorded)."""
        if not self.built:
            self._order.setdefault(id(st), st)

    def build(self, states):
        """Lay the gradients out in shared buffers, one per dtype."""
        self.built = True
        for st in states:  # parameters whose hooks never fired go last
            self._order.setdefault(id(st), st)
        order, self._order = list(self._order.values()), {}
        by_dtype = {}
        for st in order:
            if eligible(st.param):
                by_dtype.setdefault(st.param.dtype, []).append(st)
        for members in by_dtype.values():
            if lay_out(members) is None:
                return

    @staticmethod
    def adopt(st):
        """p.grad in its view before the allreduce: a no-op while autograd
        accumulates there, else one copy (or zeros for an unused parameter)."""
        view = st.view
        p = st.param
        grad = p.grad
        if grad is view:
            return view
        if grad is not None and (grad.is_sparse or grad.dtype != view.dtype
                                 or grad.shape != view.shape):
            return grad  # replaced by something the view cannot hold
        with torch.no_grad():
            if grad is None:
                view.zero_()
            else:
                view.copy_(grad)
        p.grad = view
        return view
