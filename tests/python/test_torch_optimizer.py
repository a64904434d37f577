"""hvd.torch: DistributedOptimizer against a single-process reference,
compression, gradient accumulation, gradients in shared buffers, and the
broadcast helpers."""
import os
import time

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


def train_distributed(passes=1, set_to_none=False, **kwargs):
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
        opt.zero_grad(set_to_none=set_to_none)
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


def shared_buffer_ranges():
    """(start, end) of each hvd_alloc_shared buffer this process maps."""
    ranges = []
    with open("/proc/self/maps") as f:
        for line in f:
            if "/dev/shm/hvd-buf." in line:
                ranges.append(tuple(int(a, 16) for a in line.split()[0].split("-")))
    return ranges


def in_shared_buffer(t, ranges):
    return any(lo <= t.data_ptr() < hi for lo, hi in ranges)


def assert_one_buffer_without_gaps(grads):
    """The gradients tile one stretch of memory: each starts where another ends."""
    spans = sorted((g.data_ptr(), g.data_ptr() + g.numel() * g.element_size()) for g in grads)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start == end, "gap or overlap between gradients: %#x, %#x" % (end, start)


@pytest.mark.parametrize("set_to_none", [False, True])
def test_gradients_become_views_of_shared_buffers(reference, set_to_none):
    """By default, where another rank shares the host, the gradients are
    views of one shared buffer from the second step on (zero_grad zeroing
    in place, or setting them to None and the hooks copying them back), and
    training matches the single-process reference as before."""
    if hvd.local_size() < 2:
        pytest.skip("no other rank on this host: gradients stay private by default")
    model, _ = train_distributed(set_to_none=set_to_none)
    assert_same_on_all_ranks(model)
    assert_close_to(model, reference, atol=1e-5)
    grads = [p.grad for p in model.parameters()]
    ranges = shared_buffer_ranges()
    assert all(in_shared_buffer(g, ranges) for g in grads), ranges
    assert_one_buffer_without_gaps(grads)


def test_gradient_as_bucket_view_false_keeps_them_private(reference):
    model, _ = train_distributed(gradient_as_bucket_view=False)
    assert_close_to(model, reference, atol=1e-5)
    ranges = shared_buffer_ranges()
    assert not any(in_shared_buffer(p.grad, ranges) for p in model.parameters())


def test_gradients_in_shared_buffers_move_two_bytes_per_byte(world):
    """One host, shared memory on: the step's fused allreduce reads and
    writes each gradient byte once (2 B/B), every collective between the
    ranks' shared buffers, instead of through the slots (4 B/B in the first
    step, on autograd's own gradients)."""
    if hvd.local_size() != hvd.size() or os.environ.get("HVD_SHARED_MEMORY") == "0":
        pytest.skip("ranks on more than one host, or no shared memory")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 256))  # 1 MiB of gradients
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())

    def step_stats():
        before = hvd.get_stats()  # raises unless hvd_get_stats returns HVD_OK
        opt.zero_grad()
        model(torch.full((4, 256), float(hvd.rank() + 1))).sum().backward()
        opt.step()
        after = hvd.get_stats()
        collectives = after["host_allreduces"] - before["host_allreduces"]
        assert collectives > 0
        mapped = (after["shm_mapped_calls"] - before["shm_mapped_calls"]) / collectives
        return (after["host_bytes_moved"] - before["host_bytes_moved"]) / (
            after["allreduced_bytes"] - before["allreduced_bytes"]), mapped

    assert step_stats() == (pytest.approx(4.0, abs=1e-3), 0.0)
    for _ in range(2):
        assert step_stats() == (pytest.approx(2.0, abs=1e-3), 1.0)


def test_stats_split_the_step_wait_into_slower_ranks_and_data(world):
    """hvd.get_stats(): the last rank starts backward 0.3 s late, so the
    others' step() waits at least 0.25 s for it (wait_negotiating_ns) and the
    late rank's wait for no one."""
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    model(torch.ones(2, 5)).sum().backward()
    opt.step()  # a first step, untimed
    opt.zero_grad()
    before = hvd.get_stats()
    assert set(before) == {"allreduced_bytes", "host_bytes_moved", "host_allreduces",
                           "shm_chosen_calls", "shm_streamed_calls", "shm_mapped_calls", "waits",
                           "wait_ns", "wait_negotiating_ns", "shm_backend_calls",
                           "shm_peer_read_calls"}
    late = hvd.rank() == hvd.size() - 1
    if late:
        time.sleep(0.3)
    model(torch.ones(2, 5)).sum().backward()
    opt.step()
    after = hvd.get_stats()
    d = {k: after[k] - before[k] for k in before}
    assert d["wait_negotiating_ns"] <= d["wait_ns"]
    if late:
        assert d["wait_negotiating_ns"] < 250e6, d
    else:
        assert d["waits"] >= 1 and d["wait_negotiating_ns"] >= 250e6, d


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
