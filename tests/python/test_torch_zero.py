"""hvd.torch.ZeroRedundancyOptimizer (ZeRO stages 1 and 2) against the
unsharded DistributedOptimizer: parameters after several steps, uneven
blocks (parameter counts not divisible by the number of ranks, buckets
smaller than it), gradient accumulation, state_dict and consolidation.
Runs on 2, 3 and 4 ranks."""
import copy

import pytest
import torch

import hvd.torch as hvd

torch.set_num_threads(1)
STEPS = 5
BATCH_PER_RANK = 6
TINY_BUCKETS = 64 / (1024 * 1024)  # 64 bytes: one parameter per bucket


def make_model(seed=7):
    # 35 + 7 + 21 + 3 = 66 parameters: uneven on 4 ranks, and the 3-element
    # bias leaves a rank of 4 an empty block with one parameter per bucket.
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))


def batches(steps=STEPS, passes=1):
    g = torch.Generator().manual_seed(99)
    n = hvd.size() * BATCH_PER_RANK
    out = []
    for _ in range(steps):
        x, y = torch.randn(n, 5, generator=g), torch.randn(n, 3, generator=g)
        mine = slice(hvd.rank() * BATCH_PER_RANK, (hvd.rank() + 1) * BATCH_PER_RANK)
        xs, ys = x[mine], y[mine]
        out.append(list(zip(xs.chunk(passes), ys.chunk(passes))))
    return out


OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-3)),
    "adam": (torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.99))),
}


def train(model, opt, data, passes=1):
    for step in data:
        opt.zero_grad()
        for x, y in step:
            (torch.nn.functional.mse_loss(model(x), y) / passes).backward()
        opt.step()


def reference(name, data, passes=1, groups_of=None):
    cls, kw = OPTIMIZERS[name]
    model = make_model()
    params = model.parameters() if groups_of is None else groups_of(model)
    opt = hvd.DistributedOptimizer(cls(params, **kw), named_parameters=model.named_parameters(),
                                   backward_passes_per_step=passes)
    train(model, opt, data, passes)
    return model, opt


def zero(name, stage, bucket_cap_mb=25, groups_of=None):
    cls, kw = OPTIMIZERS[name]
    model = make_model()
    params = model.parameters() if groups_of is None else groups_of(model)
    return model, hvd.ZeroRedundancyOptimizer(params, optimizer_class=cls, stage=stage,
                                              bucket_cap_mb=bucket_cap_mb, **kw)


def assert_params_close(a, b):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6, msg=name)


def assert_same_on_all_ranks(model):
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rows = hvd.allgather(flat.unsqueeze(0))
    for k in range(1, rows.shape[0]):
        assert torch.equal(rows[0], rows[k]), "weights differ between rank 0 and rank %d" % k


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("stage", [1, 2])
@pytest.mark.parametrize("cap", [25, TINY_BUCKETS], ids=["one_bucket", "bucket_per_param"])
def test_matches_distributed_optimizer(world, name, stage, cap):
    data = batches()
    ref, ref_opt = reference(name, data)
    model, opt = zero(name, stage, cap)
    train(model, opt, data)
    assert_same_on_all_ranks(model)
    assert_params_close(model, ref)
    if stage == 2:  # the full gradients were dropped after their reduce-scatter
        assert all(p.grad is None for p in model.parameters())


def test_optimizer_state_is_sharded(world, capsys):
    data = batches(steps=2)
    for name in sorted(OPTIMIZERS):
        _, ref_opt = reference(name, data)
        model, opt = zero(name, 2)
        train(model, opt, data)
        full = sum(v.numel() * v.element_size() for st in ref_opt.state.values()
                   for v in st.values() if torch.is_tensor(v))
        mine = opt.local_state_bytes()
        per_rank = hvd.allgather_object(mine)
        with capsys.disabled():
            if hvd.rank() == 0:
                print("\n%s optimizer state on %d ranks: unsharded %d bytes per rank, sharded %s"
                      % (name, hvd.size(), full, per_rank))
        # One block per bucket: at most ceil(n / size) elements of each
        # per-element state, plus the per-bucket scalars (Adam's step).
        n = sum(p.numel() for p in model.parameters())
        per_element = 1 if name == "sgd_momentum" else 2
        bound = per_element * 4 * (n // hvd.size() + 1) + (8 if name == "adam" else 0)
        assert mine <= bound, (mine, bound)
        assert sum(per_rank) <= full + 8 * hvd.size()


def test_param_groups_and_lr_changes(world):
    def groups_of(model):
        return [{"params": model[0].parameters(), "lr": 0.05},
                {"params": model[2].parameters()}]
    data = batches()
    ref, ref_opt = reference("sgd_momentum", data, groups_of=groups_of)
    model, opt = zero("sgd_momentum", 2, TINY_BUCKETS, groups_of=groups_of)
    train(model, opt, data)
    assert_params_close(model, ref)
    # A schedule changes self.param_groups; step() passes it on.
    for o in (ref_opt, opt):
        for g in o.param_groups:
            g["lr"] *= 0.5
    train(model, opt, data[:2])
    train(ref, ref_opt, data[:2])
    assert_params_close(model, ref)


@pytest.mark.parametrize("stage", [1, 2])
def test_gradient_accumulation(world, stage):
    data = batches(passes=3)
    ref, _ = reference("adam", data, passes=3)
    model, opt = zero("adam", stage, TINY_BUCKETS)
    train(model, opt, data, passes=3)
    assert_params_close(model, ref)


def test_consolidate_state_dict(world):
    data = batches()
    ref, ref_opt = reference("adam", data)
    model, opt = zero("adam", 2, TINY_BUCKETS)
    train(model, opt, data)
    full = opt.consolidate_state_dict(to=0)
    expected = ref_opt.state_dict()
    if hvd.rank() == 0:
        assert sorted(full["state"]) == sorted(expected["state"])
        for i, st in expected["state"].items():
            assert sorted(full["state"][i]) == sorted(st)
            for key, v in st.items():
                torch.testing.assert_close(full["state"][i][key], v, rtol=1e-5, atol=1e-6,
                                           msg="state[%d][%s]" % (i, key))
        assert full["param_groups"][0]["betas"] == (0.8, 0.99)
        # It is a plain Adam state dict.
        plain = torch.optim.Adam(make_model().parameters(), lr=0.01)
        plain.load_state_dict(full)
    else:
        assert full is None

    # Loaded back on every rank, training goes on as the reference does.
    full = hvd.broadcast_object(full, root_rank=0)
    model2, opt2 = zero("adam", 1)  # other buckets, other stage: the full dict still fits
    with torch.no_grad():
        for p, q in zip(model2.parameters(), model.parameters()):
            p.copy_(q)
    opt2.load_state_dict(full)
    more = batches(steps=3)
    train(model2, opt2, more)
    train(ref, ref_opt, more)
    assert_params_close(model2, ref)


def test_local_state_dict_round_trip(world):
    data = batches()
    model, opt = zero("sgd_momentum", 2, TINY_BUCKETS)
    train(model, opt, data[:3])
    saved = copy.deepcopy(opt.state_dict())  # like torch's, it shares the live tensors
    assert saved["zero"]["rank"] == hvd.rank()
    weights = [p.detach().clone() for p in model.parameters()]
    train(model, opt, data[3:])

    model2, opt2 = zero("sgd_momentum", 2, TINY_BUCKETS)
    with torch.no_grad():
        for p, w in zip(model2.parameters(), weights):
            p.copy_(w)
    opt2.load_state_dict(saved)
    train(model2, opt2, data[3:])
    for p, q in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p, q)

    # Another rank's shard does not fit (its blocks differ).
    other = hvd.broadcast_object(saved, root_rank=1)
    if hvd.rank() != 1:
        with pytest.raises(ValueError, match="rank %d" % hvd.rank()):
            opt2.load_state_dict(other)


def test_bad_arguments(world):
    with pytest.raises(ValueError, match="stage"):
        hvd.ZeroRedundancyOptimizer(make_model().parameters(), torch.optim.SGD, stage=3, lr=0.1)
    mixed = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2).double())]
    with pytest.raises(ValueError, match="mixes dtypes"):
        hvd.ZeroRedundancyOptimizer(mixed, torch.optim.SGD, lr=0.1)


def test_zero_grad_between_backward_and_step(world):
    model, opt = zero("sgd_momentum", 2, TINY_BUCKETS)
    x, y = batches(steps=1)[0][0]
    torch.nn.functional.mse_loss(model(x), y).backward()
    with pytest.raises(AssertionError, match="between backward and step"):
        opt.zero_grad()
    opt.step()
    opt.zero_grad()  # fine after step
