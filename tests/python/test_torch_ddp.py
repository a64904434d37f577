"""What DDP users reach for, on hvd.torch.DistributedOptimizer: communication
hooks (the identity hook bitwise equal to the default path, fp16/bf16 close
to it, PowerSGD training scikit-learn's digits to within a point of the
uncompressed run) and no_sync() / backward_passes_per_step against a
single process accumulating by hand. On 2 ranks."""
import importlib.util
import os

import pytest
import torch

import hvd.torch as hvd
from hvd.torch import comm_hooks

torch.set_num_threads(1)
STEPS = 6
BATCH_PER_RANK = 8
HERE = os.path.dirname(os.path.abspath(__file__))


def make_model(seed=100):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 12),
                               torch.nn.Tanh(), torch.nn.Linear(12, 3))


def full_batches(steps=STEPS):
    g = torch.Generator().manual_seed(1234)
    n = BATCH_PER_RANK * hvd.size()
    return [(torch.randn(n, 5, generator=g), torch.randn(n, 3, generator=g))
            for _ in range(steps)]


def my_part(x):
    r = hvd.rank()
    return x[r * BATCH_PER_RANK:(r + 1) * BATCH_PER_RANK]


def train(opt_kwargs=None, steps=STEPS, lr=0.1):
    model = make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9),
                                   named_parameters=model.named_parameters(),
                                   **(opt_kwargs or {}))
    for x, y in full_batches(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(my_part(x)), my_part(y)).backward()
        opt.step()
    return model


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


# ------------------------------------------------------------------ hooks

@pytest.mark.parametrize("layout", [dict(), dict(bucket_cap_mb=0.0005), dict(groups=2)],
                         ids=["one_bucket", "small_buckets", "groups"])
def test_identity_hook_is_bitwise_the_default(world, layout):
    plain = flat(train())
    hooked = flat(train(dict(comm_hook=comm_hooks.allreduce_hook, **layout)))
    assert torch.equal(plain, hooked)


@pytest.mark.parametrize("hook", [comm_hooks.fp16_compress_hook, comm_hooks.bf16_compress_hook])
def test_low_precision_hooks_close_to_default(world, hook):
    plain = flat(train())
    hooked = flat(train(dict(comm_hook=hook, bucket_cap_mb=0.0005)))
    tol = 2e-3 if hook is comm_hooks.fp16_compress_hook else 2e-2
    torch.testing.assert_close(hooked, plain, rtol=0, atol=tol)
    assert not torch.equal(hooked, plain)  # it did go through the low precision


def test_bucket_contract(world):
    """What a user hook sees: DDP's GradBucket plus names and process set;
    a torch.futures.Future as the result works too."""
    seen = []

    def hook(state, bucket):
        grads = bucket.gradients()
        seen.append((state, bucket.index(), bucket.is_last(), bucket.names(),
                     [tuple(g.shape) for g in grads], bucket.buffer().numel(),
                     bucket.process_set))
        assert all(g.data_ptr() >= bucket.buffer().data_ptr() for g in grads)  # views
        fut = torch.futures.Future()
        fut.set_result(hvd.allreduce(bucket.buffer(), name=bucket.name))
        return fut

    plain = flat(train(steps=2))
    hooked = flat(train(dict(comm_hook=hook, comm_hook_state="S", bucket_cap_mb=0.0005), steps=2))
    assert torch.equal(plain, hooked)
    per_step = len(seen) // 2
    assert per_step > 1
    first = seen[:per_step]
    assert [s[2] for s in first] == [False] * (per_step - 1) + [True]
    assert sorted(s[1] for s in first) == list(range(per_step))
    assert all(s[0] == "S" and s[6] is hvd.global_process_set for s in first)
    # Backward order: the last layer's parameters come first.
    by_index = sorted(first, key=lambda s: s[1])
    assert by_index[0][3][0] == "grad.4.bias"
    names = [n for s in by_index for n in s[3]]
    assert sorted(names) == sorted("grad." + n for n, _ in make_model().named_parameters())
    for s in first:
        assert s[5] == sum(torch.Size(shape).numel() for shape in s[4])


def test_hook_buckets_are_the_gradients_in_shared_buffers(world):
    """Where another rank shares the host (gradient_as_bucket_view by
    default), from the second step on each bucket's buffer is a shared
    buffer whose views are the parameters' p.grad: the hook reduces the
    gradients where they are; the first step hands over a concatenation.
    Training stays bitwise the default path's."""
    if hvd.local_size() < 2:
        pytest.skip("no other rank on this host: gradients stay private by default")
    steps = []

    def hook(state, bucket):
        buf = bucket.buffer()
        grads = [p.grad for p in bucket.parameters()]
        steps.append(all(g.data_ptr() - buf.data_ptr() == 4 * offset
                         for g, offset in zip(grads, _offsets(grads))))
        return comm_hooks.allreduce_hook(state, bucket)

    plain = flat(train(steps=3))
    hooked = flat(train(dict(comm_hook=hook, bucket_cap_mb=0.0005), steps=3))
    assert torch.equal(plain, hooked)
    per_step = len(steps) // 3
    assert steps == [False] * per_step + [True] * (2 * per_step)
    model = make_model()
    private = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                       comm_hook=hook, gradient_as_bucket_view=False)
    del steps[:]
    for _ in range(2):
        model(torch.ones(1, 5)).sum().backward()
        private.step()
    assert not any(steps)


def _offsets(grads):
    offsets, at = [], 0
    for g in grads:
        offsets.append(at)
        at += g.numel()
    return offsets


def test_comm_hook_arguments(world):
    model = make_model()
    with pytest.raises(ValueError, match="op=Average"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Sum,
                                 comm_hook=comm_hooks.allreduce_hook)
    with pytest.raises(ValueError, match="callable"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), comm_hook=3)
    with pytest.raises(ValueError, match="matrix_approximation_rank"):
        comm_hooks.PowerSGDState(matrix_approximation_rank=0)


@pytest.mark.parametrize("warm_start", [True, False])
@pytest.mark.parametrize("error_feedback", [True, False])
def test_powerSGD_exact_for_low_rank_gradients(world, warm_start, error_feedback):
    """A gradient of rank r (one linear layer, the same r inputs on every
    rank, other targets) is reproduced exactly, up to rounding, by rank-r
    PowerSGD, step after step, with or without warm start and error
    feedback."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(6, 4))
    state = comm_hooks.PowerSGDState(matrix_approximation_rank=2, start_powerSGD_iter=0,
                                     min_compression_rate=0.1, warm_start=warm_start,
                                     use_error_feedback=error_feedback)
    opt = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=1.0), named_parameters=[("w", w)],
                                   comm_hook=comm_hooks.powerSGD_hook, comm_hook_state=state)
    for step in range(3):
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(5 + step))
        target = torch.randn(2, 6, generator=torch.Generator().manual_seed(hvd.rank()))
        before = w.detach().clone()
        opt.zero_grad()
        torch.nn.functional.mse_loss(x @ w.t(), target, reduction="sum").backward()
        exact = hvd.allreduce(w.grad.clone(), name="exact")
        opt.step()
        torch.testing.assert_close(before - w.detach(), exact, rtol=1e-4, atol=1e-4)
    assert state.iter == 3
    assert state.compression_stats()[1] == 3 * 24 and state.compression_stats()[2] == 3 * 20


def load_digits_example():
    path = os.path.join(HERE, "..", "..", "examples", "python", "torch_digits.py")
    spec = importlib.util.spec_from_file_location("torch_digits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train_digits(digits, data, comm_hook=None, state=None, epochs=20, batch=32):
    x_train, y_train, x_test, y_test = data
    rank, size = hvd.rank(), hvd.size()
    torch.manual_seed(0)
    model = digits.make_model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05 * size,
                                                   momentum=0.9),
                                   named_parameters=model.named_parameters(),
                                   comm_hook=comm_hook, comm_hook_state=state)
    global_batch = batch * size
    steps = len(x_train) // global_batch
    for epoch in range(epochs):
        perm = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch))
        for step in range(steps):
            idx = perm[step * global_batch:(step + 1) * global_batch][rank::size]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x_train[idx]), y_train[idx]).backward()
            opt.step()
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    return accuracy, model, epochs * steps


def test_powerSGD_trains_digits_within_a_point(world, capsys):
    digits = load_digits_example()
    data = digits.load_data()
    plain_acc, model, steps = train_digits(digits, data)
    plain_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    state = comm_hooks.PowerSGDState(matrix_approximation_rank=2, start_powerSGD_iter=20)
    comm_hooks.reset_payload_bytes()
    psgd_acc, _, _ = train_digits(digits, data, comm_hooks.powerSGD_hook, state)
    # The steps after start_powerSGD_iter, per step.
    psgd_bytes = (comm_hooks.payload_bytes() - 20 * plain_bytes) / (steps - 20)
    rate, before, after = state.compression_stats()
    with capsys.disabled():
        if hvd.rank() == 0:
            print("\ndigits on %d ranks, %d steps: uncompressed accuracy %.4f, %d bytes allreduced "
                  "per rank per step; PowerSGD rank 2 accuracy %.4f, %.0f bytes per step "
                  "(%.1fx less)" % (hvd.size(), steps, plain_acc, plain_bytes, psgd_acc,
                                   psgd_bytes, plain_bytes / psgd_bytes))
    assert plain_acc >= 0.95
    assert psgd_acc >= plain_acc - 0.01, (psgd_acc, plain_acc)
    assert psgd_bytes < plain_bytes / 3
    assert rate > 3


# ------------------------------------------------ no_sync and accumulation

PASSES = 4


def reference_accumulated(steps=3):
    """One process, the whole batch, gradients accumulated by hand over
    PASSES micro-batches of every rank's part."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    n = hvd.size()
    for x, y in full_batches(steps):
        opt.zero_grad()
        for r in range(n):
            xs, ys = x[r * BATCH_PER_RANK:(r + 1) * BATCH_PER_RANK], \
                y[r * BATCH_PER_RANK:(r + 1) * BATCH_PER_RANK]
            for xm, ym in zip(xs.chunk(PASSES), ys.chunk(PASSES)):
                (torch.nn.functional.mse_loss(model(xm), ym) / (PASSES * n)).backward()
        opt.step()
    return flat(model)


def train_accumulating(mode, steps=3, **kwargs):
    model = make_model()
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        named_parameters=model.named_parameters(),
        backward_passes_per_step=PASSES if mode == "passes" else 1, **kwargs)
    for x, y in full_batches(steps):
        opt.zero_grad()
        micro = list(zip(my_part(x).chunk(PASSES), my_part(y).chunk(PASSES)))
        for i, (xm, ym) in enumerate(micro):
            loss = torch.nn.functional.mse_loss(model(xm), ym) / PASSES
            if mode == "no_sync" and i < PASSES - 1:
                with opt.no_sync():
                    loss.backward()
            elif mode == "no_sync_all":  # all inside: step() reduces them
                with opt.no_sync():
                    loss.backward()
            else:
                loss.backward()
        opt.step()
    return flat(model)


@pytest.mark.parametrize("mode", ["no_sync", "no_sync_all", "passes"])
@pytest.mark.parametrize("hooked", [False, True], ids=["default", "comm_hook"])
def test_accumulation_matches_single_process(world, mode, hooked):
    kwargs = dict(comm_hook=comm_hooks.allreduce_hook) if hooked else {}
    got = train_accumulating(mode, **kwargs)
    torch.testing.assert_close(got, reference_accumulated(), rtol=1e-5, atol=1e-6)


def test_no_sync_sends_nothing_in_backward(world):
    model = make_model()
    calls = []

    def hook(state, bucket):
        calls.append(bucket.index())
        return comm_hooks.allreduce_hook(state, bucket)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), comm_hook=hook)
    x, y = full_batches(1)[0]
    with opt.no_sync():
        torch.nn.functional.mse_loss(model(my_part(x)), my_part(y)).backward()
    assert calls == []
    torch.nn.functional.mse_loss(model(my_part(x)), my_part(y)).backward()
    assert calls == [0]
    opt.step()
    assert calls == [0]
