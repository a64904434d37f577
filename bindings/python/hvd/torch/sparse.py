"""Allreduce of sparse torch tensors (COO), as Horovod does it: every rank's
indices and values are allgathered (ranks may hold different numbers of
entries) and the result is the coalesced sum, divided by the number of
ranks for Average. nn.Embedding(sparse=True) produces such gradients.
"""
import torch

from .. import ops
from .._errors import HvdInvalidArgument
from ..process_sets import global_process_set


class SparseHandle:
    """Handle of sparse_allreduce_async: wait() -> the reduced sparse tensor;
    calling the handle waits too (Horovod's handles are callables)."""

    def __init__(self, indices, values, shape, divisor):
        self._indices, self._values = indices, values
        self._shape, self._divisor = shape, divisor
        self._result = None

    def poll(self):
        return self._indices.poll() and self._values.poll()

    def wait(self, timeout=None):
        if self._result is None:
            values = self._values.wait(timeout)
            indices = self._indices.wait(timeout)  # (nnz over all ranks, sparse_dim)
            if self._divisor != 1:
                values = values / self._divisor
            self._result = torch.sparse_coo_tensor(indices.t(), values, self._shape).coalesce()
        return self._result

    def __call__(self):
        return self.wait()

    def release(self):
        self._indices.release()
        self._values.release()


def sparse_allreduce_async(tensor, name=None, op=None, process_set=global_process_set,
                           average=None):
    """Reduce a sparse COO tensor over the ranks (op Average, the default, or
    Sum); returns a handle whose wait() gives a new coalesced sparse tensor."""
    op = ops.resolve_op(op, average)
    if op not in (ops.Average, ops.Sum):
        raise HvdInvalidArgument("sparse_allreduce_async supports op=Average and op=Sum only")
    if not tensor.is_sparse:
        raise HvdInvalidArgument("sparse_allreduce_async takes a sparse COO tensor, not %s"
                                 % tensor.layout)
    t = tensor.detach().coalesce()
    # allgather concatenates along dimension 0: indices go as (nnz, sparse_dim).
    indices = ops.allgather_async(t.indices().t().contiguous(),
                                  name=None if name is None else name + ".indices",
                                  process_set=process_set)
    values = ops.allgather_async(t.values().contiguous(),
                                 name=None if name is None else name + ".values",
                                 process_set=process_set)
    divisor = ops._set_size(process_set) if op == ops.Average else 1
    return SparseHandle(indices, values, t.shape, divisor)


def sparse_allreduce(tensor, name=None, op=None, process_set=global_process_set, average=None):
    """Blocking sparse_allreduce_async."""
    return sparse_allreduce_async(tensor, name, op, process_set, average).wait()
