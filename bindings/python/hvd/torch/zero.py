"""ZeroRedundancyOptimizer: data parallelism with the optimizer state
sharded over the ranks (ZeRO stage 1 and 2, Rajbhandari et al., 2020).

    opt = hvd.ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                      lr=1e-3)
    loss.backward(); opt.step()

It replaces DistributedOptimizer (it averages the gradients itself). Each
param group's trainable parameters are moved into one flat buffer (each
parameter becomes a view of it) cut into buckets of consecutive parameters
(bucket_cap_mb). Every bucket's gradients are reduce-scattered (averaged,
hvd.reducescatter's split: n // size elements each, the first n % size
ranks one more), so each rank owns one block of every bucket; the wrapped
optimizer (optimizer_class(..., **defaults)) steps only those blocks, so
its state is 1/size of the unsharded one; then every bucket's blocks are
allgathered back into the parameters.

stage=1 reduce-scatters in step(); p.grad keeps the full averaged-later
gradient until zero_grad. stage=2 reduce-scatters each bucket during
backward, as soon as its gradients are ready, and drops the full gradients
(p.grad is None after backward): only this rank's gradient blocks remain.
Several backward passes before step() add up (each pass is reduced).

The wrapped optimizer must work element by element (SGD, Adam, AdamW,
RMSprop, Adagrad, ...): a block is a 1-d slice across parameter
boundaries, so per-tensor norms (LAMB, LARS) would be wrong.
"""
import torch

from .. import ops
from ..objects import allgather_object
from ..process_sets import global_process_set


def _set_rank_size(process_set):
    from ..basics import rank, size
    if process_set is global_process_set:
        return rank(), size()
    return process_set.rank(), process_set.size()


def _block(n, nranks, r):
    """[start, end) of rank r in hvd's reducescatter split of n elements."""
    base, extra = divmod(n, nranks)
    start = r * base + min(r, extra)
    return start, start + base + (1 if r < extra else 0)


class _Bucket:
    __slots__ = ("key", "params", "flat", "start", "end", "shard", "ready", "pending",
                 "submitted")

    def __init__(self, key, params, flat, start, end):
        self.key, self.params, self.flat = key, params, flat
        self.start, self.end = start, end
        self.shard = flat[start:end]  # a leaf view: the wrapped optimizer steps it in place
        self.ready = set()            # stage 2: indices of members whose gradient came
        self.pending = None           # reducescatter Handle
        self.submitted = False        # reduce-scattered in this step (pending or harvested)


class ZeroRedundancyOptimizer(torch.optim.Optimizer):
    """ZeroRedundancyOptimizer(params, optimizer_class, process_set=global_process_set,
    stage=2, bucket_cap_mb=25, **defaults): see the module's docstring.

    state_dict(): this rank's shard (load it back with load_state_dict on
    the same number of ranks). consolidate_state_dict(to=0): collective;
    returns on rank `to` the state dict the unsharded optimizer_class would
    have (loadable into it, or into this class on any number of ranks),
    None elsewhere. local_state_bytes(): bytes of this rank's optimizer
    state."""

    def __init__(self, params, optimizer_class, process_set=global_process_set, stage=2,
                 bucket_cap_mb=25, **defaults):
        if stage not in (1, 2):
            raise ValueError("ZeroRedundancyOptimizer: stage must be 1 or 2, not %r" % (stage,))
        super().__init__(params, defaults)
        self._process_set = process_set
        self._stage = stage
        self._rank, self._size = _set_rank_size(process_set)
        cap = max(1, int(bucket_cap_mb * 1024 * 1024))
        self._buckets = []        # all buckets, group by group
        self._group_buckets = []  # per param group: its buckets
        for gi, group in enumerate(self.param_groups):
            trainable = [p for p in group["params"] if p.requires_grad]
            self._group_buckets.append(self._make_buckets(gi, trainable, cap))
        inner_groups = []
        for group, buckets in zip(self.param_groups, self._group_buckets):
            g = {k: v for k, v in group.items() if k != "params"}
            g["params"] = [b.shard for b in buckets]
            inner_groups.append(g)
        self.optim = optimizer_class(inner_groups, **defaults)
        self._accs = []
        if stage == 2:
            for b in self._buckets:
                for i, p in enumerate(b.params):
                    acc = p.expand_as(p).grad_fn.next_functions[0][0]
                    acc.register_hook(self._make_hook(b, i))
                    self._accs.append(acc)

    def _make_buckets(self, gi, params, cap):
        if not params:
            return []
        p0 = params[0]
        for p in params:
            if p.dtype != p0.dtype or p.device != p0.device:
                raise ValueError("ZeroRedundancyOptimizer: param group %d mixes dtypes or "
                                 "devices (%s on %s and %s on %s); put them in separate groups"
                                 % (gi, p0.dtype, p0.device, p.dtype, p.device))
        flat = torch.empty(sum(p.numel() for p in params), dtype=p0.dtype, device=p0.device)
        offset = 0
        with torch.no_grad():
            for p in params:
                n = p.numel()
                flat[offset:offset + n].copy_(p.reshape(-1))
                p.data = flat[offset:offset + n].view_as(p)
                offset += n
        buckets, current, start, size = [], [], 0, 0
        offset = 0
        for p in params + [None]:
            nbytes = 0 if p is None else p.numel() * p.element_size()
            if current and (p is None or size + nbytes > cap):
                view = flat[start:offset]
                lo, hi = _block(view.numel(), self._size, self._rank)
                b = _Bucket("zero.g%d.b%d" % (gi, len(buckets)), current, view, lo, hi)
                buckets.append(b)
                self._buckets.append(b)
                current, start, size = [], offset, 0
            if p is not None:
                current.append(p)
                size += nbytes
                offset += p.numel()
        return buckets

    # ------------------------------------------------------------ gradients

    def _make_hook(self, bucket, index):
        def hook(*_ignored):
            bucket.ready.add(index)
            if len(bucket.ready) == len(bucket.params):
                self._submit(bucket)
        return hook

    def _submit(self, bucket):
        if bucket.pending is not None:  # a previous pass of this step: add it first
            self._harvest(bucket)
        grads = []
        for p in bucket.params:
            g = p.grad
            grads.append(torch.zeros_like(p).reshape(-1) if g is None else g.reshape(-1))
            if self._stage == 2:
                p.grad = None  # only this rank's block is kept
        flat = torch.cat(grads)
        bucket.pending = ops.reducescatter_async(flat, name=bucket.key, op=ops.Average,
                                                 process_set=self._process_set)
        bucket.ready.clear()
        bucket.submitted = True
        if self._stage == 2:
            # Free the flat copies of buckets already reduced, so that few
            # full-size buckets are alive at once during backward.
            for b in self._buckets:
                if b is not bucket and b.pending is not None and b.pending.poll():
                    self._harvest(b)

    def _harvest(self, bucket):
        block = bucket.pending.wait()
        bucket.pending = None
        shard = bucket.shard
        if shard.grad is None:
            shard.grad = block.clone()  # hvd's result buffer goes back to hvd
        else:
            shard.grad.add_(block)

    def _reduce_gradients(self):
        for b in self._buckets:
            # Stage 2 submitted the complete buckets in backward; what is
            # left had some (unused parameters: zeros) or all gradients missing.
            # (Not `pending is None`: a bucket harvested early is done, and
            # whether it was harvested early differs between ranks.)
            if self._stage == 1 or b.ready or not b.submitted:
                self._submit(b)
        for b in self._buckets:
            if b.pending is not None:
                self._harvest(b)
            b.submitted = False

    def _sync_hyperparameters(self):
        # LR schedulers and users change self.param_groups; the wrapped
        # optimizer steps with its own copies.
        for outer, inner in zip(self.param_groups, self.optim.param_groups):
            for k, v in outer.items():
                if k != "params":
                    inner[k] = v

    def _allgather_parameters(self):
        handles = [ops.allgather_async(b.shard, name=b.key + ".params",
                                       process_set=self._process_set) for b in self._buckets]
        with torch.no_grad():
            for b, h in zip(self._buckets, handles):
                b.flat.copy_(h.wait())

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._reduce_gradients()
        self._sync_hyperparameters()
        self.optim.step()
        self._allgather_parameters()
        return loss

    def zero_grad(self, *args, **kwargs):
        if any(b.submitted for b in self._buckets):
            raise AssertionError("ZeroRedundancyOptimizer.zero_grad() between backward and "
                                 "step(): reduce-scatters of this step are still running")
        for b in self._buckets:
            b.shard.grad = None
            b.ready.clear()
        super().zero_grad(*args, **kwargs)

    # ---------------------------------------------------------------- state

    def local_state_bytes(self):
        """Bytes of tensors in this rank's optimizer state."""
        return sum(v.numel() * v.element_size() for st in self.optim.state.values()
                   for v in st.values() if isinstance(v, torch.Tensor))

    def _shard_layout(self):
        return {"rank": self._rank, "size": self._size,
                "buckets": [(b.flat.numel(), b.start, b.end) for b in self._buckets]}

    def state_dict(self):
        sd = self.optim.state_dict()
        sd["zero"] = self._shard_layout()
        return sd

    def load_state_dict(self, state_dict):
        """This rank's shard (from state_dict() on the same ranks), or a
        full, unsharded state dict (consolidate_state_dict's, or the
        unsharded optimizer_class's)."""
        if "zero" in state_dict:
            layout = state_dict["zero"]
            if layout != self._shard_layout():
                raise ValueError(
                    "ZeroRedundancyOptimizer.load_state_dict on rank %d: the shard was saved by "
                    "rank %d of %d with other buckets; load a consolidated state dict instead"
                    % (self._rank, layout["rank"], layout["size"]))
            sd = {k: v for k, v in state_dict.items() if k != "zero"}
        else:
            sd = self._shard_of(state_dict)
        self.optim.load_state_dict(sd)
        for outer, inner in zip(self.param_groups, self.optim.param_groups):
            for k, v in inner.items():
                if k != "params":
                    outer[k] = v

    def _full_indices(self):
        """For each bucket, the unsharded state dict's index of each member
        (torch numbers the parameters of all groups in order)."""
        index_of, i = {}, 0
        for group in self.param_groups:
            for p in group["params"]:
                index_of[id(p)] = i
                i += 1
        return [[index_of[id(p)] for p in b.params] for b in self._buckets]

    def _shard_of(self, full):
        if len(full["param_groups"]) != len(self.param_groups):
            raise ValueError("ZeroRedundancyOptimizer.load_state_dict: %d param groups, this "
                             "optimizer has %d" % (len(full["param_groups"]),
                                                   len(self.param_groups)))
        state = {}
        for k, (b, idxs) in enumerate(zip(self._buckets, self._full_indices())):
            per_param = [full["state"].get(i, full["state"].get(str(i))) for i in idxs]
            if all(s is None for s in per_param):
                continue
            mine = {}
            keys = set().union(*(s.keys() for s in per_param if s is not None))
            for key in sorted(keys):
                values = [None if s is None else s.get(key) for s in per_param]
                first = next(v for v in values if v is not None)
                if isinstance(first, torch.Tensor) and first.shape == b.params[
                        values.index(first)].shape:
                    parts = [torch.zeros_like(p).reshape(-1) if v is None else v.reshape(-1)
                             for p, v in zip(b.params, values)]
                    mine[key] = torch.cat(parts)[b.start:b.end].clone()
                else:
                    mine[key] = first.clone() if isinstance(first, torch.Tensor) else first
            state[k] = mine
        groups, k = [], 0
        for fg, buckets in zip(full["param_groups"], self._group_buckets):
            g = {key: v for key, v in fg.items() if key != "params"}
            g["params"] = list(range(k, k + len(buckets)))
            k += len(buckets)
            groups.append(g)
        return {"state": state, "param_groups": groups}

    def consolidate_state_dict(self, to=0):
        """Collective over the process set: the full state dict on rank `to`
        (as the unsharded optimizer_class's state_dict()), None elsewhere."""
        local = self.optim.state_dict()
        # Which keys each bucket's state has, and whether they are per
        # element (shaped like the block) or per bucket (Adam's step).
        kinds = {}
        for k, b in enumerate(self._buckets):
            for key, v in local["state"].get(k, {}).items():
                kinds[(k, key)] = isinstance(v, torch.Tensor) and v.shape == b.shard.shape
        all_kinds = {}
        for theirs in allgather_object(kinds, name="zero.consolidate.keys",
                                       process_set=self._process_set):
            for kk, per_element in theirs.items():
                all_kinds[kk] = all_kinds.get(kk, True) and per_element
        gathered = {}
        for (k, key) in sorted(all_kinds):
            b = self._buckets[k]
            v = local["state"].get(k, {}).get(key)
            if all_kinds[(k, key)]:
                block = v if v is not None else b.shard.new_zeros(b.shard.shape)
                gathered[(k, key)] = ops.allgather(block.contiguous(),
                                                   name="zero.consolidate.%d.%s" % (k, key),
                                                   process_set=self._process_set)
            else:
                gathered[(k, key)] = v
        if self._rank != to:
            return None
        state = {}
        for k, (b, idxs) in enumerate(zip(self._buckets, self._full_indices())):
            keys = [key for (kk, key) in all_kinds if kk == k]
            offset = 0
            for p, i in zip(b.params, idxs):
                n = p.numel()
                st = {}
                for key in keys:
                    v = gathered[(k, key)]
                    if all_kinds[(k, key)]:
                        st[key] = v[offset:offset + n].view_as(p).clone()
                    else:
                        st[key] = v.clone() if isinstance(v, torch.Tensor) else v
                if st:
                    state[i] = st
                offset += n
        groups, i = [], 0
        for outer, inner in zip(self.param_groups, local["param_groups"]):
            g = {key: v for key, v in inner.items() if key != "params"}
            g["params"] = list(range(i, i + len(outer["params"])))
            i += len(outer["params"])
            groups.append(g)
        return {"state": state, "param_groups": groups}
