"""Broadcasting model and optimizer state from one rank to all."""
import torch

from .. import ops
from ..objects import broadcast_object
from ..process_sets import global_process_set


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
