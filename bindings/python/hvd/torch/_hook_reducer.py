"""DistributedOptimizer's path when a comm_hook is given: gradients reduced
in buckets through the hook (comm_hooks.py has the contract).

Each bucket is handed to the hook once all its gradients are ready in this
step (after backward_passes_per_step passes); synchronize() hands over the
buckets whose gradients never came (unused parameters contribute zeros), in
bucket order, waits for every future and copies the results into p.grad.

With gradient views (DDP's gradient_as_bucket_view, _grad_buckets.py) each
bucket of contiguous CPU parameters gets its own shared buffer after the
first step, p.grad views of it: the hook is handed that buffer itself (no
concatenation), and a result that is that buffer needs no copy back.
"""
import zlib

import torch

from ._grad_buckets import GradBuckets, eligible, lay_out
from .comm_hooks import GradBucket


class _Bucket:
    __slots__ = ("index", "members", "names", "name", "count", "pending", "flat")

    def __init__(self, index, members):
        self.index, self.members = index, members
        self.names = [st.name for st in members]
        self.name = "bucket.%d#%08x" % (index, zlib.crc32("|".join(self.names).encode()))
        self.count = 0
        self.pending = None  # (future, GradBucket) once handed to the hook
        self.flat = None     # the shared buffer its gradients are views of


def _buckets_by_size(states, cap_bytes):
    """Consecutive parameters in backward order (last layer first, as their
    gradients arrive), a new bucket when the cap or the dtype/device would
    be crossed."""
    buckets, current, size = [], [], 0
    for st in reversed(states):
        p = st.param
        nbytes = p.numel() * p.element_size()
        if current and (size + nbytes > cap_bytes or p.dtype != current[0].param.dtype
                        or p.device != current[0].param.device):
            buckets.append(current)
            current, size = [], 0
        current.append(st)
        size += nbytes
    if current:
        buckets.append(current)
    return buckets


class HookReducer:
    def __init__(self, opt, states, groups, bucket_cap_mb, hook, hook_state, process_set,
                 views=False):
        self._opt = opt
        self._views = views  # lay the buckets out in shared buffers after the first step
        self._hook, self._state, self._process_set = hook, hook_state, process_set
        trainable = [st for st in states if st.param.requires_grad]
        if groups:
            by_id = {id(st.param): st for st in trainable}
            grouped = set()
            chunks = []
            for g in groups:
                chunks.append([by_id[id(p)] for p in g])
                grouped.update(id(p) for p in g)
            chunks += [[st] for st in trainable if id(st.param) not in grouped]
        else:
            chunks = _buckets_by_size(trainable, int(bucket_cap_mb * 1024 * 1024))
        for chunk in chunks:
            p0 = chunk[0].param
            if any(st.param.dtype != p0.dtype or st.param.device != p0.device for st in chunk):
                raise ValueError("DistributedOptimizer: a comm_hook bucket mixes dtypes or "
                                 "devices (%s); group parameters of one dtype and device"
                                 % ", ".join(st.name for st in chunk))
        self.buckets = [_Bucket(i, chunk) for i, chunk in enumerate(chunks)]
        self._submitted = 0
        self._accs = []
        for b in self.buckets:
            for st in b.members:
                acc = st.param.expand_as(st.param).grad_fn.next_functions[0][0]
                acc.register_hook(self._make_hook(st, b))
                self._accs.append(acc)

    def pending(self):
        return any(b.pending is not None or b.count for b in self.buckets)

    def _make_hook(self, st, bucket):
        opt = self._opt

        def hook(*_ignored):
            if opt._skip_backward_sync:
                return  # no_sync(): accumulate locally, reduce later
            if st.delay <= 0:
                raise AssertionError(
                    "Gradients were computed more than backward_passes_per_step times before "
                    "optimizer.step(); increase backward_passes_per_step to accumulate "
                    "gradients locally.")
            st.delay -= 1
            if st.delay == 0:
                bucket.count += 1
                if bucket.count == len(bucket.members):
                    self._submit(bucket)
        return hook

    def _submit(self, bucket):
        # A gradient its view cannot hold (replaced by the user with another
        # dtype or shape) sends the bucket the concatenating way.
        if bucket.flat is not None and all(GradBuckets.adopt(st) is st.view
                                           for st in bucket.members):
            self._hand_over(bucket, bucket.flat)
            return
        grads = []
        for st in bucket.members:
            p = st.param
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            if p.grad.is_sparse:
                raise ValueError("DistributedOptimizer: comm_hook needs dense gradients; %s is "
                                 "sparse" % st.name)
            grads.append(p.grad.reshape(-1))
        self._hand_over(bucket, torch.cat(grads) if len(grads) > 1 else grads[0].clone())

    def _hand_over(self, bucket, buf):
        self._submitted += 1
        gb = GradBucket(bucket.index, buf, [st.param for st in bucket.members], bucket.names,
                        self._process_set, bucket.name, self._submitted == len(self.buckets))
        bucket.pending = (self._hook(self._state, gb), gb)

    def synchronize(self):
        try:
            for b in self.buckets:
                if b.pending is None:
                    self._submit(b)
            for b in self.buckets:
                fut, gb = b.pending
                out = fut.wait() if hasattr(fut, "wait") else fut
                if isinstance(out, (list, tuple)):  # torch hooks: Future[List[Tensor]]
                    out = out[0]
                if out is b.flat:
                    continue  # reduced where the gradients are
                offset = 0
                with torch.no_grad():
                    for st in b.members:
                        p = st.param
                        n = p.numel()
                        p.grad.copy_(out[offset:offset + n].view_as(p))
                        offset += n
        finally:
            self.reset()
        if self._views:
            self._views = False
            for b in self.buckets:
                if all(eligible(st.param) and st.param.is_contiguous() for st in b.members):
                    b.flat = lay_out(b.members)
                    if b.flat is None:
                        return

    def reset(self):
        for b in self.buckets:
            b.pending, b.count = None, 0
            for st in b.members:
                st.delay = self._opt.backward_passes_per_step
        self._submitted = 0
