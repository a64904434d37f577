"""horovod.torch.mpi_ops: hvd.torch's collectives under Horovod's
signatures.

Most names are hvd.torch's own. Where Horovod's positional order differs
(allreduce and its forms take `average` second; reducescatter takes
`process_set` before the scale factors; join takes a device), a one-line
adapter passes the arguments to hvd.torch by keyword, so Horovod's calls
such as allreduce_(t, None, "name", hvd.Sum) mean what they meant.

Broadcast roots are global ranks, as in Horovod; hvd numbers the root
within the process set, so _root translates.

Gradients follow Horovod's conventions where they differ from hvd.torch's
(which differentiates the sum of every rank's loss): allgather and
broadcast average the gradients over the set (hvd.torch sums them), and
reducescatter's gradient is n times hvd.torch's. _ScaleGrad applies that
factor to the input's gradient; the collectives are hvd.torch's."""
import hvd.torch as _h
import torch
from hvd.torch import (Adasum, Average, Compression, Handle, HorovodInternalError,  # noqa: F401
                       Max, Min, Product, ProcessSet, Sum, add_process_set,
                       allgather_async, alltoall, alltoall_async, barrier, ccl_built, cross_rank,
                       cross_size, cuda_built, ddl_built, global_process_set, gloo_built,
                       gloo_enabled, grouped_allgather_async, init,
                       is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
                       mpi_enabled, mpi_threads_supported, nccl_built, poll, rank,
                       remove_process_set, rocm_built, shutdown, size, sparse_allreduce_async,
                       start_timeline, stop_timeline, synchronize)

_all = global_process_set


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; backward multiplies the gradient by `factor`."""

    @staticmethod
    def forward(ctx, tensor, factor):
        ctx.factor = factor
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


def _set_size(process_set):
    return _h.size() if process_set.process_set_id == 0 else process_set.size()


def _scaled(tensors, factor):
    """tensors whose gradient is `factor` times what flows back into them
    (unchanged when no gradient is wanted)."""
    if not torch.is_grad_enabled() or factor == 1:
        return tensors
    return [_ScaleGrad.apply(t, factor) if t.requires_grad else t for t in tensors]


def allgather(tensor, name=None, process_set=_all):
    (tensor,) = _scaled([tensor], 1.0 / _set_size(process_set))
    return _h.allgather(tensor, name=name, process_set=process_set)


def grouped_allgather(tensors, name=None, process_set=_all):
    tensors = _scaled(list(tensors), 1.0 / _set_size(process_set))
    return _h.grouped_allgather(tensors, name=name, process_set=process_set)


def _root(root_rank, process_set):
    """Horovod's global root rank as hvd's rank within `process_set`."""
    if process_set.process_set_id == 0:
        return root_rank
    try:
        return process_set.ranks.index(int(root_rank))
    except ValueError:
        raise _h.HvdInvalidArgument("broadcast: root rank %s is not in %r"
                                    % (root_rank, process_set)) from None


def broadcast(tensor, root_rank, name=None, process_set=_all):
    (tensor,) = _scaled([tensor], 1.0 / _set_size(process_set))
    return _h.broadcast(tensor, _root(root_rank, process_set), name=name,
                        process_set=process_set)


def broadcast_(tensor, root_rank, name=None, process_set=_all):
    return _h.broadcast_(tensor, _root(root_rank, process_set), name=name,
                         process_set=process_set)


def broadcast_async(tensor, root_rank, name=None, process_set=_all):
    return _h.broadcast_async(tensor, _root(root_rank, process_set), name=name,
                              process_set=process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=_all):
    return _h.broadcast_async_(tensor, _root(root_rank, process_set), name=name,
                               process_set=process_set)


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=_all):
    return _h.allreduce(tensor, name=name, op=op, prescale_factor=prescale_factor,
                        postscale_factor=postscale_factor, process_set=process_set,
                        average=average, compression=compression)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=_all):
    return _h.allreduce_async(tensor, name=name, op=op, prescale_factor=prescale_factor,
                              postscale_factor=postscale_factor, process_set=process_set,
                              average=average)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=_all):
    return _h.allreduce_(tensor, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, process_set=process_set,
                         average=average)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=_all):
    return _h.allreduce_async_(tensor, name=name, op=op, prescale_factor=prescale_factor,
                               postscale_factor=postscale_factor, process_set=process_set,
                               average=average)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce(tensors, name=name, op=op, prescale_factor=prescale_factor,
                                postscale_factor=postscale_factor, process_set=process_set,
                                average=average, compression=compression)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce_async(tensors, name=name, op=op,
                                      prescale_factor=prescale_factor,
                                      postscale_factor=postscale_factor,
                                      process_set=process_set, average=average)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce_(tensors, name=name, op=op, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor, process_set=process_set,
                                 average=average)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce_async_(tensors, name=name, op=op,
                                       prescale_factor=prescale_factor,
                                       postscale_factor=postscale_factor,
                                       process_set=process_set, average=average)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=_all, prescale_factor=1.0, postscale_factor=1.0):
    (tensor,) = _scaled([tensor], _set_size(process_set))
    return _h.reducescatter(tensor, name=name, op=op, prescale_factor=prescale_factor,
                            postscale_factor=postscale_factor, process_set=process_set,
                            compression=compression)


def reducescatter_async(tensor, name=None, op=Average, process_set=_all, prescale_factor=1.0,
                        postscale_factor=1.0):
    return _h.reducescatter_async(tensor, name=name, op=op, prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor, process_set=process_set)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=_all, prescale_factor=1.0, postscale_factor=1.0):
    tensors = _scaled(list(tensors), _set_size(process_set))
    return _h.grouped_reducescatter(tensors, name=name, op=op,
                                    prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor, process_set=process_set,
                                    compression=compression)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=_all,
                                prescale_factor=1.0, postscale_factor=1.0):
    return _h.grouped_reducescatter_async(tensors, name=name, op=op,
                                          prescale_factor=prescale_factor,
                                          postscale_factor=postscale_factor,
                                          process_set=process_set)


def join(device=-1):
    """The rank that joined last. `device` (Horovod's CUDA device for the
    zeros it feeds) is not needed: hvd joins on the host."""
    return _h.join()
