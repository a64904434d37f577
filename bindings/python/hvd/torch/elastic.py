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

Two ways keep the survivors of a failure from waiting:
  * async_commit=True (opt-in): save() copies the parameters and the
    optimizer state on a background thread and returns; the copy must end
    before anything changes them, so every fenced path waits for it: the
    optimizers' step() and load_state_dict() (wrapped per instance), the
    modules' load_state_dict(), and restore/sync/save/fingerprint. Module
    buffers (batch-norm statistics change in forward) are copied at once.
  * a worker that joins while every other rank holds rank 0's commit gets
    the commit by point-to-point messages from rank 0 (isend/irecv), in the
    background on rank 0; the others return from sync() at once. Rank 0
    sends from its committed copy, so its next save() waits for the sends.
"""
import concurrent.futures
import copy
import functools
import logging
import math
import random
import types
import weakref
import zlib

import torch

from .._errors import HvdUnsupportedError
from ..basics import rank, size
from ..elastic import (HostsUpdatedInterrupt, ObjectState, State, current_round, enabled,
                       hosts_updated, run)
from ..elastic.state import env_flag
from ..objects import broadcast_object
from ..p2p import P2POp, batch_isend_irecv
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


# The p2p tag of a commit streamed to a joining worker (any tag up to
# HVD_P2P_MAX_TAG; this one is hvd's own).
_STREAM_TAG = 0xE1A57

_P2P_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
               torch.bfloat16, torch.float32, torch.float64, torch.bool)

_copier = []  # the one background thread of asynchronous commits, made on first use


def _copy_thread():
    if not _copier:
        _copier.append(concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hvd-commit"))
    return _copier[0]


class TorchState(ObjectState):
    """Elastic state of a PyTorch training: models, optimizers and
    ElasticSamplers by state_dict, other values pickled. Assigning a new
    object to an attribute (state.model = other) tracks the new one.

    async_commit (keyword only; default HVD_ELASTIC_ASYNC_COMMIT, else
    off): commit() copies the parameters and optimizer state in the
    background (see the module's doc). Only safe when the state's
    optimizers are the only thing that changes the parameters between two
    commits (no optimizer outside the state, no in-place change of a
    parameter in forward)."""

    def __init__(self, model=None, optimizer=None, *, async_commit=None, **kwargs):
        if async_commit is None:
            async_commit = env_flag("HVD_ELASTIC_ASYNC_COMMIT", False)
        object.__setattr__(self, "_async_commit", bool(async_commit))
        object.__setattr__(self, "_copying", None)  # the running background copy (a Future)
        object.__setattr__(self, "_sends", [])  # rank 0's handles of a streamed commit
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
        self.finish_pending()  # the commit's buffers are about to be rewritten
        self._save_torch(background=self._async_commit)
        super().save()

    def finish_pending(self):
        self._wait_copy()
        sends, self._sends = self._sends, []
        for handle in sends:
            try:
                handle.wait()
            except Exception as exc:  # the new worker is gone: the job re-forms anyway
                _log.warning("sending the commit to a new worker failed: %s", exc)

    def _wait_copy(self):
        """Block until the background copy of the last commit is complete;
        raises what the copy raised."""
        copying, self._copying = self._copying, None
        if copying is not None:
            copying.result()

    def _save_torch(self, background=False):
        saved = self._saved_torch
        jobs = [] if background else None
        self._saved_torch = {}
        for name, obj in self._torch_objects.items():
            state_dict = obj.state_dict()
            if isinstance(obj, torch.nn.Module):
                # Buffers may change in forward (batch norm): copied now.
                params = {key for key, _ in obj.named_parameters()}
                old = saved.get(name) if isinstance(saved.get(name), dict) else {}
                self._saved_torch[name] = {
                    key: _copy_into(old.get(key), value, jobs if key in params else None)
                    for key, value in state_dict.items()}
            elif isinstance(obj, torch.optim.Optimizer):
                self._saved_torch[name] = _copy_into(saved.get(name), state_dict, jobs)
            else:
                self._saved_torch[name] = _copy_into(saved.get(name), state_dict)
        self._marks = {name: _marks_of(obj) for name, obj in self._torch_objects.items()}
        if jobs:
            self._fence_objects()
            self._copying = _copy_thread().submit(_run_copies, jobs)

    def _fence_objects(self):
        """Make the optimizers' step() and load_state_dict() and the modules'
        load_state_dict() wait for this state's background copy."""
        for obj in self._torch_objects.values():
            if isinstance(obj, torch.optim.Optimizer):
                _fence(obj, self, ("step", "load_state_dict"), per_instance=True)
            elif isinstance(obj, torch.nn.Module):
                _fence(obj, self, ("load_state_dict",), per_instance=False)

    def restore(self):
        self._wait_copy()
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
        self._wait_copy()
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
        self._wait_copy()
        crc = super().fingerprint()
        for _, obj in sorted(self._torch_objects.items()):
            crc = _crc_of(obj.state_dict(), crc)
        return crc

    def sync(self):
        self.finish_pending()
        super().sync()

    def _stream_state(self, new_ranks):
        """Rank 0 sends its committed tensors to each new rank (one
        batch_isend_irecv per rank, left running: its next save() waits for
        it); the new ranks receive and load them; the others, which hold
        this commit already, return at once. The structure of the state and
        its small values travel by one broadcast_object. Falls back to the
        broadcast when a tensor is not a dense CPU tensor of a dtype p2p
        carries, or where point-to-point is off (HVD_P2P=0)."""
        me = rank()
        manifest, tensors, sends = None, [], []
        if me == 0:
            specs, tensors = _flatten(self._saved_torch)
            if all(t.device.type == "cpu" and t.layout == torch.strided and t.dtype in _P2P_DTYPES
                   for t in tensors):
                # Posted before the others learn of them: a refusal here
                # (point-to-point off) still leaves everyone the broadcast.
                try:
                    sends = [batch_isend_irecv(
                        [P2POp("send", t, dst, _STREAM_TAG) for t in tensors])[0]
                        for dst in new_ranks] if tensors else []
                    manifest = (specs, self._saved_state)
                except HvdUnsupportedError as e:
                    _log.info("not streaming the commit: %s", e)
        manifest = broadcast_object(manifest, root_rank=0, name="hvd.elastic.stream_manifest")
        if manifest is None:
            self._broadcast_state()
            return
        specs, values = manifest
        if me == 0:
            self._sends = sends
            _log.info("streaming the commit (%d tensors, %d bytes) to new ranks %s",
                      len(tensors), sum(t.numel() * t.element_size() for t in tensors),
                      new_ranks)
        elif me in new_ranks:
            received = [torch.empty(shape, dtype=dtype) for shape, dtype in _spec_list(specs)]
            if received:
                batch_isend_irecv([P2POp("recv", t, 0, _STREAM_TAG) for t in received])[0].wait()
            self._load_streamed(_unflatten(specs, received))
            self._saved_state = values
            self._restore_values()
            _log.info("received the commit from rank 0 (%d tensors)", len(received))

    def _load_streamed(self, saved):
        """Load a commit received from rank 0 into the live objects; the
        received tensors become this rank's committed copy."""
        self._marks = {}
        for name, obj in self._torch_objects.items():
            if name not in saved:
                continue
            if isinstance(obj, torch.optim.Optimizer):
                _forget_pending_gradients(obj)
                if not _restore_in_place(obj, saved[name]):
                    obj.load_state_dict(saved[name])
                    # Some torch versions keep the given tensors: then the
                    # commit needs its own copy.
                    live = {t.data_ptr() for t in _tensors_of(obj.state_dict())}
                    if any(t.data_ptr() in live for t in _tensors_of(saved[name])):
                        saved[name] = _copy_into(None, saved[name])
            else:
                obj.load_state_dict(saved[name])  # copies into the parameters
        self._saved_torch = saved
        self._marks = {name: _marks_of(obj) for name, obj in self._torch_objects.items()}

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


def _copy_into(dst, src, jobs=None):
    """A copy of the state_dict `src`, reusing the tensors of `dst` (an
    earlier copy) where shapes and types match. With a list `jobs`, the
    copies into reused tensors are not made but appended to it as
    (dst, src, version of src) for _run_copies."""
    if isinstance(src, torch.Tensor):
        if (isinstance(dst, torch.Tensor) and dst.shape == src.shape and dst.dtype == src.dtype
                and dst.device == src.device):
            if jobs is not None:
                jobs.append((dst, src, src._version))
                return dst
            return dst.copy_(src)
        return src.detach().clone()
    if isinstance(src, dict):
        dst = dst if isinstance(dst, dict) else {}
        return {k: _copy_into(dst.get(k), v, jobs) for k, v in src.items()}
    if isinstance(src, (list, tuple)):
        dst = dst if isinstance(dst, type(src)) and len(dst) == len(src) else [None] * len(src)
        return type(src)(_copy_into(d, v, jobs) for d, v in zip(dst, src))
    return copy.deepcopy(src)


def _run_copies(jobs):
    """The background half of an asynchronous commit (torch's copy_
    releases the GIL). A source whose version counter moved before its copy
    ended was changed by something no fence waits for: the commit would mix
    two states, so the error surfaces at the next fence."""
    with torch.no_grad():
        for dst, src, version in jobs:
            dst.copy_(src)
            if src._version != version:
                raise RuntimeError(
                    "hvd.elastic.TorchState(async_commit=True): a tensor of the state changed "
                    "while the commit copied it (shape %s); with async_commit only the state's "
                    "optimizers (step, load_state_dict) may change it between commits"
                    % (tuple(src.shape),))


# Torch object -> weak reference to the TorchState whose background copy its
# fenced methods wait for.
_FENCED = weakref.WeakKeyDictionary()


def _fence(obj, state, methods, per_instance):
    """Make obj.<method>() wait for `state`'s background copy, once per
    object. An optimizer's methods are wrapped on the instance, as torch's
    LR schedulers wrap step (a scheduler made earlier holds the class's
    function, which a wrapper on the class would miss; an optimizer pickles
    and deep-copies without its instance attributes). A module's
    load_state_dict is wrapped once on its class and looks the object up in
    _FENCED (other instances pass straight through), so the module pickles
    and deep-copies as it was."""
    _FENCED[obj] = weakref.ref(state)
    for method in methods:
        if per_instance:
            current = getattr(obj, method)
            if not getattr(current, "_hvd_fenced", False):
                object.__setattr__(obj, method, types.MethodType(_fenced(current, False), obj))
        else:
            current = getattr(type(obj), method)
            if not getattr(current, "_hvd_fenced", False):
                setattr(type(obj), method, _fenced(current, True))


def _fenced(original, pass_self):
    """`original` (a function when pass_self, else a bound method or an
    instance's callable), waiting first for the commit of the state its
    object belongs to."""
    @functools.wraps(original)
    def fenced(self, *args, **kwargs):
        ref = _FENCED.get(self)
        state = ref() if ref is not None else None
        if state is not None:
            state._wait_copy()
        return original(self, *args, **kwargs) if pass_self else original(*args, **kwargs)
    fenced._hvd_fenced = True
    return fenced


class _Spec:
    """Where a tensor was in a streamed state_dict: its index in the list of
    tensors sent, shape and dtype."""

    __slots__ = ("index", "shape", "dtype")

    def __init__(self, index, shape, dtype):
        self.index, self.shape, self.dtype = index, shape, dtype

    def __getstate__(self):
        return self.index, self.shape, self.dtype

    def __setstate__(self, st):
        self.index, self.shape, self.dtype = st


def _flatten(value, tensors=None):
    """(structure with each tensor replaced by a _Spec, the tensors in order)."""
    tensors = [] if tensors is None else tensors
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _Spec(len(tensors) - 1, tuple(value.shape), value.dtype), tensors
    if isinstance(value, dict):
        return {k: _flatten(v, tensors)[0] for k, v in value.items()}, tensors
    if isinstance(value, (list, tuple)):
        return type(value)(_flatten(v, tensors)[0] for v in value), tensors
    return value, tensors


def _spec_list(specs):
    """(shape, dtype) of every tensor of a flattened structure, in order."""
    found = []

    def walk(value):
        if isinstance(value, _Spec):
            found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
    walk(specs)
    return [(s.shape, s.dtype) for s in sorted(found, key=lambda s: s.index)]


def _unflatten(specs, tensors):
    if isinstance(specs, _Spec):
        return tensors[specs.index]
    if isinstance(specs, dict):
        return {k: _unflatten(v, tensors) for k, v in specs.items()}
    if isinstance(specs, (list, tuple)):
        return type(specs)(_unflatten(v, tensors) for v in specs)
    return specs


def _tensors_of(value):
    return _flatten(value)[1]


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
