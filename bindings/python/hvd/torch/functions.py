"""hvd.torch's functions: broadcasting model and optimizer state from one
rank to all, and the collectives autograd can differentiate."""
import inspect

import torch
from torch.autograd.function import Function

from .. import hvd_c as _c
from .. import ops
from .._errors import HvdInvalidArgument
from ..basics import rank, size
from ..objects import broadcast_object
from ..process_sets import global_process_set, set_id
from .compression import Compression


def broadcast_parameters(params, root_rank=0, process_set=global_process_set):
    """Overwrite tensors in place with root_rank's values.

    params: a state_dict (model.state_dict(), broadcast in sorted key order
    so all ranks agree) or a list of (name, tensor) pairs such as
    model.named_parameters()."""
    if isinstance(params, dict):
        params = sorted(params.items())
    else:
        params = list(params)
        if params and not isinstance(params[0], tuple):
            raise ValueError("broadcast_parameters: expected a state_dict or (name, tensor) pairs")
    handles = []
    for name, p in params:
        if p is None:
            continue
        tensor = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(ops.broadcast_async_(tensor, root_rank, "broadcast.%s" % name,
                                            process_set=process_set))
    for h in handles:
        h.wait()


def _is_hvd_optimizer(optimizer):
    return hasattr(optimizer, "_hvd_synchronize_handles")


def _initialise_state(optimizer):
    """Optimizers create their state (momentum, Adam moments) lazily in the
    first step. Take one step with zero gradients so every rank has the same
    state structure to broadcast into."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)
    if _is_hvd_optimizer(optimizer):
        # The wrapped optimizer's own step: no allreduce, hooks untouched.
        super(optimizer.__class__, optimizer).step()
    else:
        optimizer.step()


def broadcast_optimizer_state(optimizer, root_rank=0, process_set=global_process_set):
    """Make the optimizer state (tensors and scalars, and the param groups'
    options such as lr) equal to root_rank's on every rank."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("broadcast_optimizer_state does not support LBFGS")
    if len(optimizer.state_dict()["state"]) == 0:
        _initialise_state(optimizer)
    state_dict = optimizer.state_dict()

    # Tensors in place, named by position so every rank uses the same names;
    # everything else (group options, python scalars) as one pickled object.
    handles, scalars = [], {}
    for gi, group in enumerate(state_dict["param_groups"]):
        for pid in group["params"]:
            for key, value in sorted(state_dict["state"].get(pid, {}).items()):
                if torch.is_tensor(value):
                    handles.append(ops.broadcast_async_(
                        value, root_rank, "optimizer.%d.%s.%s" % (gi, pid, key),
                        process_set=process_set))
                else:
                    scalars[(pid, key)] = value
    options = [{k: v for k, v in g.items() if k != "params"} for g in state_dict["param_groups"]]
    options, scalars = broadcast_object((options, scalars), root_rank, "optimizer.options",
                                        process_set)
    for h in handles:
        h.wait()

    for group, opts in zip(optimizer.param_groups, options):
        group.update(opts)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    index = {pid: params[i] for i, pid in enumerate(
        pid for g in state_dict["param_groups"] for pid in g["params"])}
    for (pid, key), value in scalars.items():
        optimizer.state[index[pid]][key] = value


# ------------------------------------------------ differentiable collectives
#
# hvd.torch.allreduce & co. are ops.* when no gradient is needed, and a
# torch.autograd.Function around ops.* when the input requires one. Each
# backward is the gradient of the sum of every rank's loss (the quantity
# data-parallel training differentiates): every rank runs backward through
# the same collectives in the same order, and each backward is itself a
# collective over the same process set.

def _bind(fn, tensor, args, kwargs):
    """ops.fn's arguments as a dict without the tensor, defaults filled in,
    so the wrappers follow ops' signature (positional order included)."""
    sig = inspect.signature(fn)
    bound = sig.bind(tensor, *args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    del arguments[next(iter(sig.parameters))]
    return arguments


def _wants_grad(tensors):
    return torch.is_grad_enabled() and any(torch.is_tensor(t) and t.requires_grad
                                           for t in tensors)


def _reduce_op(args):
    """The op a reduction runs: `op`, else what the deprecated `average`
    says (Average by default)."""
    op = args.get("op")
    if op is None:
        op = ops.Sum if args.get("average") is False else ops.Average
    return op


def _set_rank_size(process_set):
    if set_id(process_set) == 0:
        return rank(), size()
    return process_set.rank(), process_set.size()


def _grad_name(args):
    name = args.get("name")
    return None if name is None else name + ".grad"


_OP_NAMES = {ops.Sum: "Sum", ops.Average: "Average", ops.Min: "Min", ops.Max: "Max",
             ops.Product: "Product", _c.HVD_OP_ADASUM: "Adasum"}


_DIFFERENTIABLE_ALLREDUCE_OPS = (ops.Sum, ops.Average, ops.Min, ops.Max, ops.Product)


def _check_differentiable_op(fn_name, args, allowed):
    op = _reduce_op(args)
    if op not in allowed:
        raise HvdInvalidArgument("hvd.torch.%s: no gradient for op %s (differentiable ops: %s)"
                                 % (fn_name, _OP_NAMES.get(op, op),
                                    ", ".join(_OP_NAMES[o] for o in allowed)))
    scaled = args["prescale_factor"] != 1.0 or args["postscale_factor"] != 1.0
    if scaled and op not in (ops.Sum, ops.Average):
        raise HvdInvalidArgument("hvd.torch.%s: the gradient of op=%s takes no prescale/"
                                 "postscale factors" % (fn_name, _OP_NAMES[op]))
    return op


class _Allreduce(Function):
    @staticmethod
    def forward(ctx, tensor, args):
        ctx.args = args
        ctx.op = _check_differentiable_op("allreduce", args, _DIFFERENTIABLE_ALLREDUCE_OPS)
        out = ops.allreduce(tensor, **args)
        if ctx.op in (ops.Min, ops.Max):
            ctx.save_for_backward(tensor, out)
        elif ctx.op == ops.Product:
            ctx.save_for_backward(tensor)
        return out

    @staticmethod
    def backward(ctx, dy):
        args, op = ctx.args, ctx.op
        ps, name = args["process_set"], _grad_name(args)
        if op in (ops.Sum, ops.Average):  # the same reduction, same scale factors
            return ops.allreduce(dy, name=name, op=op, prescale_factor=args["prescale_factor"],
                                 postscale_factor=args["postscale_factor"],
                                 process_set=ps), None
        if op in (ops.Min, ops.Max):
            # The gradient goes to the ranks holding the extremum, shared
            # equally among ties.
            x, out = ctx.saved_tensors
            mask = (x == out).to(dy.dtype)
            sums = ops.allreduce(torch.stack([dy, mask]), name=name, op=ops.Sum, process_set=ps)
            return mask * sums[0] / sums[1], None
        # Product: d out / d x_r = product of the other ranks' inputs.
        (x,) = ctx.saved_tensors
        r, _ = _set_rank_size(ps)
        every = ops.allgather(x.unsqueeze(0), name=None if name is None else name + ".inputs",
                              process_set=ps)
        others = torch.cat([every[:r], every[r + 1:]]).prod(0)
        return ops.allreduce(dy, name=name, op=ops.Sum, process_set=ps) * others, None


class _GroupedAllreduce(Function):
    @staticmethod
    def forward(ctx, args, *tensors):
        ctx.args = args
        ctx.op = _check_differentiable_op("grouped_allreduce", args, (ops.Sum, ops.Average))
        return tuple(ops.grouped_allreduce(list(tensors), **args))

    @staticmethod
    def backward(ctx, *dys):
        args = ctx.args
        grads = ops.grouped_allreduce(list(dys), name=_grad_name(args), op=ctx.op,
                                      prescale_factor=args["prescale_factor"],
                                      postscale_factor=args["postscale_factor"],
                                      process_set=args["process_set"])
        return (None,) + tuple(grads)


class _Allgather(Function):
    @staticmethod
    def forward(ctx, tensor, args):
        ctx.args = args
        ctx.rows = tensor.shape[0]
        return ops.allgather(tensor, **args)

    @staticmethod
    def backward(ctx, dy):
        # This rank's rows of the gradients summed over the ranks.
        ps, name = ctx.args["process_set"], _grad_name(ctx.args)
        rows = ops.allgather(torch.tensor([ctx.rows], dtype=torch.int64),
                             name=None if name is None else name + ".rows", process_set=ps)
        r, _ = _set_rank_size(ps)
        if bool((rows == ctx.rows).all()):  # equal blocks: reducescatter is exactly that
            return ops.reducescatter(dy, name=name, op=ops.Sum, process_set=ps), None
        offset = int(rows[:r].sum())
        summed = ops.allreduce(dy, name=name, op=ops.Sum, process_set=ps)
        return summed.narrow(0, offset, ctx.rows), None


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, args):
        ctx.args = args
        ctx.root_rank = root_rank
        return ops.broadcast(tensor, root_rank, **args)

    @staticmethod
    def backward(ctx, dy):
        # Every rank's output is root's input: root gets the sum of the
        # gradients, the others nothing.
        ps = ctx.args["process_set"]
        summed = ops.allreduce(dy, name=_grad_name(ctx.args), op=ops.Sum, process_set=ps)
        r, _ = _set_rank_size(ps)
        return (summed if r == ctx.root_rank else torch.zeros_like(summed)), None, None


class _Alltoall(Function):
    @staticmethod
    def forward(ctx, tensor, splits, args):
        ctx.args = args
        out, received = ops.alltoall(tensor, splits, **args)
        ctx.mark_non_differentiable(received)
        ctx.received = received
        return out, received

    @staticmethod
    def backward(ctx, dy, _received_grad):
        # The rows go back where they came from.
        grad, _ = ops.alltoall(dy, ctx.received, name=_grad_name(ctx.args),
                               process_set=ctx.args["process_set"])
        return grad, None, None


class _Reducescatter(Function):
    @staticmethod
    def forward(ctx, tensor, args):
        ctx.args = args
        ctx.op = _check_differentiable_op("reducescatter", args, (ops.Sum, ops.Average))
        return ops.reducescatter(tensor, **args)

    @staticmethod
    def backward(ctx, dy):
        # Block j of every rank's input went into rank j's output.
        args = ctx.args
        ps = args["process_set"]
        scale = args["prescale_factor"] * args["postscale_factor"]
        if ctx.op == ops.Average:
            scale /= _set_rank_size(ps)[1]
        grad = ops.allgather(dy, name=_grad_name(args), process_set=ps)
        return grad * scale if scale != 1.0 else grad, None


def _one_tensor(op_fn, function, tensor, args, kwargs, compression=Compression.none):
    """op_fn(tensor, *args, **kwargs), through `function` when a gradient
    is wanted, with `compression` around it."""
    tensor, cctx = compression.compress(tensor)
    if _wants_grad([tensor]):
        out = function.apply(tensor, _bind(op_fn, tensor, args, kwargs))
    else:
        out = op_fn(tensor, *args, **kwargs)
    return compression.decompress(out, cctx)


def allreduce(tensor, *args, compression=Compression.none, **kwargs):
    """hvd.allreduce (same arguments), differentiable: when `tensor`
    requires grad the result does too. Backward of Sum/Average is the same
    allreduce of the gradients; of Min/Max, the summed gradient goes to the
    ranks holding the extremum; of Product, the summed gradient times the
    other ranks' product. `compression` (Compression.fp16) casts around the
    collective."""
    return _one_tensor(ops.allreduce, _Allreduce, tensor, args, kwargs, compression)


def grouped_allreduce(tensors, *args, compression=Compression.none, **kwargs):
    """hvd.grouped_allreduce (same arguments), differentiable (Sum and
    Average)."""
    pairs = [compression.compress(t) for t in tensors]
    sent = [t for t, _ in pairs]
    if _wants_grad(sent):
        outs = _GroupedAllreduce.apply(_bind(ops.grouped_allreduce, sent, args, kwargs), *sent)
    else:
        outs = ops.grouped_allreduce(sent, *args, **kwargs)
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, pairs)]


def allgather(tensor, *args, **kwargs):
    """hvd.allgather (same arguments), differentiable: backward gives each
    rank its rows of the gradients summed over the ranks."""
    return _one_tensor(ops.allgather, _Allgather, tensor, args, kwargs)


def broadcast(tensor, *args, **kwargs):
    """hvd.broadcast (same arguments), differentiable: backward sums the
    gradients on the root rank; the other ranks' inputs get zeros."""
    if _wants_grad([tensor]):
        bound = _bind(ops.broadcast, tensor, args, kwargs)
        root_rank = bound.pop("root_rank")
        return _Broadcast.apply(tensor, root_rank, bound)
    return ops.broadcast(tensor, *args, **kwargs)


def alltoall(tensor, *args, **kwargs):
    """hvd.alltoall (same arguments), differentiable: backward sends the
    gradient rows back with the received splits."""
    if not _wants_grad([tensor]):
        return ops.alltoall(tensor, *args, **kwargs)
    bound = _bind(ops.alltoall, tensor, args, kwargs)
    splits = bound.pop("splits")
    if splits is None:
        # Explicit equal splits, so backward knows what came from where.
        _, n = _set_rank_size(bound["process_set"])
        if tensor.dim() == 0 or tensor.shape[0] % n:
            return ops.alltoall(tensor, *args, **kwargs)  # hvd's own error message
        out, _ = _Alltoall.apply(tensor, [tensor.shape[0] // n] * n, bound)
        return out
    return _Alltoall.apply(tensor, splits, bound)


def reducescatter(tensor, *args, compression=Compression.none, **kwargs):
    """hvd.reducescatter (same arguments), differentiable: backward
    allgathers the gradient blocks, scaled like the forward."""
    return _one_tensor(ops.reducescatter, _Reducescatter, tensor, args, kwargs, compression)


# ------------------------------------------------ grouped allgather / reducescatter
#
# One negotiated group through hvd.grouped_allgather / grouped_reducescatter
# where this hvd has them; otherwise (and when a gradient is wanted) one
# differentiable collective per tensor, named "<name>.<i>".

class _HandleList:
    """Handles of per-tensor operations as one: wait() gives their results."""

    def __init__(self, handles):
        self._handles = handles

    def poll(self):
        return all(h.poll() for h in self._handles)

    def wait(self, timeout=None):
        return [h.wait(timeout) for h in self._handles]

    def release(self):
        for h in self._handles:
            h.release()


def _names(name, count):
    return [None if name is None else "%s.%d" % (name, i) for i in range(count)]


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """allgather of each tensor, as one group; the handle's wait() gives the list."""
    if hasattr(ops, "grouped_allgather_async"):
        return ops.grouped_allgather_async(tensors, name=name, process_set=process_set)
    return _HandleList([ops.allgather_async(t, name=n, process_set=process_set)
                        for t, n in zip(tensors, _names(name, len(tensors)))])


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of each tensor (differentiable), as one group; a list back."""
    if _wants_grad(tensors):
        return [allgather(t, name=n, process_set=process_set)
                for t, n in zip(tensors, _names(name, len(tensors)))]
    return grouped_allgather_async(tensors, name, process_set).wait()


def grouped_reducescatter_async(tensors, name=None, op=ops.Average, prescale_factor=1.0,
                                postscale_factor=1.0, process_set=global_process_set):
    """reducescatter of each tensor, as one group; the handle's wait() gives the list."""
    if hasattr(ops, "grouped_reducescatter_async"):
        return ops.grouped_reducescatter_async(tensors, name=name, op=op,
                                               prescale_factor=prescale_factor,
                                               postscale_factor=postscale_factor,
                                               process_set=process_set)
    return _HandleList([ops.reducescatter_async(t, name=n, op=op,
                                                prescale_factor=prescale_factor,
                                                postscale_factor=postscale_factor,
                                                process_set=process_set)
                        for t, n in zip(tensors, _names(name, len(tensors)))])


def grouped_reducescatter(tensors, name=None, op=ops.Average, prescale_factor=1.0,
                          postscale_factor=1.0, process_set=global_process_set, *,
                          compression=Compression.none):
    """reducescatter of each tensor (differentiable), as one group; a list back."""
    pairs = [compression.compress(t) for t in tensors]
    sent = [t for t, _ in pairs]
    kwargs = dict(op=op, prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                  process_set=process_set)
    if _wants_grad(sent):
        outs = [reducescatter(t, name=n, **kwargs)
                for t, n in zip(sent, _names(name, len(sent)))]
    else:
        outs = grouped_reducescatter_async(sent, name, **kwargs).wait()
    return [compression.decompress(o, c) for o, (_, c) in zip(outs, pairs)]
