"""SyncBatchNorm: batch normalization with the statistics of the global batch.

In training, every rank contributes its (count, mean, sum of squared
deviations) per channel; one allgather gives each rank all of them and the
ranks combine them the same way (Chan's parallel variance), so the batch
may be uneven over the ranks, empty on some. Backward needs two global sums
per channel (of dy and of dy * (x - mean)): one allreduce. The gradients of
weight and bias stay local, like any parameter's: DistributedOptimizer
averages them.

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), hvd.SyncBatchNorm(8), ...)
    model = hvd.SyncBatchNorm.convert_sync_batchnorm(model)   # or convert a model

CPU and CUDA tensors; statistics are exchanged in float64 on the CPU (2C+1
numbers per rank).
"""
import torch
import torch.nn.functional as F
from torch.autograd.function import Function
from torch.nn.modules.batchnorm import _BatchNorm

from .. import ops
from ..basics import size
from ..process_sets import global_process_set, set_id


class SyncBatchNorm(_BatchNorm):
    """torch.nn.BatchNorm{1,2,3}d over the batch of all ranks of
    `process_set` (Horovod's hvd.SyncBatchNorm, plus `process_set`).

    Input (N, C, *). In eval mode with running statistics it is plain
    BatchNorm on the local input (the running statistics are equal on every
    rank because every rank updated them with the same global values)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=global_process_set, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device=device,
                         dtype=dtype)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("SyncBatchNorm: expected at least 2-D input (N, C, ...), got %d-D"
                             % input.dim())

    def _ranks(self):
        return size() if set_id(self.process_set) == 0 else self.process_set.size()

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None
                                            and self.running_var is None)
        # Running statistics are read in eval and updated in training when tracked.
        track = not self.training or self.track_running_stats
        running_mean = self.running_mean if track else None
        running_var = self.running_var if track else None
        if not use_batch_stats or self._ranks() == 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                use_batch_stats, factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, self.process_set)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_set=global_process_set):
        """A copy-free conversion: every torch.nn.BatchNorm*d in `module`
        replaced by a SyncBatchNorm holding the same parameters and buffers."""
        result = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            result = cls(module.num_features, module.eps, module.momentum, module.affine,
                         module.track_running_stats, process_set)
            if module.affine:
                result.weight = module.weight
                result.bias = module.bias
            result.running_mean = module.running_mean
            result.running_var = module.running_var
            result.num_batches_tracked = module.num_batches_tracked
            result.train(module.training)
        for name, child in module.named_children():
            result.add_module(name, cls.convert_sync_batchnorm(child, process_set))
        return result


def _channel_view(t, ndim):
    """A (C,) tensor shaped to broadcast over (N, C, *)."""
    return t.view([1, -1] + [1] * (ndim - 2))


def _compute_dtype(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _global_stats(x, process_set):
    """(count, mean, biased variance) per channel over every rank's x."""
    channels = x.shape[1]
    dims = [0] + list(range(2, x.dim()))
    count = x.numel() // channels if channels else 0
    local = torch.zeros(1, 2 * channels + 1, dtype=torch.float64)
    local[0, 0] = count
    if count > 0:
        var, mean = torch.var_mean(x.to(_compute_dtype(x.dtype)), dim=dims, unbiased=False)
        local[0, 1:channels + 1] = mean.detach().cpu().double()
        local[0, channels + 1:] = var.detach().cpu().double() * count
    # A stable name per channel count: the response cache hits from the
    # second step on, and layers of different widths never share a name.
    rows = ops.allgather(local, name="hvd.sync_batch_norm.stats.%d" % channels,
                         process_set=process_set)
    counts, means, m2s = rows[:, :1], rows[:, 1:channels + 1], rows[:, channels + 1:]
    total = counts.sum()
    if total <= 1:
        raise ValueError("SyncBatchNorm: expected more than 1 value per channel in the global "
                         "batch, got %d" % int(total))
    mean = (counts * means).sum(0) / total
    m2 = (m2s + counts * (means - mean) ** 2).sum(0)
    return int(total), mean, m2 / total


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, process_set):
        x = x.contiguous()
        total, mean64, var64 = _global_stats(x, process_set)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(
                mean64.to(running_mean.device, running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = var64 * total / (total - 1)
            running_var.mul_(1 - momentum).add_(
                unbiased.to(running_var.device, running_var.dtype), alpha=momentum)

        dtype = _compute_dtype(x.dtype)
        mean = mean64.to(x.device, dtype)
        invstd = torch.rsqrt(var64 + eps).to(x.device, dtype)
        y = (x.to(dtype) - _channel_view(mean, x.dim())) * _channel_view(invstd, x.dim())
        if weight is not None:
            y = y * _channel_view(weight.to(dtype), x.dim())
        if bias is not None:
            y = y + _channel_view(bias.to(dtype), x.dim())
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = total
        ctx.bias_dtype = None if bias is None else bias.dtype
        ctx.process_set = process_set
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, invstd = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        dtype, nd, channels = mean.dtype, x.dim(), x.shape[1]
        dims = [0] + list(range(2, nd))
        dy = dy.contiguous().to(dtype)
        xmu = x.to(dtype) - _channel_view(mean, nd)
        sum_dy = dy.sum(dims)
        sum_dy_xmu = (dy * xmu).sum(dims)

        dx = dw = db = None
        if need_x:
            sums = ops.allreduce(torch.cat([sum_dy, sum_dy_xmu]), op=ops.Sum,
                                 name="hvd.sync_batch_norm.grad.%d" % channels,
                                 process_set=ctx.process_set)
            mean_dy = sums[:channels] / ctx.total
            mean_dy_xmu = sums[channels:] / ctx.total
            scale = invstd if weight is None else invstd * weight.to(dtype)
            dx = (dy - _channel_view(mean_dy, nd)
                  - xmu * _channel_view(invstd * invstd * mean_dy_xmu, nd)) \
                * _channel_view(scale, nd)
            dx = dx.to(x.dtype)
        if weight is not None and need_w:
            dw = (sum_dy_xmu * invstd).to(weight.dtype)
        if ctx.bias_dtype is not None and need_b:
            db = sum_dy.to(ctx.bias_dtype)
        return dx, dw, db, None, None, None, None, None
