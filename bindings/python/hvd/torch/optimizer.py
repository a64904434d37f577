"""DistributedOptimizer: averages gradients over the ranks while backward
runs, so communication overlaps computation.

A hook on each parameter's gradient accumulator starts that gradient's
asynchronous allreduce as soon as autograd has produced it; step() (or
synchronize()) waits for all of them, writes the averaged gradients back
and then runs the wrapped optimizer's own step.

Per parameter, what does not change between steps (the tensor name, op and
scale factors, and the DLTensor of the gradient while it stays the same
tensor) lives in a C `Slot` (hvd._hvd_fast), so a dense CPU gradient costs
one C call to submit and one to wait. Groups (`groups=`/`num_groups=`) are
submitted as one grouped allreduce once every gradient of the group is
ready. Sparse gradients (nn.Embedding(sparse=True)) are allgathered as
indices and values (sparse_allreduce_async), or densified first with
`sparse_as_dense=True`. On CPU where ranks share a host, from the second
step on, the gradients are views of shared buffers (_grad_buckets.py)
unless gradient_as_bucket_view is False.
"""
import contextlib
import warnings
import zlib

import torch

from .. import _hvd_fast, ops
from ..basics import local_size, size
from ..process_sets import global_process_set
from ._grad_buckets import GradBuckets
from ._hook_reducer import HookReducer
from .compression import Compression
from .sparse import sparse_allreduce_async

_PENDING = (None, None, None)  # hook fired, allreduce not started yet
_SPARSE = object()             # ctx: the result is a new sparse gradient
_IN_PLACE = object()           # ctx: reduced in p.grad itself, nothing to write back


def _split_list(items, n):
    """n consecutive chunks whose lengths differ by at most one (Horovod's split)."""
    d, r = divmod(len(items), n)
    return [items[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(n)]


class _Param:
    """One parameter's state. Hooks and synchronize() reach it directly:
    dicts keyed by tensors would call torch.Tensor.__hash__, a Python
    function, several times per gradient and step."""

    __slots__ = ("param", "name", "slot", "group", "delay", "view")

    def __init__(self, param, name, slot, delay):
        self.param, self.name, self.slot, self.group, self.delay = param, name, slot, None, delay
        self.view = None  # p.grad's place in a shared buffer (GradBuckets)


class _Group:
    """Parameters reduced as one grouped allreduce."""

    __slots__ = ("members", "names", "count")

    def __init__(self, members):
        self.members = members
        names = [m.name for m in members]
        # The group's signature in each name: the same parameter regrouped
        # (another optimizer over the same model) is then a different tensor
        # to the core's response cache.
        tag = "#g%08x" % zlib.crc32("|".join(names).encode())
        self.names = [n + tag for n in names]
        self.count = 0


class _Delays:
    """optimizer._delay: {parameter state: passes left} as hvd.torch.elastic
    resets it after a lost peer (setting a value also restarts the group)."""

    def __init__(self, params):
        self._params = params

    def __iter__(self):
        return iter(self._params)

    def __getitem__(self, st):
        return st.delay

    def __setitem__(self, st, delay):
        st.delay = delay
        if st.group is not None:
            st.group.count = 0


class _DistributedOptimizer(torch.optim.Optimizer):
    # Methods of this class are grafted onto a subclass of the user's
    # optimizer class (see DistributedOptimizer), so `super(self.__class__,
    # self)` below is the user's optimizer.

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set,
                 comm_hook=None, comm_hook_state=None, bucket_cap_mb=25,
                 gradient_as_bucket_view=None):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._op = op
        self._predivide = gradient_predivide_factor
        self._process_set = process_set
        self._sparse_as_dense = sparse_as_dense
        self._hvd_updates = 0  # step()s that began updating (hvd.elastic reads it)
        self.backward_passes_per_step = backward_passes_per_step

        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named_parameters = list(named_parameters)
            names = [name for name, _ in named_parameters]
            if len(set(names)) != len(names):
                raise ValueError("DistributedOptimizer: parameter names must be unique")
            by_param = {p: name for name, p in named_parameters}
            unnamed = [p for p in all_params if p not in by_param]
            if unnamed:
                raise ValueError("DistributedOptimizer: named_parameters misses %d of the "
                                 "optimizer's parameters" % len(unnamed))
        else:
            by_param = {p: "noname.%d" % i for i, p in enumerate(all_params)}
        self._parameter_names = by_param  # Horovod's attribute: parameter -> name
        # After the argument checks (Horovod reports bad names even before
        # init), before any hook: fail early rather than in a hook.
        size()
        pre, post = self._scale_factors()
        self._params = []
        for p in all_params:
            name = "grad." + by_param[p]
            self._params.append(_Param(p, name, _hvd_fast.Slot(name, op, pre, post, process_set),
                                       backward_passes_per_step))
        self._lean = compression is Compression.none  # the Slot path needs no compression

        state_of = {id(st.param): st for st in self._params}
        trainable = [p for p in all_params if p.requires_grad]
        group_tuples = self._make_groups(groups, all_params, trainable)
        self._comm_hook = comm_hook
        self._hook_reducer = None  # _hook_reducer.HookReducer with a comm_hook
        self._skip_backward_sync = False  # inside no_sync()
        views = self._wants_views(gradient_as_bucket_view)
        if comm_hook is not None:
            self._hook_reducer = HookReducer(self, self._params, group_tuples, bucket_cap_mb,
                                             comm_hook, comm_hook_state, process_set, views)
            group_tuples = []
        for g in group_tuples:
            group = _Group([state_of[id(p)] for p in g])
            for st in group.members:
                st.group = group

        self._handles = {}       # _Param or _Group -> (Handle, tensor reduced, ctx)
        self._grad_accs = []     # keep the accumulator nodes (and hooks) alive
        self._synchronized = False
        self._should_synchronize = True
        # GradBuckets: gradients in shared buffers (the hook reducer has its own).
        self._buckets = GradBuckets() if views and self._hook_reducer is None else None
        self._register_hooks()

    # Marker used by broadcast_optimizer_state.
    _hvd_synchronize_handles = True

    @property
    def _delay(self):
        return _Delays(self._params)

    @staticmethod
    def _make_groups(groups, all_params, trainable):
        """Tuples of parameters reduced together (groups of one are left out:
        they are plain allreduces)."""
        if groups is None:
            return []
        if isinstance(groups, bool) or not isinstance(groups, (int, list)):
            raise ValueError("DistributedOptimizer: groups must be a positive int or a list of "
                             "lists of parameters, not %r" % (groups,))
        if isinstance(groups, int):
            if groups <= 0:
                raise ValueError("DistributedOptimizer: groups must be positive, not %d" % groups)
            chunks = _split_list(trainable, groups)
        else:
            known = {id(p) for p in all_params}
            seen = set()
            chunks = []
            for g in groups:
                chunk = []
                for p in g:
                    if not isinstance(p, torch.Tensor):
                        raise ValueError("DistributedOptimizer: groups must hold tensors, not %s"
                                         % type(p).__name__)
                    if id(p) not in known:
                        raise ValueError("DistributedOptimizer: a tensor in groups is not a "
                                         "parameter of this optimizer")
                    if id(p) in seen:
                        raise ValueError("DistributedOptimizer: a parameter can appear in only "
                                         "one group")
                    seen.add(id(p))
                    if p.requires_grad:
                        chunk.append(p)
                chunks.append(chunk)
        return [tuple(c) for c in chunks if len(c) > 1]

    def _wants_views(self, wanted):
        """Whether gradients go into shared buffers (gradient_as_bucket_view):
        by default where some rank shares this host and gradients go
        uncompressed without a predivide factor."""
        if wanted is None:
            wanted = local_size() > 1 and self._predivide == 1.0
        return bool(wanted) and self._lean and self._member()

    def _member(self):
        """Whether this rank is in the optimizer's process set. Ranks outside
        it (Horovod lets every rank build the optimizer) step locally."""
        ps = self._process_set
        return ps is None or ps.process_set_id == 0 or ps.included()

    def _register_hooks(self):
        if not self._member():
            return
        if self._hook_reducer is not None:
            return  # it registered its own
        for st in self._params:
            if st.param.requires_grad:
                # expand_as gives a view whose grad_fn leads to the
                # AccumulateGrad node that writes p.grad.
                acc = st.param.expand_as(st.param).grad_fn.next_functions[0][0]
                acc.register_hook(self._make_hook(st))
                self._grad_accs.append(acc)

    def _make_hook(self, st):
        handles = self._handles
        group = st.group
        buckets = self._buckets

        def hook(*_ignored):
            if self._skip_backward_sync:
                return  # no_sync(): accumulate locally, reduce later
            if buckets is not None and not buckets.built:
                buckets.note(st)  # the first step: the order gradients arrive in
            delay = st.delay
            if delay <= 0:
                raise AssertionError(
                    "Gradients were computed more than backward_passes_per_step times before "
                    "optimizer.step(); increase backward_passes_per_step to accumulate "
                    "gradients locally.")
            st.delay = delay = delay - 1
            if delay > 0 or group is not None:
                handles[st] = _PENDING  # accumulate locally / wait for the group
                if delay == 0:
                    group.count += 1
                    if group.count == len(group.members):
                        self._submit_group(group)
            else:
                handles[st] = self._allreduce_grad_async(st)
        return hook

    def _scale_factors(self):
        # Average with a predivide factor f: inputs * 1/f, result * f, and the
        # core's Average divides by the set size: sum(g / f) * f / size.
        if self._op == ops.Average:
            return 1.0 / self._predivide, self._predivide
        return 1.0, 1.0

    @staticmethod
    def _grad_of(st):
        if st.view is not None:
            return GradBuckets.adopt(st)
        p = st.param
        grad = p.grad
        if grad is None:
            # Every rank must submit the same tensors: a parameter unused in
            # this pass contributes zeros.
            p.grad = grad = torch.zeros_like(p)
        return grad

    def _allreduce_grad_async(self, st):
        grad = self._grad_of(st)
        if self._lean:
            handle = st.slot.allreduce_(grad)
            if handle is not None:
                return handle, grad, _IN_PLACE
        if grad.is_sparse:
            if not self._sparse_as_dense:
                return sparse_allreduce_async(grad, name=st.name, op=self._op,
                                              process_set=self._process_set), None, _SPARSE
            grad = grad.to_dense()  # reduced dense, made sparse again in synchronize
        compressed, ctx = self._compression.compress(grad)
        pre, post = self._scale_factors()
        handle = ops.allreduce_async_(compressed, name=st.name, op=self._op,
                                      prescale_factor=pre, postscale_factor=post,
                                      process_set=self._process_set)
        return handle, compressed, ctx

    def _submit_group(self, group):
        tensors, ctxs = [], []
        for st in group.members:
            self._handles.pop(st, None)
            grad = self._grad_of(st)
            if grad.is_sparse:
                if not self._sparse_as_dense:
                    raise ValueError(
                        "DistributedOptimizer: the sparse gradient of %s cannot be part of a "
                        "group; pass sparse_as_dense=True or leave it out of groups" % st.name)
                grad = grad.to_dense()
            compressed, ctx = self._compression.compress(grad)
            tensors.append(compressed)
            ctxs.append(ctx)
        pre, post = self._scale_factors()
        handle = ops.grouped_allreduce_named_async_(
            tensors, group.names, op=self._op, prescale_factor=pre, postscale_factor=post,
            process_set=self._process_set)
        self._handles[group] = (handle, tensors, ctxs)
        group.count = 0

    def _write_back(self, p, reduced, ctx):
        """Put the reduced tensor into p.grad (nothing to do when the
        allreduce ran in p.grad itself)."""
        grad = p.grad
        if reduced is grad:
            return
        result = self._compression.decompress(reduced, ctx)
        if grad.is_sparse:  # sparse_as_dense: back to the gradient's sparse form
            p.grad = result.to_sparse(grad.sparse_dim())
        else:
            with torch.no_grad():
                grad.copy_(result)

    def synchronize(self):
        """Wait for every gradient's allreduce and write the results back.
        Gradients whose hooks did not fire (parameters unused in this pass)
        are reduced here, so every rank submits the same set of tensors."""
        if not self._member():
            self._synchronized = True
            return
        if self._hook_reducer is not None:
            self._hook_reducer.synchronize()
            self._synchronized = True
            return
        handles = self._handles
        # Start the missing ones in a fixed order, then wait for all.
        for st in self._params:
            if not st.param.requires_grad:
                continue
            if st.group is not None:
                if st.group not in handles:
                    self._submit_group(st.group)
            elif handles.get(st, _PENDING)[0] is None:
                handles[st] = self._allreduce_grad_async(st)
        try:
            for key, (handle, reduced, ctx) in handles.items():
                result = handle.wait()
                if ctx is _IN_PLACE:
                    continue
                if isinstance(key, _Group):
                    for st, r, c in zip(key.members, reduced, ctx):
                        self._write_back(st.param, r, c)
                elif ctx is _SPARSE:
                    key.param.grad = result
                else:
                    self._write_back(key.param, reduced, ctx)
        finally:
            for st in self._params:
                st.delay = self.backward_passes_per_step
                if st.group is not None:
                    st.group.count = 0
            handles.clear()
        if self._buckets is not None and not self._buckets.built:
            self._buckets.build(self._params)
        self._synchronized = True

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside start no allreduce; their gradients add up
        in p.grad (DDP's no_sync). The next backward outside, or step() /
        synchronize(), reduces the accumulated gradients once:
            with opt.no_sync(): loss1.backward()
            loss2.backward(); opt.step()"""
        old = self._skip_backward_sync
        self._skip_backward_sync = True
        try:
            yield
        finally:
            self._skip_backward_sync = old

    @contextlib.contextmanager
    def skip_synchronize(self):
        """For step() after an explicit synchronize() (gradient clipping):
            optimizer.synchronize(); clip...; with optimizer.skip_synchronize(): optimizer.step()"""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                # Horovod's wording, which its programs and tests match.
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(): gradients are reduced "
                              "twice.")
            self.synchronize()
        self._synchronized = False
        self._hvd_updates += 1  # from here on the parameters change
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles or (self._hook_reducer is not None and self._hook_reducer.pending()):
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); the pending allreduces still "
                "write into the gradients.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=ops.Average,
                         gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=global_process_set,
                         comm_hook=None, comm_hook_state=None, bucket_cap_mb=25,
                         gradient_as_bucket_view=None):
    """Wrap a torch optimizer so that step() applies gradients averaged over
    all ranks (or `process_set`).

    named_parameters: model.named_parameters(), for readable tensor names.
    compression: Compression.none or Compression.fp16 (gradients travel as
    float16). backward_passes_per_step: backward passes accumulated locally
    before each allreduce. op: Average (default), Sum, ...
    gradient_predivide_factor: with Average, divide by f before the sum and
    by size/f after it (guards float16 against overflow).
    groups: an int n (the trainable parameters in n consecutive groups of
    about equal count) or a list of lists of parameters; each group is
    reduced as one grouped allreduce once all its gradients are ready;
    parameters in no group are reduced one by one. num_groups=n: the
    deprecated spelling of groups=n.
    sparse_as_dense: reduce sparse gradients (nn.Embedding(sparse=True)) as
    dense tensors and make them sparse again; by default their indices and
    values are allgathered and summed (sparse_allreduce_async).
    comm_hook: hook(comm_hook_state, bucket) -> future of the averaged
    bucket, DDP's communication-hook contract (hvd.torch.comm_hooks:
    allreduce_hook, fp16_compress_hook, bf16_compress_hook, powerSGD_hook
    with a PowerSGDState). Buckets are the groups given, or consecutive
    parameters up to bucket_cap_mb. Needs op=Average and no compression.
    gradient_as_bucket_view: after the first step each dense CPU gradient
    p.grad is a view of a buffer in shared memory, laid out in the order the
    gradients arrived, so the ranks of a host reduce between their buffers
    (DDP's option of that name; p.grad must not be detached in place; with
    a comm_hook each bucket is a buffer of its own). The default, None: on
    where another rank shares this host and gradients go uncompressed,
    without a predivide factor; False: never."""
    if gradient_predivide_factor != 1.0 and op != ops.Average:
        raise ValueError("gradient_predivide_factor needs op=Average")
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be >= 1")
    if comm_hook is not None:
        if not callable(comm_hook):
            raise ValueError("DistributedOptimizer: comm_hook must be callable, not %r"
                             % (comm_hook,))
        if op != ops.Average or compression is not Compression.none \
                or gradient_predivide_factor != 1.0:
            raise ValueError("DistributedOptimizer: comm_hook needs op=Average, no compression "
                             "and no gradient_predivide_factor (the hook does the reduction)")
    if num_groups:
        warnings.warn("num_groups is deprecated; pass groups=%d" % num_groups, DeprecationWarning,
                      stacklevel=2)
        if groups is None:
            groups = num_groups
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set,
               comm_hook, comm_hook_state, bucket_cap_mb, gradient_as_bucket_view)
