"""hvd.torch features a Horovod script relies on: differentiable
collectives (checked by finite differences over the whole job),
SyncBatchNorm (against BatchNorm on the concatenated batch), the
hvd.elastic.TorchState path, is_homogeneous and Adasum (values at any
number of ranks, refusals and a training run). Runs at any np >= 2."""
import numpy as np
import pytest
import torch

import hvd.torch as hvd

torch.set_num_threads(1)


# ------------------------------------------------- differentiable collectives
#
# Exact gradients first: rank r's loss is sum(w_r * y_r) with known weights,
# and the gradient of the sum of all ranks' losses is computed by hand.

def test_collectives_without_grad_stay_plain(world):
    x = torch.ones(3)
    y = hvd.allreduce(x, op=hvd.Sum)
    z = hvd.allreduce(np.ones(3), op=hvd.Sum)  # numpy still works through hvd.torch
    assert not y.requires_grad and y.grad_fn is None
    assert isinstance(z, np.ndarray) and z.tolist() == [hvd.size()] * 3


def test_allreduce_sum_and_average_grad(world):
    r, n = hvd.rank(), hvd.size()
    x = torch.full((3,), float(r + 1), requires_grad=True)
    s = hvd.allreduce(x, op=hvd.Sum, name="grad.sum")
    a = hvd.allreduce(x, op=hvd.Average, prescale_factor=2.0, postscale_factor=0.5)
    ((s + 10 * a) * (r + 1)).sum().backward()
    tri = n * (n + 1) / 2
    assert s.requires_grad and torch.equal(s.detach(), torch.full((3,), tri))
    # d/dx_r sum_k w_k (s + 10 a) = sum_k w_k (1 + 10 * 2 * 0.5 / n)
    torch.testing.assert_close(x.grad, torch.full((3,), tri * (1 + 10 / n)), rtol=1e-6, atol=0)


def test_allreduce_min_max_product_grad(world):
    r, n = hvd.rank(), hvd.size()
    x = torch.tensor([float(r + 1), 5.0, -float(r)], requires_grad=True)  # column 1 ties
    mx = hvd.allreduce(x, op=hvd.Max)
    mn = hvd.allreduce(x, op=hvd.Min)
    pr = hvd.allreduce(x[:1], op=hvd.Product)
    (mx.sum() + 2 * mn.sum() + 3 * pr.sum()).backward()
    fact = float(np.prod(np.arange(1, n + 1)))
    expected = [
        (n if r == n - 1 else 0) + (2 * n if r == 0 else 0) + 3 * n * fact / (r + 1),
        n * 1.0 / n + 2 * n * 1.0 / n,           # a tie of all ranks: shared
        (n if r == 0 else 0) + (2 * n if r == n - 1 else 0),
    ]
    torch.testing.assert_close(x.grad, torch.tensor(expected), rtol=1e-6, atol=0)


def test_allgather_broadcast_alltoall_reducescatter_grad(world):
    r, n = hvd.rank(), hvd.size()
    rows = [k + 1 for k in range(n)]  # uneven allgather
    off = sum(rows[:r])
    total = sum(rows)
    xg = torch.zeros(rows[r], 2, requires_grad=True)
    g = hvd.allgather(xg)
    (g * torch.arange(total * 2.0).reshape(total, 2) * (r + 1)).sum().backward()

    xb = torch.full((2,), float(r), requires_grad=True)
    b = hvd.broadcast(xb, root_rank=n - 1)
    (b * (r + 1)).sum().backward()

    splits = [k + 1 for k in range(n)]  # rank r sends k + 1 rows to rank k
    xa = torch.arange(sum(splits) * 1.0, requires_grad=True)
    out, received = hvd.alltoall(xa, splits=splits)
    (out * (10 * r + 1)).sum().backward()

    xr = torch.ones(2 * n, 3, requires_grad=True)
    rs = hvd.reducescatter(xr, op=hvd.Average, postscale_factor=3.0)
    (rs * (r + 1)).sum().backward()

    weights = sum(k + 1 for k in range(n))
    assert g.shape == (total, 2)
    torch.testing.assert_close(
        xg.grad, weights * torch.arange(off * 2.0, (off + rows[r]) * 2.0).reshape(rows[r], 2))
    assert torch.equal(b.detach(), torch.full((2,), float(n - 1)))
    assert torch.equal(xb.grad, torch.full((2,), float(weights) if r == n - 1 else 0.0))
    assert received.tolist() == [r + 1] * n and not received.requires_grad
    # My rows for rank k went to k, whose loss weight is 10 k + 1.
    expected = torch.cat([torch.full((k + 1,), 10.0 * k + 1) for k in range(n)])
    assert torch.equal(xa.grad, expected)
    # Rank k owns rows 2k, 2k+1 of every input, scaled 3/n, weight k + 1.
    expected = torch.cat([torch.full((2, 3), 3.0 * (k + 1) / n) for k in range(n)])
    torch.testing.assert_close(xr.grad, expected)


def test_grouped_allreduce_and_compression_grad(world):
    r, n = hvd.rank(), hvd.size()
    a = torch.full((2,), float(r), requires_grad=True)
    b = torch.full((3,), 1.0, requires_grad=True)
    ga, gb = hvd.grouped_allreduce([a, b], op=hvd.Sum)
    c = hvd.allreduce(b, op=hvd.Sum, compression=hvd.Compression.fp16)
    (ga.sum() * (r + 1) + gb.sum() + c.sum()).backward()
    assert c.dtype == torch.float32 and torch.equal(c.detach(), torch.full((3,), float(n)))
    assert torch.equal(a.grad, torch.full((2,), n * (n + 1) / 2))
    assert torch.equal(b.grad, torch.full((3,), 2.0 * n))


def test_unsupported_gradients_are_refused(world):
    x = torch.ones(2 * hvd.size(), requires_grad=True)
    with pytest.raises(hvd.HvdInvalidArgument, match="Max takes no prescale"):
        hvd.allreduce(x, op=hvd.Max, prescale_factor=2.0)
    with pytest.raises(hvd.HvdInvalidArgument, match="grouped_allreduce: no gradient"):
        hvd.grouped_allreduce([x], op=hvd.Min)


# Finite differences over the whole job. torch.autograd.gradcheck needs a
# function of the same inputs on every rank, so every rank holds all ranks'
# inputs X (one flat float64 tensor, identical everywhere) and:
#   Z = allreduce(X, Average)        identity forward (X is the same
#                                    everywhere); backward averages the
#                                    ranks' gradients, giving the full VJP
#   y = collective(Z[my part])       the collective under test
#   Y = allgather(y)                 every rank's output, on every rank
# Perturbing X perturbs one rank's input on all ranks at once, so every rank
# takes part in every collective in the same order. The hand-computed tests
# above check the same backwards on exact values.

def _global_check(shapes, collective):
    """shapes[k]: rank k's input shape; collective(x) -> tensor or list."""
    r = hvd.rank()
    sizes = [int(np.prod(s)) for s in shapes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    g = torch.Generator().manual_seed(7)
    x_all = (torch.rand(offsets[-1], generator=g, dtype=torch.float64) + 0.5).requires_grad_()

    def whole_job(x):
        z = hvd.allreduce(x, op=hvd.Average)
        mine = z[offsets[r]:offsets[r + 1]].reshape(shapes[r])
        y = collective(mine)
        if isinstance(y, (list, tuple)):
            y = torch.cat([t.reshape(-1) for t in y])
        return hvd.allgather(y.reshape(1, -1) if y.dim() == 0 else y)

    # Fast mode compares J u with finite differences along one random u
    # (and v' J u), a few collectives instead of some per element; the seed
    # makes u and v the same on every rank.
    torch.manual_seed(3)
    return torch.autograd.gradcheck(whole_job, (x_all,), raise_exception=False, fast_mode=True)


def test_gradcheck_every_collective(world):
    n = hvd.size()
    equal = [(2, 3)] * n
    uneven = [(k + 1, 2) for k in range(n)]
    splits = [k % 2 + 1 for k in range(n)]  # rank r sends splits[k] rows to rank k
    # Min/Max/Product need distinct values: X is random in [0.5, 1.5).
    cases = {
        "allreduce sum scaled": (equal, lambda t: hvd.allreduce(
            t, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)),
        "allreduce average": (equal, lambda t: hvd.allreduce(t)),
        "allreduce max": (equal, lambda t: hvd.allreduce(t, op=hvd.Max)),
        "allreduce min": (equal, lambda t: hvd.allreduce(t, op=hvd.Min)),
        "allreduce product": (equal, lambda t: hvd.allreduce(t, op=hvd.Product)),
        "grouped allreduce": (equal, lambda t: hvd.grouped_allreduce([t, t[0] * 2.0],
                                                                     op=hvd.Average)),
        "allgather equal": (equal, lambda t: hvd.allgather(t)),
        "allgather uneven": (uneven, lambda t: hvd.allgather(t)),
        "broadcast": (equal, lambda t: hvd.broadcast(t, root_rank=1)),
        "alltoall equal": ([(2 * n, 2)] * n, lambda t: hvd.alltoall(t)),
        "alltoall splits": ([(sum(splits), 2)] * n, lambda t: hvd.alltoall(t, splits=splits)[0]),
        "reducescatter sum": ([(2 * n + 1, 2)] * n, lambda t: hvd.reducescatter(
            t, op=hvd.Sum, prescale_factor=2.0)),
        "reducescatter average": ([(2 * n, 2)] * n, lambda t: hvd.reducescatter(
            t, op=hvd.Average, postscale_factor=0.5)),
    }
    results = {name: _global_check(shapes, fn) for name, (shapes, fn) in cases.items()}
    assert [name for name, ok in results.items() if not ok] == []


# --------------------------------------------------------------- SyncBatchNorm

def _sync_bn_case(rows, shape, dtype, momentum, affine, steps=2):
    """Per-rank outputs, gradients and running statistics of SyncBatchNorm
    against BatchNorm on the concatenated batch, over `steps` steps."""
    r = hvd.rank()
    channels = shape[0]
    off, total = sum(rows[:r]), sum(rows)
    g = torch.Generator().manual_seed(11)
    ref = torch.nn.BatchNorm2d(channels, momentum=momentum, affine=affine).to(dtype) \
        if len(shape) == 3 else \
        torch.nn.BatchNorm1d(channels, momentum=momentum, affine=affine).to(dtype)
    bn = hvd.SyncBatchNorm(channels, momentum=momentum, affine=affine).to(dtype)
    if affine:
        with torch.no_grad():
            ref.weight.copy_(torch.rand(channels, generator=g) + 0.5)
            ref.bias.copy_(torch.randn(channels, generator=g))
            bn.weight.copy_(ref.weight)
            bn.bias.copy_(ref.bias)
    diffs = []
    for _ in range(steps):
        x = (torch.randn((total,) + shape, generator=g) * 3 + 2).to(dtype)
        w = torch.randn((total,) + shape, generator=g).to(dtype)
        xr = x.clone().requires_grad_()
        yr = ref(xr)
        (yr * w).sum().backward()
        xs = x[off:off + rows[r]].clone().requires_grad_()
        ys = bn(xs)
        (ys * w[off:off + rows[r]]).sum().backward()
        diffs.append(("y", ys, yr[off:off + rows[r]]))
        diffs.append(("dx", xs.grad, xr.grad[off:off + rows[r]]))
        if affine:
            # Local parameter gradients add up to the whole batch's.
            diffs.append(("dw", hvd.allreduce(bn.weight.grad, op=hvd.Sum),
                          ref.weight.grad.clone()))
            diffs.append(("db", hvd.allreduce(bn.bias.grad, op=hvd.Sum), ref.bias.grad.clone()))
            bn.zero_grad()
            ref.zero_grad()
    diffs.append(("running_mean", bn.running_mean.clone(), ref.running_mean.clone()))
    diffs.append(("running_var", bn.running_var.clone(), ref.running_var.clone()))
    bn.eval()
    ref.eval()
    x = torch.randn((3,) + shape, generator=g).to(dtype)
    diffs.append(("eval", bn(x), ref(x)))
    assert int(bn.num_batches_tracked) == steps
    return diffs


def test_sync_batch_norm_matches_batch_norm_on_the_whole_batch(world):
    n = hvd.size()
    uneven = [k + 2 for k in range(n)]
    one_empty = [3] * (n - 1) + [0]
    cases = [
        (uneven, (4,), torch.float64, 0.1, True, 1e-10),
        (uneven, (3, 4, 5), torch.float64, None, True, 1e-10),  # cumulative average
        (one_empty, (3, 2, 2), torch.float64, 0.3, False, 1e-10),
        ([5] * n, (4, 3, 3), torch.float32, 0.1, True, 2e-5),
    ]
    failures = []
    for rows, shape, dtype, momentum, affine, tol in cases:
        for what, got, want in _sync_bn_case(rows, shape, dtype, momentum, affine):
            if not torch.allclose(got.detach(), want.detach(), rtol=tol, atol=tol):
                failures.append("%s %s %s: max error %g" % (
                    rows, shape, what, (got - want).abs().max()))
    assert failures == []


def test_sync_batch_norm_convert_and_errors(world):
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 1), torch.nn.BatchNorm2d(2),
                                torch.nn.Sequential(torch.nn.BatchNorm1d(2)))
    weight = model[1].weight
    converted = hvd.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(converted[1], hvd.SyncBatchNorm) and converted[1].weight is weight
    assert isinstance(converted[2][0], hvd.SyncBatchNorm)
    bn = hvd.SyncBatchNorm(2)
    with pytest.raises(ValueError, match="at least 2-D"):
        bn(torch.ones(3))
    # One value per channel in the whole job: every rank raises.
    single = torch.ones(1 if hvd.rank() == 0 else 0, 2)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn(single)


# ---------------------------------------------------- elastic, is_homogeneous

def test_elastic_names_after_import_hvd_torch_as_hvd(world):
    import hvd.elastic as generic
    assert hvd.elastic.run is generic.run
    assert hvd.elastic.ObjectState is generic.ObjectState
    assert issubclass(hvd.elastic.TorchState, generic.ObjectState)
    assert hvd.elastic.HostsUpdatedInterrupt is generic.HostsUpdatedInterrupt


def test_torch_state_save_restore_sync(world):
    r, n = hvd.rank(), hvd.size()
    torch.manual_seed(r)  # different everywhere until sync
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sampler = hvd.elastic.ElasticSampler(list(range(10)), shuffle=False)
    state = hvd.elastic.TorchState(model, opt, sampler=sampler, epoch=r)
    sampler.record_batch(0, 2)  # every rank did 2 samples
    state.epoch += 5
    state.commit()
    committed = model.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(1.0)
    state.epoch = 100
    sampler.record_batch(1, 2)
    state.restore()
    restored_ok = torch.equal(model.weight, committed) and state.epoch == r + 5
    restored_processed = sampler.processed_num

    calls = []

    @hvd.elastic.run
    def train(state, scale):
        calls.append(scale)
        return state.epoch * scale

    result = train(state, 2)  # syncs from rank 0 first, then runs once
    weights = hvd.allgather(model.weight.detach().reshape(1, -1))
    indices = hvd.allgather(torch.tensor(list(iter(sampler))))
    assert restored_ok and restored_processed == 2 * n
    assert calls == [2] and result == 10
    assert all(torch.equal(weights[0], weights[k]) for k in range(n))
    assert 0 in opt.state_dict()["state"]  # the optimizer state was broadcast (initialised)
    # The rest of the epoch (indices 2n..9, padded to a multiple of n) over the ranks.
    remaining = list(range(2 * n, 10))
    per_rank = -(-len(remaining) // n)
    assert len(sampler) == per_rank
    assert sorted(set(indices.tolist())) == remaining


def test_torch_state_restore_if_needed(world, caplog):
    """restore_if_needed() copies back exactly the tensors changed since the
    commit, and leaves the state equal to the commit either way."""
    import logging
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model, opt, step=0)
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))

    def train_step():
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
        state.step += 1

    train_step()  # momentum exists from here on
    state.commit()
    committed = {k: v.clone() for k, v in model.state_dict().items()}
    momentum = {k: v["momentum_buffer"].clone() for k, v in opt.state.items()}
    data_ptrs = [p.data_ptr() for p in model.parameters()]

    def equal_to_commit():
        return (all(torch.equal(v, committed[k]) for k, v in model.state_dict().items()) and
                all(torch.equal(v["momentum_buffer"], momentum[k]) for k, v in opt.state.items())
                and state.step == 1 and [p.data_ptr() for p in model.parameters()] == data_ptrs)

    def restored_counts():
        lines = [r.getMessage() for r in caplog.records if "restore if needed" in r.getMessage()]
        caplog.clear()
        return lines[-1].split(": ", 1)[1] if lines else None

    caplog.set_level(logging.INFO, logger="hvd.elastic")
    # Forward and backward only (a failure in the gradient allreduce): only
    # the batch-norm statistics (running mean, var, batches) changed.
    opt.zero_grad()
    model(x).pow(2).sum().backward()
    opt.synchronize()
    state.step = 7
    state.restore_if_needed()
    after_backward = (equal_to_commit(), restored_counts())
    # A full step: the weights and momentum changed, all comes back.
    train_step()
    state.restore_if_needed()
    after_step = (equal_to_commit(), restored_counts())
    # Nothing at all since the last restore: only the buffers are copied.
    state.restore_if_needed()
    idle = (equal_to_commit(), restored_counts())
    # The same results as restore(): training goes on identically.
    train_step()
    via_if_needed = model[0].weight.detach().clone()
    state.restore()
    train_step()
    # 7 tensors in the model (4 parameters, 3 batch-norm buffers, always
    # copied), 4 momentum buffers.
    assert after_backward == (True, "3 tensors copied back, 8 unchanged since the commit kept")
    assert after_step == (True, "11 tensors copied back, 0 unchanged since the commit kept")
    assert idle == (True, "3 tensors copied back, 8 unchanged since the commit kept")
    assert torch.equal(model[0].weight, via_if_needed)


def test_torch_state_restore_if_needed_after_a_broken_sync(world, monkeypatch):
    """A broadcast in sync() that writes the parameters' memory (no version
    bump) and then fails: restore_if_needed must copy everything back."""
    import hvd.torch.elastic as torch_elastic
    model = torch.nn.Linear(3, 2)
    state = hvd.elastic.TorchState(model, step=0)
    committed = model.weight.detach().clone()

    def broken_broadcast(params, root_rank):
        for tensor in params.values():
            tensor.detach().numpy()[...] = 7.0  # what a receiving rank's memory sees
        raise RuntimeError("lost in the broadcast")

    monkeypatch.setattr(torch_elastic, "broadcast_parameters", broken_broadcast)
    with pytest.raises(RuntimeError, match="lost in the broadcast"):
        state._broadcast_state()
    state.restore_if_needed()
    assert torch.equal(model.weight, committed)


def test_is_homogeneous(world):
    flags = hvd.allgather(torch.tensor([int(hvd.is_homogeneous())]))
    sizes = hvd.allgather(torch.tensor([hvd.local_size()]))
    # Every rank of these tests runs on one host: one node, so homogeneous.
    assert flags.tolist() == [1] * hvd.size()
    assert sizes.tolist() == [hvd.size()] * hvd.size()


# ---------------------------------------------------------------- Adasum

def _power_of_two(n):
    return n & (n - 1) == 0


def test_adasum_values_and_refusals(world):
    """Any number of ranks: orthogonal vectors add, equal ones average,
    parallel ones (rank r holds (r + 1) v) give their mean."""
    r, n = hvd.rank(), hvd.size()
    orthogonal = np.zeros(2 * n, dtype=np.float32)
    orthogonal[2 * r] = r + 1
    added = hvd.allreduce(orthogonal, op=hvd.Adasum)
    same = torch.tensor([0.5, -1.25, 3.0], dtype=torch.float64)
    averaged = hvd.allreduce(same, op=hvd.Adasum)
    expected = np.zeros(2 * n, dtype=np.float32)
    expected[0::2] = np.arange(1, n + 1)
    assert np.array_equal(added, expected)
    if _power_of_two(n):
        assert torch.equal(averaged, same)
    else:  # weights 1/3, 2/3, ... round in double
        torch.testing.assert_close(averaged, same, rtol=4e-16, atol=0)
    v = torch.tensor([0.75, -2.0, 1.5, 3.25], dtype=torch.float64)
    mean = hvd.allreduce((r + 1) * v, op=hvd.Adasum)
    torch.testing.assert_close(mean, (n + 1) / 2 * v, rtol=1e-14, atol=0)
    with pytest.raises(hvd.HvdInvalidArgument, match="needs a floating-point input, got int32"):
        hvd.allreduce(np.ones(3, dtype=np.int32), op=hvd.Adasum)
    with pytest.raises(hvd.HvdInvalidArgument, match="no gradient for op Adasum"):
        hvd.allreduce(torch.ones(3, requires_grad=True), op=hvd.Adasum)


def test_adasum_distributed_optimizer_converges(world):
    """Linear regression, each rank on its own shard, gradients combined by
    Adasum through DistributedOptimizer(op=hvd.Adasum)."""
    r, n = hvd.rank(), hvd.size()
    g = torch.Generator().manual_seed(5)
    true_w = torch.tensor([[1.5], [-2.0], [0.5]], dtype=torch.float64)
    x = torch.randn(64 * n, 3, generator=g, dtype=torch.float64)
    y = x @ true_w + 0.3 + 0.01 * torch.randn(64 * n, 1, generator=g, dtype=torch.float64)
    xs, ys = x[r::n], y[r::n]
    torch.manual_seed(r)  # different start everywhere until the broadcast
    model = torch.nn.Linear(3, 1).double()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), op=hvd.Adasum)
    losses = []
    for _ in range(150):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rows = hvd.allgather(flat.unsqueeze(0))
    assert all(torch.equal(rows[0], rows[k]) for k in range(n))
    assert losses[-1] < 1e-3 < losses[0]
    torch.testing.assert_close(model.weight.detach(), true_w.t(), atol=0.02, rtol=0)
    torch.testing.assert_close(model.bias.detach(), torch.tensor([0.3], dtype=torch.float64),
                               atol=0.02, rtol=0)
