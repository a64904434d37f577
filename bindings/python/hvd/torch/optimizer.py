"""DistributedOptimizer: averages gradients over the ranks while backward
runs, so communication overlaps computation.

A hook on each parameter's gradient accumulator starts that gradient's
asynchronous allreduce as soon as autograd has produced it; step() (or
synchronize()) waits for all of them, writes the averaged gradients back
and then runs the wrapped optimizer's own step.
"""
import contextlib
import warnings

import torch

from .. import ops
from ..basics import size
from ..process_sets import global_process_set
from .compression import Compression


class _DistributedOptimizer(torch.optim.Optimizer):
    # Methods of this class are grafted onto a subclass of the user's
    # optimizer class (see DistributedOptimizer), so `super(self.__class__,
    # self)` below is the user's optimizer.

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._op = op
        self._predivide = gradient_predivide_factor
        self._process_set = process_set
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
        self._names = {p: "grad." + by_param[p] for p in all_params}

        self._delay = {p: backward_passes_per_step for p in all_params}
        self._handles = {}       # param -> (Handle or None, compressed tensor, ctx)
        self._grad_accs = []     # keep the accumulator nodes (and hooks) alive
        self._synchronized = False
        self._should_synchronize = True
        self._register_hooks()

    # Marker used by broadcast_optimizer_state.
    _hvd_synchronize_handles = True

    def _register_hooks(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    # expand_as gives a view whose grad_fn leads to the
                    # AccumulateGrad node that writes p.grad.
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(acc)

    def _make_hook(self, p):
        def hook(*_ignored):
            entry = self._handles.get(p)
            if entry is not None and entry[0] is not None and self._delay[p] <= 0:
                raise AssertionError(
                    "Gradients were computed more than backward_passes_per_step times before "
                    "optimizer.step(); increase backward_passes_per_step to accumulate "
                    "gradients locally.")
            self._delay[p] -= 1
            if self._delay[p] == 0:
                self._handles[p] = self._allreduce_grad_async(p)
            else:  # accumulate locally; zero_grad() now would lose this pass
                self._handles[p] = (None, None, None)
        return hook

    def _scale_factors(self):
        # Average with a predivide factor f: inputs * 1/f, result * f, and the
        # core's Average divides by the set size: sum(g / f) * f / size.
        if self._op == ops.Average:
            return 1.0 / self._predivide, self._predivide
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        compressed, ctx = self._compression.compress(p.grad)
        pre, post = self._scale_factors()
        handle = ops.allreduce_async_(compressed, name=self._names[p], op=self._op,
                                      prescale_factor=pre, postscale_factor=post,
                                      process_set=self._process_set)
        return handle, compressed, ctx

    def synchronize(self):
        """Wait for every gradient's allreduce and write the results back.
        Gradients whose hooks did not fire (parameters unused in this pass)
        are reduced here, so every rank submits the same set of tensors."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad and p not in self._handles:
                    self._handles[p] = (None, None, None)
        # Start the missing ones in a fixed order, then wait for all.
        for p in [p for p, entry in self._handles.items() if entry[0] is None]:
            self._handles[p] = self._allreduce_grad_async(p)
        try:
            for p, (handle, compressed, ctx) in self._handles.items():
                handle.wait()
                if compressed is not p.grad:
                    with torch.no_grad():
                        p.grad.copy_(self._compression.decompress(compressed, ctx))
        finally:
            for p in self._handles:
                self._delay[p] = self.backward_passes_per_step
            self._handles.clear()
        self._synchronized = True

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
                warnings.warn("optimizer.step() called after optimizer.synchronize() without "
                              "optimizer.skip_synchronize(): gradients are reduced twice.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(); the pending allreduces still "
                "write into the gradients.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=ops.Average,
                         gradient_predivide_factor=1.0, process_set=global_process_set):
    """Wrap a torch optimizer so that step() applies gradients averaged over
    all ranks (or `process_set`).

    named_parameters: model.named_parameters(), for readable tensor names.
    compression: Compression.none or Compression.fp16 (gradients travel as
    float16). backward_passes_per_step: backward passes accumulated locally
    before each allreduce. op: Average (default), Sum, ...
    gradient_predivide_factor: with Average, divide by f before the sum and
    by size/f after it (guards float16 against overflow)."""
    if gradient_predivide_factor != 1.0 and op != ops.Average:
        raise ValueError("gradient_predivide_factor needs op=Average")
    if backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be >= 1")
    size()  # fail early with HvdNotInitializedError rather than in a hook
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, process_set)
