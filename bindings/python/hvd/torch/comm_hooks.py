"""Communication hooks for hvd.torch.DistributedOptimizer (DDP's contract).

    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   comm_hook=hvd.comm_hooks.powerSGD_hook,
                                   comm_hook_state=hvd.comm_hooks.PowerSGDState(rank=4))

With a hook, gradients are reduced in buckets (the `groups=` given, or
consecutive parameters up to `bucket_cap_mb`, filled in backward order).
Once every gradient of a bucket is ready, the optimizer copies them into one
flat tensor and calls `hook(state, bucket)`; the hook starts whatever
collectives it likes and returns a future (anything with `wait()`: a
`Future` here, a `torch.futures.Future`, or a plain tensor) whose value is
the flat bucket averaged over the process set. synchronize()/step() waits
for it and copies the result into the gradients.

Hooks must average (not sum): the optimizer's op must be Average.
"""
import numpy as np
import torch

from .. import ops
from ..process_sets import global_process_set

_payload_bytes = [0]


def payload_bytes():
    """Bytes handed to allreduce by the built-in hooks in this process
    (per rank, input size; the wire carries about 2(n-1)/n times this with
    a ring). reset_payload_bytes() zeroes it."""
    return _payload_bytes[0]


def reset_payload_bytes():
    _payload_bytes[0] = 0


def set_size(process_set):
    from ..basics import size
    return size() if process_set is global_process_set else process_set.size()


class GradBucket:
    """The gradients of one bucket, as DDP's GradBucket, plus hvd's process
    set and a collective name unique to the bucket.

    buffer(): the flat gradients (this rank's, 1-d, contiguous);
    gradients(): views of buffer() shaped like each parameter;
    parameters(), names(): the parameters and their names;
    index(): the bucket's position (fixed over steps);
    is_last(): the last bucket handed to the hook in this step;
    set_buffer(t): replace the flat buffer (gradients() follows);
    process_set, name: to pass to hvd's collectives (name plus a suffix of
    the hook's own when it runs several collectives)."""

    def __init__(self, index, buffer, params, names, process_set, name, is_last):
        self._index, self._buffer = index, buffer
        self._params, self._names = params, names
        self.process_set, self.name, self._is_last = process_set, name, is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._buffer

    def set_buffer(self, tensor):
        if tensor.numel() != self._buffer.numel():
            raise ValueError("GradBucket.set_buffer: %d elements, the bucket has %d"
                             % (tensor.numel(), self._buffer.numel()))
        self._buffer = tensor

    def gradients(self):
        views, offset = [], 0
        for p in self._params:
            n = p.numel()
            views.append(self._buffer[offset:offset + n].view_as(p))
            offset += n
        return views

    def parameters(self):
        return list(self._params)

    def names(self):
        return list(self._names)

    def is_last(self):
        return self._is_last


class Future:
    """A result computed when first waited for: `wait()` runs the waiter
    (an hvd Handle's wait, a callback), and if that returns another future,
    waits for it too. `then(fn)` chains fn(future) like torch's Future.then,
    so a hook can start its next collective only once the previous one is
    done without a thread of its own."""

    __slots__ = ("_waiter", "_value", "_done")

    def __init__(self, waiter):
        self._waiter, self._value, self._done = waiter, None, False

    @staticmethod
    def of_handle(handle):
        return Future(handle.wait)

    @staticmethod
    def completed(value):
        fut = Future(None)
        fut._value, fut._done = value, True
        return fut

    def done(self):
        return self._done

    def wait(self):
        if not self._done:
            value = self._waiter()
            while hasattr(value, "wait") and not isinstance(value, torch.Tensor):
                value = value.wait()
            self._value, self._done, self._waiter = value, True, None
        return self._value

    def value(self):
        return self.wait()

    def then(self, fn):
        return Future(lambda: fn(self))


def _allreduce(tensor, name, process_set):
    """Average `tensor` in place over the set; a Future of it."""
    _payload_bytes[0] += tensor.numel() * tensor.element_size()
    return Future.of_handle(ops.allreduce_async_(tensor, name=name, op=ops.Average,
                                                 process_set=process_set))


def allreduce_hook(state, bucket):
    """The default: average the flat bucket as it is (the gradients of
    DistributedOptimizer without a hook; bit for bit on 2 ranks, where the
    order of the sum cannot differ)."""
    return _allreduce(bucket.buffer(), bucket.name, bucket.process_set)


def _cast_hook(dtype):
    def hook(state, bucket):
        buf = bucket.buffer()
        # Divide before the sum so that float16 does not overflow.
        low = buf.to(dtype).div_(set_size(bucket.process_set))
        _payload_bytes[0] += low.numel() * low.element_size()
        handle = ops.allreduce_async_(low, name=bucket.name, op=ops.Sum,
                                      process_set=bucket.process_set)

        def decompress(fut):
            buf.copy_(fut.wait())
            return buf
        return Future.of_handle(handle).then(decompress)
    return hook


fp16_compress_hook = _cast_hook(torch.float16)
fp16_compress_hook.__name__ = "fp16_compress_hook"
fp16_compress_hook.__doc__ = ("Reduce the bucket as float16 (half the bytes), divided by the "
                              "set's size first; back to the gradients' dtype afterwards.")
bf16_compress_hook = _cast_hook(torch.bfloat16)
bf16_compress_hook.__name__ = "bf16_compress_hook"
bf16_compress_hook.__doc__ = ("Reduce the bucket as bfloat16 (half the bytes, float32's "
                              "range); back to the gradients' dtype afterwards.")


# ------------------------------------------------------------------ PowerSGD

class PowerSGDState:
    """PowerSGD's settings and memory (Vogels et al., 2019).

    rank (matrix_approximation_rank): r of the rank-r approximation.
    start_powerSGD_iter: steps reduced uncompressed first (PowerSGD's error
    feedback works badly on the first, large gradients).
    min_compression_rate: a matrix n x m is compressed only if
    (n + m) * r * min_compression_rate <= n * m; 1-d tensors never are.
    use_error_feedback: add what the approximation lost to the next step's
    gradient. warm_start: start from the previous step's Q instead of a new
    random one. orthogonalization_epsilon: added to norms in Gram-Schmidt
    (a zero column would divide by zero). random_seed: the seed every rank
    draws Q from (the same on all ranks).

    compression_stats(): (compression rate, numel before, numel after) of
    what the last PowerSGD steps sent."""

    def __init__(self, process_set=None, matrix_approximation_rank=1, start_powerSGD_iter=1000,
                 min_compression_rate=2, use_error_feedback=True, warm_start=True,
                 orthogonalization_epsilon=0, random_seed=0, rank=None):
        if rank is not None:
            matrix_approximation_rank = rank
        if matrix_approximation_rank < 1:
            raise ValueError("PowerSGDState: matrix_approximation_rank must be >= 1, not %d"
                             % matrix_approximation_rank)
        self.process_set = process_set
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.iter = 0
        self.error_dict = {}
        self.p_memory_dict = {}
        self.q_memory_dict = {}
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0

    def maybe_increase_iter(self, bucket):
        if bucket.is_last():
            self.iter += 1

    def compression_stats(self):
        before, after = self.total_numel_before_compression, self.total_numel_after_compression
        return (before / after if after else 0.0), before, after


def _orthogonalize(matrix, epsilon):
    """Gram-Schmidt on the columns of `matrix` (n x r), in place."""
    r = matrix.shape[1]
    for i in range(r):
        col = matrix[:, i:i + 1]
        norm = torch.norm(col)
        # Without epsilon, a zero column stays zero instead of becoming NaN.
        col.div_(norm + epsilon if epsilon else norm.clamp_min(torch.finfo(col.dtype).tiny))
        if i + 1 < r:
            rest = matrix[:, i + 1:]
            rest.sub_(col @ (col.t() @ rest))


def _should_compress(n, m, r, min_rate):
    return n * m >= (n + m) * r * min_rate


def powerSGD_hook(state, bucket):
    """Rank-r PowerSGD: each matrix-shaped gradient M (n x m, dims after the
    first flattened) travels as P = M Q (n x r) and Q = M^T P (m x r), with
    P orthogonalised between the two averages; the approximation P Q^T
    replaces M. 1-d gradients and matrices too small to gain are averaged
    uncompressed in one flat tensor. Error feedback and warm start as in
    torch's powerSGD_hook. Before state.start_powerSGD_iter, allreduce_hook."""
    ps = bucket.process_set if state.process_set is None else state.process_set
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return _allreduce(bucket.buffer(), bucket.name, ps)

    buf = bucket.buffer()
    idx = bucket.index()
    r = state.matrix_approximation_rank
    if state.use_error_feedback:
        if idx in state.error_dict:
            buf.add_(state.error_dict[idx])
        else:
            state.error_dict[idx] = torch.zeros_like(buf)
        before = buf.clone()

    grads = bucket.gradients()
    plain, matrices = [], []
    for g in grads:
        if g.dim() > 1:
            m2 = g.reshape(g.shape[0], -1)  # a view: the buffer is contiguous
            n, m = m2.shape
            rr = min(n, m, r)
            if _should_compress(n, m, rr, state.min_compression_rate):
                matrices.append((m2, rr))
                state.total_numel_before_compression += n * m
                state.total_numel_after_compression += (n + m) * rr
                continue
        plain.append(g)
        state.total_numel_before_compression += g.numel()
        state.total_numel_after_compression += g.numel()

    futures = []
    if plain:
        flat = torch.cat([g.reshape(-1) for g in plain])

        def unpack_plain(fut):
            out = fut.wait()
            offset = 0
            for g in plain:
                g.copy_(out[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        futures.append(_allreduce(flat, bucket.name + ".powerSGD.plain", ps).then(unpack_plain))

    if matrices:
        p_size = sum(m.shape[0] * rr for m, rr in matrices)
        q_size = sum(m.shape[1] * rr for m, rr in matrices)
        fresh_q = not state.warm_start or idx not in state.q_memory_dict
        if idx not in state.p_memory_dict or state.p_memory_dict[idx].numel() != p_size:
            state.p_memory_dict[idx] = torch.empty(p_size, dtype=buf.dtype, device=buf.device)
        if fresh_q or state.q_memory_dict[idx].numel() != q_size:
            fresh_q = True
            state.q_memory_dict[idx] = torch.empty(q_size, dtype=buf.dtype, device=buf.device)
        p_flat, q_flat = state.p_memory_dict[idx], state.q_memory_dict[idx]
        ps_, qs_ = [], []
        po = qo = 0
        for m2, rr in matrices:
            n, m = m2.shape
            ps_.append(p_flat[po:po + n * rr].view(n, rr))
            qs_.append(q_flat[qo:qo + m * rr].view(m, rr))
            po += n * rr
            qo += m * rr
        if fresh_q:
            # The same seed on every rank: the same random Q everywhere.
            gen = torch.Generator().manual_seed(int(state.rng.randint(1_000_000_000)))
            for q in qs_:
                q.copy_(torch.randn(q.shape, generator=gen, dtype=q.dtype))
        for q in qs_:
            _orthogonalize(q, state.orthogonalization_epsilon)
        for (m2, _), p, q in zip(matrices, ps_, qs_):
            torch.matmul(m2, q, out=p)
        eps = state.orthogonalization_epsilon

        def compute_q(fut):
            fut.wait()
            for (m2, _), p, q in zip(matrices, ps_, qs_):
                _orthogonalize(p, eps)
                torch.matmul(m2.t(), p, out=q)
            return _allreduce(q_flat, bucket.name + ".powerSGD.Q", ps).then(decompress)

        def decompress(fut):
            fut.wait()
            for (m2, _), p, q in zip(matrices, ps_, qs_):
                torch.matmul(p, q.t(), out=m2)

        futures.append(_allreduce(p_flat, bucket.name + ".powerSGD.P", ps).then(compute_q))

    def finish():
        for fut in futures:
            fut.wait()
        if state.use_error_feedback:
            torch.sub(before, buf, out=state.error_dict[idx])
        state.maybe_increase_iter(bucket)
        return buf
    return Future(finish)
