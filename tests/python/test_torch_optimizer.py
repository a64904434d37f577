"""hvd.torch: DistributedOptimizer against a single-process reference,
compression, gradient accumulation, and the broadcast helpers."""
import numpy as np
import pytest
import torch

import hvd.torch as hvd

torch.set_num_threads(1)
STEPS = 6
BATCH_PER_RANK = 8


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def full_batch(n):
    g = torch.Generator().manual_seed(1234)
    x = torch.randn(BATCH_PER_RANK * n, 5, generator=g)
    y = torch.randn(BATCH_PER_RANK * n, 3, generator=g)
    return x, y


def shard(t, r):
    return t[r * BATCH_PER_RANK:(r + 1) * BATCH_PER_RANK]


def reference_weights(steps=STEPS):
    """A single process trained on the combined batch of all ranks, from
    the weights rank 0 broadcasts in train_distributed."""
    model = make_model(seed=100)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = full_batch(hvd.size())
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def train_distributed(passes=1, **kwargs):
    r = hvd.rank()
    model = make_model(seed=100 + r)  # different on each rank until broadcast
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters(),
                                   backward_passes_per_step=passes, **kwargs)
    x, y = full_batch(hvd.size())
    x, y = shard(x, r), shard(y, r)
    zero_grad_refused = False
    for _ in range(STEPS):
        opt.zero_grad()
        for xs, ys in zip(x.chunk(passes), y.chunk(passes)):
            # Each pass's loss is scaled so the accumulated gradient is the
            # mean over the rank's whole shard.
            (torch.nn.functional.mse_loss(model(xs), ys) / passes).backward()
            if passes > 1 and not zero_grad_refused:
                try:
                    opt.zero_grad()
                except AssertionError:
                    zero_grad_refused = True
        opt.step()
    return model, zero_grad_refused


def assert_same_on_all_ranks(model):
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rows = hvd.allgather(flat.unsqueeze(0))
    for k in range(1, rows.shape[0]):
        assert torch.equal(rows[0], rows[k]), "weights differ between rank 0 and rank %d" % k


def assert_close_to(model, expected, atol):
    for p, e in zip(model.parameters(), expected):
        torch.testing.assert_close(p.detach(), e, atol=atol, rtol=0)


@pytest.fixture(scope="module")
def reference(world):
    return reference_weights()


def test_matches_single_process_on_combined_batch(reference):
    model, _ = train_distributed()
    assert_same_on_all_ranks(model)
    assert_close_to(model, reference, atol=1e-5)


def test_gradient_predivide_factor(reference):
    model, _ = train_distributed(gradient_predivide_factor=2.0)
    assert_same_on_all_ranks(model)
    assert_close_to(model, reference, atol=1e-5)


def test_fp16_compression(reference):
    model, _ = train_distributed(compression=hvd.Compression.fp16)
    assert_same_on_all_ranks(model)
    assert_close_to(model, reference, atol=2e-3)


def test_backward_passes_per_step_2(reference):
    model, zero_grad_refused = train_distributed(passes=2)
    assert zero_grad_refused, "zero_grad between accumulation passes must raise"
    assert_same_on_all_ranks(model)
    assert_close_to(model, reference, atol=1e-5)


def test_hooks_start_allreduce_during_backward(world):
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    model(torch.ones(2, 5)).sum().backward()
    started = [entry[0] is not None for entry in opt._handles.values()]
    with pytest.raises(AssertionError):
        opt.zero_grad()  # allreduces are pending
    opt.step()
    assert len(started) == len(list(model.parameters())) and all(started)
    assert not opt._handles


def test_unused_parameter_is_still_reduced(world):
    r = hvd.rank()
    model = make_model()
    unused = torch.nn.Parameter(torch.zeros(2))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(list(model.parameters()) + [unused], lr=1.0))
    if r == 0:  # only rank 0 gives it a gradient
        (model(torch.ones(1, 5)).sum() + (unused * 2.0).sum()).backward()
    else:
        model(torch.ones(1, 5)).sum().backward()
    opt.step()
    # Average of [2, 2] (rank 0) and zeros (others): SGD moves by -lr * grad.
    expected = torch.full((2,), -2.0 / hvd.size())
    torch.testing.assert_close(unused.detach(), expected, atol=0, rtol=0)


def test_broadcast_parameters_state_dict_and_named(world):
    r = hvd.rank()
    model = make_model(seed=r)
    model.register_buffer("counter", torch.tensor(r, dtype=torch.int64))
    hvd.broadcast_parameters(model.state_dict(), root_rank=hvd.size() - 1)
    other = make_model(seed=r + 50)
    hvd.broadcast_parameters(list(other.named_parameters()), root_rank=0)
    expect_last = make_model(seed=hvd.size() - 1)
    expect_first = make_model(seed=50)
    for p, e in zip(model.parameters(), expect_last.parameters()):
        assert torch.equal(p, e)
    assert model.counter.item() == hvd.size() - 1
    for p, e in zip(other.parameters(), expect_first.parameters()):
        assert torch.equal(p, e)


def test_broadcast_optimizer_state(world):
    r = hvd.rank()
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1), betas=(0.9, 0.99 - 0.01 * r))
    for _ in range(r + 1):  # rank-dependent state
        opt.zero_grad()
        (model(torch.full((2, 5), float(r + 1))) ** 2).sum().backward()
        opt.step()
    root_state = hvd.broadcast_object(
        {k: {n: v.clone() for n, v in s.items()} for k, s in opt.state_dict()["state"].items()},
        root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    fresh = hvd.DistributedOptimizer(torch.optim.Adam(make_model().parameters(), lr=0.5 * (r + 1)))
    hvd.broadcast_optimizer_state(fresh, root_rank=0)  # empty state: initialised first
    state = opt.state_dict()
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["betas"] == (0.9, 0.99)
    for pid, entries in root_state.items():
        for name, value in entries.items():
            assert torch.equal(state["state"][pid][name], value), (pid, name)
    assert fresh.param_groups[0]["lr"] == 0.5
    assert len(fresh.state_dict()["state"]) == len(list(model.parameters()))


def test_torch_broadcast_object(world):
    got = hvd.broadcast_object({"epoch": 3 + hvd.rank()}, root_rank=0)
    assert got == {"epoch": 3}
