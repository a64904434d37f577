"""Collective operations on numpy arrays, torch tensors and DLPack objects.

Every collective has a blocking form and an `_async` form returning a
Handle; results come back in the caller's type. Forms ending in `_` work in
place on the caller's tensor and return it.

Allreduces of contiguous CPU torch tensors, alone or grouped, take the lean
path (hvd._hvd_fast.allreduce and grouped_allreduce, in C; allreduce_async_
is in C whole); every other input takes the generic one (prepare -> DLTensor
-> the SWIG module), with the same results.
"""
import warnings

import numpy as np

from . import _hvd_fast
from . import hvd_c as _c
from ._errors import check
from ._handle import Handle, ThreadHandle, sweep_orphans
from ._tensor import (_CapsuleType, copy_of, cuda_stream_of, dltensor, empty_like, from_capsule,
                      is_torch, prepare, result_of)
from .process_sets import global_process_set, set_id

Sum = _c.HVD_OP_SUM
Average = _c.HVD_OP_AVERAGE
Min = _c.HVD_OP_MIN
Max = _c.HVD_OP_MAX
Product = _c.HVD_OP_PRODUCT

_fast_allreduce = _hvd_fast.allreduce
_fast_grouped_allreduce = _hvd_fast.grouped_allreduce


def _options(process_set, native=None, prescale_factor=1.0, postscale_factor=1.0):
    opts = _c.hvd_op_options()
    opts.prescale_factor = float(prescale_factor)
    opts.postscale_factor = float(postscale_factor)
    opts.process_set = set_id(process_set)
    stream = cuda_stream_of(native) if native is not None else None
    if stream is not None:
        opts.set_cuda_stream(stream)  # hvd orders its work after this stream
    return opts


def _submit(fn, *args):
    sweep_orphans()
    status, hid = fn(*args)
    check(status)
    return hid


def resolve_op(op, average):
    """Horovod's deprecated `average=` flag: True is Average, False is Sum.
    op=None means Average."""
    if average is None:
        return Average if op is None else op
    if op is not None:
        raise ValueError("op and average were both given; average is deprecated, pass op only")
    warnings.warn("average= is deprecated; pass op=hvd.Average or op=hvd.Sum",
                  DeprecationWarning, stacklevel=3)
    return Average if average else Sum


# ---------------------------------------------------------------- allreduce

def allreduce_async(tensor, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set, average=None):
    if average is not None:
        op = resolve_op(op, average)
    handle = _fast_allreduce(tensor, None, name, op, prescale_factor, postscale_factor,
                             process_set)
    if handle is not None:
        return handle
    op = resolve_op(op, None)
    prep = prepare(tensor)
    out = empty_like(prep.native)
    din, dout = dltensor(prep.native), dltensor(out)
    opts = _options(process_set, prep.native, prescale_factor, postscale_factor)
    hid = _submit(_c.hvd_allreduce_async, name, din, dout, op, opts)
    return Handle(hid, (prep, out, din, dout, opts), lambda _: prep.to_caller(out))


def allreduce(tensor, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set, average=None):
    """Reduce `tensor` over the ranks (default: average); a new tensor."""
    if average is not None:
        op = resolve_op(op, average)
    return allreduce_async(tensor, name, op, prescale_factor, postscale_factor,
                           process_set).wait()


def _allreduce_async_py(tensor, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set, average=None):
    """allreduce_async_ for what _hvd_fast.allreduce_async_ (the same
    signature in C, bound below) hands on: average=, tensors off the lean
    path, arguments it does not know."""
    if average is not None:
        op = resolve_op(op, average)
    handle = _fast_allreduce(tensor, tensor, name, op, prescale_factor, postscale_factor,
                             process_set)
    if handle is not None:
        return handle
    op = resolve_op(op, None)
    prep = prepare(tensor)
    d = dltensor(prep.native)
    opts = _options(process_set, prep.native, prescale_factor, postscale_factor)
    hid = _submit(_c.hvd_allreduce_async, name, d, d, op, opts)

    def finish(_):
        prep.write_back()
        return prep.original
    return Handle(hid, (prep, d, opts), finish)


_hvd_fast.set_allreduce_async_fallback(_allreduce_async_py)
allreduce_async_ = _hvd_fast.allreduce_async_


def allreduce_(tensor, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, average=None):
    """In-place allreduce; returns `tensor`."""
    if average is not None:
        op = resolve_op(op, average)
    return allreduce_async_(tensor, name, op, prescale_factor, postscale_factor,
                            process_set).wait()


def _grouped_names(name, count):
    return None if name is None else ["%s.%d" % (name, i) for i in range(count)]


def grouped_allreduce_async(tensors, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set, average=None):
    op = resolve_op(op, average)
    names = _grouped_names(name, len(tensors))
    handle = _fast_grouped_allreduce(tensors, False, names, op, prescale_factor,
                                     postscale_factor, process_set)
    if handle is not None:
        return handle
    preps = [prepare(t) for t in tensors]
    outs = [empty_like(p.native) for p in preps]
    dins = [dltensor(p.native) for p in preps]
    douts = [dltensor(o) for o in outs]
    opts = _options(process_set, preps[0].native if preps else None, prescale_factor,
                    postscale_factor)
    hid = _submit(_c.hvd_grouped_allreduce_async, names, dins, douts,
                  len(preps), op, opts)
    return Handle(hid, (preps, outs, dins, douts, opts),
                  lambda _: [p.to_caller(o) for p, o in zip(preps, outs)])


def grouped_allreduce(tensors, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set, average=None):
    """Reduce a list of tensors as one negotiated group; a list back."""
    op = resolve_op(op, average)
    return grouped_allreduce_async(tensors, name, op, prescale_factor, postscale_factor,
                                   process_set).wait()


def grouped_allreduce_async_(tensors, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set, average=None):
    return grouped_allreduce_named_async_(
        tensors, _grouped_names(name, len(tensors)), resolve_op(op, average), prescale_factor,
        postscale_factor, process_set)


def grouped_allreduce_named_async_(tensors, names, op=None, prescale_factor=1.0,
                                   postscale_factor=1.0, process_set=global_process_set):
    """grouped_allreduce_async_ with one name per tensor (or names=None)."""
    op = resolve_op(op, None)
    handle = _fast_grouped_allreduce(tensors, True, names, op, prescale_factor, postscale_factor,
                                     process_set)
    if handle is not None:
        return handle
    preps = [prepare(t) for t in tensors]
    ds = [dltensor(p.native) for p in preps]
    opts = _options(process_set, preps[0].native if preps else None, prescale_factor,
                    postscale_factor)
    hid = _submit(_c.hvd_grouped_allreduce_async, names, ds, ds, len(preps), op, opts)

    def finish(_):
        for p in preps:
            p.write_back()
        return [p.original for p in preps]
    return Handle(hid, (preps, ds, opts), finish)


def grouped_allreduce_(tensors, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, average=None):
    """In-place grouped allreduce; returns the list of tensors."""
    op = resolve_op(op, average)
    return grouped_allreduce_async_(tensors, name, op, prescale_factor, postscale_factor,
                                    process_set).wait()


# ---------------------------------------------------------------- broadcast

def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    prep = prepare(tensor)
    out = copy_of(prep.native)  # broadcast works in place: do it on a copy
    d = dltensor(out)
    opts = _options(process_set, out)
    hid = _submit(_c.hvd_broadcast_async, name, d, int(root_rank), opts)
    return Handle(hid, (prep, out, d, opts), lambda _: prep.to_caller(out))


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Root's `tensor` on every rank; a new tensor."""
    return broadcast_async(tensor, root_rank, name, process_set).wait()


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    prep = prepare(tensor)
    d = dltensor(prep.native)
    opts = _options(process_set, prep.native)
    hid = _submit(_c.hvd_broadcast_async, name, d, int(root_rank), opts)

    def finish(_):
        prep.write_back()
        return prep.original
    return Handle(hid, (prep, d, opts), finish)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast from root_rank; returns `tensor`."""
    return broadcast_async_(tensor, root_rank, name, process_set).wait()


# ------------------------------------------- results sized by negotiation

def allgather_async(tensor, name=None, process_set=global_process_set):
    prep = prepare(tensor)
    d = dltensor(prep.native)
    opts = _options(process_set, prep.native)
    hid = _submit(_c.hvd_allgather_async, name, d, opts)
    return Handle(hid, (prep, d, opts),
                  lambda h: prep.to_caller(result_of(h, prep.native)))


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along dimension 0 (rank order)."""
    return allgather_async(tensor, name, process_set).wait()


def _set_size(process_set):
    from .basics import size
    return size() if set_id(process_set) == 0 else process_set.size()


def _split_list(splits):
    """Row counts per rank as Python ints. A tensor or array must hold
    integers (Horovod raises ValueError for a float splits tensor too); a
    list is converted as Horovod converts it."""
    typed = is_torch(splits) or isinstance(splits, np.ndarray)
    a = np.asarray(splits.cpu() if is_torch(splits) else splits)
    if typed and a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError("alltoall: splits must hold integers (row counts per rank), got dtype %s"
                         % (splits.dtype if is_torch(splits) else a.dtype))
    out = [int(s) for s in a.reshape(-1)]
    if any(not -2**63 <= s < 2**63 for s in out):
        raise ValueError("alltoall: a split is out of range: %s" % out)
    return out


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    prep = prepare(tensor)
    d = dltensor(prep.native)
    if isinstance(splits, _CapsuleType):
        splits = from_capsule(splits)
    split_list = None if splits is None else _split_list(splits)
    opts = _options(process_set, prep.native)
    hid = _submit(_c.hvd_alltoall_async, name, d, split_list, opts)
    nranks = _set_size(process_set)

    def finish(h):
        output = prep.to_caller(result_of(h, prep.native))
        if splits is None:
            return output
        status, received, _count = _c.hvd_result_splits(h, nranks)
        check(status)
        received = np.asarray(received, dtype=np.int32)
        if prep.is_torch:  # int32 on the CPU, as Horovod returns them
            import torch
            received = torch.from_numpy(received)
        return output, received
    return Handle(hid, (prep, d, opts), finish)


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Send splits[i] rows to rank i (equal splits if None). Returns the
    received rows, plus the received splits when `splits` was given."""
    return alltoall_async(tensor, splits, name, process_set).wait()


def reducescatter_async(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                        process_set=global_process_set):
    prep = prepare(tensor)
    d = dltensor(prep.native)
    opts = _options(process_set, prep.native, prescale_factor, postscale_factor)
    hid = _submit(_c.hvd_reducescatter_async, name, d, op, opts)
    return Handle(hid, (prep, d, opts),
                  lambda h: prep.to_caller(result_of(h, prep.native)))


def reducescatter(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
    """Reduce over the ranks and keep this rank's block of dimension 0."""
    return reducescatter_async(tensor, name, op, prescale_factor, postscale_factor,
                               process_set).wait()


def _grouped_results(preps):
    """finish(h) of a grouped operation: result i of handle h for tensor i,
    all borrowing hvd's memory through one Lease of the handle."""
    def finish(h):
        lease = _hvd_fast.take(h)
        return [p.to_caller(result_of(h, p.native, i, lease)) for i, p in enumerate(preps)]
    return finish


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Allgather a list of tensors as one negotiated group (fused where their
    dtypes match); the Handle's wait() gives the list of gathered tensors."""
    preps = [prepare(t) for t in tensors]
    ds = [dltensor(p.native) for p in preps]
    opts = _options(process_set, preps[0].native if preps else None)
    hid = _submit(_c.hvd_grouped_allgather_async, _grouped_names(name, len(preps)), ds,
                  len(preps), opts)
    return Handle(hid, (preps, ds, opts), _grouped_results(preps))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Every rank's tensors concatenated along dimension 0, tensor by tensor;
    a list back."""
    return grouped_allgather_async(tensors, name, process_set).wait()


def grouped_reducescatter_async(tensors, name=None, op=Average, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    """Reducescatter a list of tensors as one negotiated group (fused where
    their dtypes match); the Handle's wait() gives this rank's blocks."""
    preps = [prepare(t) for t in tensors]
    ds = [dltensor(p.native) for p in preps]
    opts = _options(process_set, preps[0].native if preps else None, prescale_factor,
                    postscale_factor)
    hid = _submit(_c.hvd_grouped_reducescatter_async, _grouped_names(name, len(preps)), ds,
                  len(preps), op, opts)
    return Handle(hid, (preps, ds, opts), _grouped_results(preps))


def grouped_reducescatter(tensors, name=None, op=Average, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set):
    """Reduce each tensor over the ranks and keep this rank's block of its
    dimension 0, as one group; a list back."""
    return grouped_reducescatter_async(tensors, name, op, prescale_factor, postscale_factor,
                                       process_set).wait()


# ------------------------------------------------------ barrier and join

def barrier(process_set=global_process_set):
    check(_c.hvd_barrier(set_id(process_set)))


def barrier_async(process_set=global_process_set):
    return ThreadHandle(lambda: barrier(process_set))


def join(process_set=global_process_set):
    """This rank has no more data; blocks until all ranks joined and returns
    the rank that joined last. Meanwhile this rank feeds zeros to others'
    allreduces."""
    status, last_rank = _c.hvd_join(set_id(process_set))
    check(status)
    return last_rank


def join_async(process_set=global_process_set):
    return ThreadHandle(lambda: join(process_set))


# synchronize(handle): Horovod's spelling of handle.wait(); poll(handle):
# handle.poll(). In C, so that waiting on a gradient costs one call.
synchronize = _hvd_fast.synchronize
poll = _hvd_fast.poll
