"""Elastic training for PyTorch, under Horovod's names: after
`import hvd.torch as hvd`, `hvd.elastic.run`, `hvd.elastic.TorchState` and
`hvd.elastic.ElasticSampler` (plus everything of hvd.elastic).

    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)

TorchState keeps torch objects by their state_dict: every torch.nn.Module,
torch.optim.Optimizer and ElasticSampler among its arguments. save() copies
their state_dicts in memory (into buffers kept from the previous save, so a
commit is one memcpy of the state, no allocation), restore() loads the
copies back, sync() makes every rank equal to rank 0 (broadcast_parameters,
broadcast_optimizer_state, the sampler's position by broadcast_object) when
the ranks do not already hold the same commit. Other arguments are pickled
values, as in ObjectState.
"""
import copy
import logging
import math
import random
import zlib

import torch

from ..basics import rank, size
from ..elastic import (HostsUpdatedInterrupt, ObjectState, State, current_round, enabled,
                       hosts_updated, run)
from ..objects import broadcast_object
from .functions import broadcast_optimizer_state, broadcast_parameters

_log = logging.getLogger("hvd.elastic")

__all__ = ["ElasticSampler", "HostsUpdatedInterrupt", "ObjectState", "State", "TorchState",
           "current_round", "enabled", "hosts_updated", "run"]


class ElasticSampler(torch.utils.data.Sampler):
    """Shards a dataset over the ranks, and after a reset shards what is
    left of the epoch over the new set of ranks.

    Put it in the TorchState, call record_batch(batch_idx, batch_size) after
    each batch and set_epoch(epoch + 1) at the end of each epoch. Indices are
    shuffled with `seed + epoch` (the same on every rank) when `shuffle`;
    the last round is padded by repeating indices so every rank gets the
    same number."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0  # samples of this epoch done by all ranks together
        self.reset()

    def set_epoch(self, epoch):
        """Start `epoch` from its first sample (call it when an epoch ends)."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Every rank processed `batch_size` more samples."""
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def reset(self):
        """Re-shard the rest of the epoch for the current world."""
        self.num_replicas, self.rank = size(), rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))

    def __iter__(self):
        total = self.num_samples * self.num_replicas
        padded = self.remaining_indices + self.remaining_indices[:total - len(
            self.remaining_indices)]
        return iter(padded[self.rank:total:self.num_replicas])

    def __len__(self):
        return self.num_samples


def _is_torch_object(value):
    return isinstance(value, (torch.nn.Module, torch.optim.Optimizer, ElasticSampler))


class TorchState(ObjectState):
    """Elastic state of a PyTorch training: models, optimizers and
    ElasticSamplers by state_dict, other values pickled. Assigning a new
    object to an attribute (state.model = other) tracks the new one."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        named = dict(model=model, optimizer=optimizer, **kwargs)
        torch_objects = {k: v for k, v in named.items() if _is_torch_object(v)}
        values = {k: v for k, v in named.items()
                  if k not in torch_objects and not (k in ("model", "optimizer") and v is None)}
        object.__setattr__(self, "_torch_objects", torch_objects)
        object.__setattr__(self, "_saved_torch", {})
        object.__setattr__(self, "_marks", {})  # restore_if_needed: see _marks_of
        for name in ("model", "optimizer"):
            if name not in values:
                object.__setattr__(self, name, named[name])
        for name, value in torch_objects.items():
            object.__setattr__(self, name, value)
        super().__init__(**values)  # saves

    def __setattr__(self, name, value):
        if name in self._torch_objects:
            self._torch_objects[name] = value
        super().__setattr__(name, value)

    def save(self):
        self._save_torch()
        super().save()

    def _save_torch(self):
        saved = self._saved_torch
        self._saved_torch = {name: _copy_into(saved.get(name), obj.state_dict())
                             for name, obj in self._torch_objects.items()}
        self._marks = {name: _marks_of(obj) for name, obj in self._torch_objects.items()}

    def restore(self):
        for name, obj in self._torch_objects.items():
            if name in self._saved_torch:
                saved = self._saved_torch[name]
                if not isinstance(obj, torch.optim.Optimizer):
                    obj.load_state_dict(saved)  # copies into the parameters
                elif not _restore_in_place(obj, saved):
                    # An optimizer keeps the tensors it is given: give it
                    # copies, or its next step would change the commit.
                    obj.load_state_dict(copy.deepcopy(saved))
            if isinstance(obj, torch.optim.Optimizer):
                _forget_pending_gradients(obj)
        super().restore()

    def restore_if_needed(self):
        """restore(), copying back only what changed since the last commit:
        a module's parameters one by one (its buffers always), an
        optimizer's state whole when any of it changed. A tensor counts as
        unchanged when it is the same tensor with the same version counter
        (torch bumps it at every in-place change) and no
        DistributedOptimizer began an update since the commit."""
        updated = any(_marks_of(obj).get("updates") != self._marks.get(name, {}).get("updates")
                      for name, obj in self._torch_objects.items()
                      if isinstance(obj, torch.optim.Optimizer))
        copied = kept = 0
        for name, obj in self._torch_objects.items():
            saved = self._saved_torch.get(name)
            if saved is None:
                continue
            marks = self._marks.get(name, {})
            if isinstance(obj, torch.nn.Module):
                n_copied, n_kept = _restore_module(obj, saved, marks, updated)
            elif isinstance(obj, torch.optim.Optimizer):
                n_copied, n_kept = _restore_optimizer(obj, saved, marks)
            else:
                obj.load_state_dict(saved)
                n_copied, n_kept = 0, 0
            copied += n_copied
            kept += n_kept
        ObjectState.restore(self)
        self._marks = {name: _marks_of(obj) for name, obj in self._torch_objects.items()}
        _log.info("restore if needed: %d tensors copied back, %d unchanged since the commit "
                  "kept", copied, kept)

    def fingerprint(self):
        crc = super().fingerprint()
        for _, obj in sorted(self._torch_objects.items()):
            crc = _crc_of(obj.state_dict(), crc)
        return crc

    def _broadcast_state(self):
        # The broadcast writes the tensors' memory without bumping their
        # versions: until it is done (then saved), restore_if_needed must
        # copy everything back.
        self._marks = {}
        # Sorted by name: every rank broadcasts in the same order.
        for name, obj in sorted(self._torch_objects.items()):
            if isinstance(obj, torch.nn.Module):
                broadcast_parameters(obj.state_dict(), root_rank=0)
            elif isinstance(obj, torch.optim.Optimizer):
                _forget_pending_gradients(obj)
                broadcast_optimizer_state(obj, root_rank=0)
            else:
                obj.load_state_dict(broadcast_object(obj.state_dict(), root_rank=0,
                                                     name="hvd.elastic.sampler." + name))
        super()._broadcast_state()
        # Every rank now holds rank 0's state: that is the new commit.
        self._save_torch()


def _mark(t):
    if t.layout != torch.strided:
        return object()  # equal to nothing: always copied back
    return (t.data_ptr(), t._version, t.shape, t.dtype)


def _marks_of(obj):
    """What tells an unchanged tensor of `obj` from a changed one: per
    state_dict entry, its storage and version counter; for an optimizer
    also how many updates a DistributedOptimizer began ("updates")."""
    if isinstance(obj, torch.nn.Module):
        return {k: (_mark(v) if isinstance(v, torch.Tensor) else None)
                for k, v in obj.state_dict().items()}
    if isinstance(obj, torch.optim.Optimizer):
        marks = {(idx, key): (_mark(v) if isinstance(v, torch.Tensor) else None)
                 for idx, entry in obj.state_dict()["state"].items() for key, v in entry.items()}
        marks["updates"] = getattr(obj, "_hvd_updates", None)
        return marks
    return {}


def _restore_module(module, saved, marks, updated):
    """Copies back the module's changed parameters and all its buffers (a
    kernel may update a buffer without bumping its version, as batch norm's
    running statistics may); everything after an optimizer update or when
    the layout changed. Returns (copied, kept)."""
    live = module.state_dict()
    if (updated or set(live) != set(saved) or set(live) != set(marks)
            or not all(isinstance(v, torch.Tensor) for v in live.values())):
        module.load_state_dict(saved)
        return len(live), 0
    params = {name for name, _ in module.named_parameters()}
    copied = 0
    with torch.no_grad():
        for key, tensor in live.items():
            if key not in params or _mark(tensor) != marks[key]:
                tensor.copy_(saved[key])
                copied += 1
    return copied, len(live) - copied


def _restore_optimizer(optimizer, saved, marks):
    """The optimizer's state whole when any tensor of it changed (or an
    update began), else only its hyperparameters; returns (copied, kept)."""
    tensors = sum(1 for k, v in marks.items() if k != "updates" and v is not None)
    if _marks_of(optimizer) != marks:
        if not _restore_in_place(optimizer, saved):
            optimizer.load_state_dict(copy.deepcopy(saved))
        copied, kept = tensors, 0
    else:
        for group, saved_group in zip(optimizer.param_groups, saved["param_groups"]):
            for key, value in saved_group.items():
                if key != "params":
                    group[key] = copy.deepcopy(value)  # e.g. a scheduler's learning rate
        copied, kept = 0, tensors
    _forget_pending_gradients(optimizer)
    return copied, kept


def _restore_in_place(optimizer, saved):
    """Copy the saved optimizer state into the optimizer's own tensors (no
    allocation) when it has the same layout; False when it has not (then
    load_state_dict must rebuild it)."""
    live = optimizer.state_dict()["state"]  # its entries are the optimizer's own dicts
    if set(live) != set(saved["state"]) or len(optimizer.param_groups) != len(
            saved["param_groups"]):
        return False
    for idx, entry in saved["state"].items():
        if set(live[idx]) != set(entry):
            return False
    for idx, entry in saved["state"].items():
        target = live[idx]
        for key, value in entry.items():
            old = target[key]
            if (isinstance(value, torch.Tensor) and isinstance(old, torch.Tensor)
                    and old.shape == value.shape and old.dtype == value.dtype):
                old.copy_(value)
            else:
                target[key] = copy.deepcopy(value)
    for group, saved_group in zip(optimizer.param_groups, saved["param_groups"]):
        for key, value in saved_group.items():
            if key != "params":
                group[key] = copy.deepcopy(value)
    return True


def _copy_into(dst, src):
    """A copy of the state_dict `src`, reusing the tensors of `dst` (an
    earlier copy) where shapes and types match."""
    if isinstance(src, torch.Tensor):
        if (isinstance(dst, torch.Tensor) and dst.shape == src.shape and dst.dtype == src.dtype
                and dst.device == src.device):
            return dst.copy_(src)
        return src.detach().clone()
    if isinstance(src, dict):
        dst = dst if isinstance(dst, dict) else {}
        return {k: _copy_into(dst.get(k), v) for k, v in src.items()}
    if isinstance(src, (list, tuple)):
        dst = dst if isinstance(dst, type(src)) and len(dst) == len(src) else [None] * len(src)
        return type(src)(_copy_into(d, v) for d, v in zip(dst, src))
    return copy.deepcopy(src)


def _crc_of(value, crc):
    if isinstance(value, torch.Tensor):
        t = value.detach().contiguous().cpu()
        return zlib.crc32(t.view(-1).view(torch.uint8).numpy().data, crc) if t.numel() else crc
    if isinstance(value, dict):
        for k in sorted(value, key=repr):
            crc = _crc_of(value[k], zlib.crc32(repr(k).encode(), crc))
        return crc
    if isinstance(value, (list, tuple)):
        for v in value:
            crc = _crc_of(v, crc)
        return crc
    return zlib.crc32(repr(value).encode(), crc)


def _forget_pending_gradients(optimizer):
    """A DistributedOptimizer interrupted mid-step holds handles of the old
    world's allreduces; drop them so the next backward starts clean."""
    if not hasattr(optimizer, "_hvd_synchronize_handles"):
        return
    optimizer._handles.clear()
    if getattr(optimizer, "_hook_reducer", None) is not None:
        optimizer._hook_reducer.reset()  # comm_hook buckets handed over in the old world
    for p in optimizer._delay:
        optimizer._delay[p] = optimizer.backward_passes_per_step
    optimizer._synchronized = False
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad = None
