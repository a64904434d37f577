"""hvd.torch's two allreduce paths give the same bits (the lean C path of
hvd._hvd_fast and the generic prepare/SWIG path), plus what a Horovod user
reaches for: sparse gradients (allgather and sparse_as_dense), grouped
gradients (groups=, num_groups=), the deprecated average=, raw DLPack
capsules and dtype errors in user terms; tensors in shared buffers
(hvd.shared_zeros). Runs on any number of ranks >= 2.
"""
import gc
import os
import time
import warnings

import numpy as np
import pytest
import torch
from torch.utils import dlpack

import hvd.torch as hvd
from hvd import _hvd_fast, _tensor, ops

torch.set_num_threads(1)

DTYPES = [torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
SHAPES = [(), (0,), (7,), (2, 3, 5)]


def _inputs(dtype, shape, r, seed):
    """Rank-dependent values: on 2 ranks floats that make rounding visible
    (a + b is the same bits in any order); on more ranks small integers, exact
    in any reduction order, since fusion may change the order between runs."""
    g = torch.Generator().manual_seed(seed * 97 + r)
    if dtype in FLOATS and hvd.size() == 2:
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 3.3).to(dtype)
    return torch.randint(0, 4, shape, generator=g, dtype=torch.int64).to(dtype)


def _cases():
    for dtype in DTYPES:
        for shape in SHAPES:
            ops_ = [hvd.Sum, hvd.Min, hvd.Max, hvd.Product]
            if dtype in FLOATS:
                ops_.append(hvd.Average)
            for op in ops_:
                yield dtype, shape, op


def _run_all(r, process_set):
    """Every case in four forms (blocking and async, out of place and in
    place), submitted together and then waited for, as a training step does."""
    waits = []
    for seed, (dtype, shape, op) in enumerate(_cases()):
        x = _inputs(dtype, shape, r, seed)
        scale = {}
        if dtype in FLOATS and op in (hvd.Sum, hvd.Average):
            scale = dict(prescale_factor=0.3, postscale_factor=1.7) if hvd.size() == 2 else \
                dict(prescale_factor=0.5, postscale_factor=2.0)
        y = x.clone()
        p = torch.nn.Parameter(x.clone()) if dtype in FLOATS else x.clone()
        name = "paths.%d.%d" % (process_set.process_set_id, seed)
        waits.append(hvd.allreduce_async(x, name=name + ".a", op=op, process_set=process_set,
                                         **scale).wait)
        waits.append(hvd.allreduce_async_(y, name=name + ".b", op=op, process_set=process_set,
                                          **scale).wait)
        h = hvd.allreduce_async_(p, name=name + ".c", op=op, process_set=process_set, **scale)
        waits.append(lambda h=h: hvd.synchronize(h).detach().clone())
        if shape == (7,):  # and the blocking forms, one at a time
            waits.append(lambda x=x, op=op, scale=scale: hvd.allreduce(
                x, op=op, process_set=process_set, **scale))
            z = x.clone()
            waits.append(lambda z=z, op=op, scale=scale: hvd.allreduce_(
                z, op=op, process_set=process_set, **scale))
    return [w() for w in waits]


def _assert_bitwise_equal(a, b):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.dtype == y.dtype and x.shape == y.shape, i
        assert torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)), i


def test_lean_and_generic_paths_give_the_same_bits(world, monkeypatch):
    r, n = hvd.rank(), hvd.size()
    pair = hvd.add_process_set([0, 1])
    try:
        lean = _run_all(r, hvd.global_process_set)
        lean_pair = _run_all(r, pair) if r < 2 else None
        monkeypatch.setattr(ops, "_fast_allreduce", lambda *args: None)
        # allreduce_async_ is C over the lean path: its Python form is the generic one.
        monkeypatch.setattr(ops, "allreduce_async_", ops._allreduce_async_py)
        monkeypatch.setattr(hvd, "allreduce_async_", ops._allreduce_async_py)
        generic = _run_all(r, hvd.global_process_set)
        generic_pair = _run_all(r, pair) if r < 2 else None
    finally:
        hvd.remove_process_set(pair)
    _assert_bitwise_equal(lean, generic)
    if r < 2:
        _assert_bitwise_equal(lean_pair, generic_pair)
    # And the values are right, e.g. the int32 Sum of the 1-D case.
    k = list(_cases()).index((torch.int32, (7,), hvd.Sum))
    expect = sum(_inputs(torch.int32, (7,), q, k) for q in range(n))
    position = sum(5 if shape == (7,) else 3 for _, shape, _ in list(_cases())[:k])
    assert torch.equal(lean[position], expect)


def test_lean_path_is_taken_only_where_it_applies(world, monkeypatch):
    seen = []
    real = _tensor.prepare

    def spy(obj):
        seen.append(type(obj).__name__)
        return real(obj)
    monkeypatch.setattr(ops, "prepare", spy)
    x = torch.ones(3)
    hvd.allreduce_(x, op=hvd.Sum)
    hvd.allreduce(torch.nn.Parameter(torch.ones(2)), op=hvd.Sum)
    flags = hvd.allreduce(torch.tensor([True, False]), op=hvd.Max)  # bool and int16 too
    shorts = hvd.allreduce(torch.tensor([3, -2], dtype=torch.int16), op=hvd.Sum)
    assert seen == []  # contiguous CPU tensors never reach the generic path
    assert flags.dtype == torch.bool and flags.tolist() == [True, False]
    assert shorts.dtype == torch.int16 and shorts.tolist() == [3 * hvd.size(), -2 * hvd.size()]
    hvd.allreduce(np.ones(2), op=hvd.Sum)
    hvd.allreduce(torch.ones(3, 2).t(), op=hvd.Sum)  # non-contiguous
    assert seen == ["ndarray", "Tensor"]
    assert torch.equal(x, torch.full((3,), float(hvd.size())))


def test_allreduce_async__takes_horovods_arguments_in_c(world):
    """hvd.allreduce_async_ is C (_hvd_fast): every way of passing Horovod's
    arguments gives the same result as the Python form, and what the lean
    path does not take reaches that form with the same arguments."""
    n = hvd.size()
    assert hvd.allreduce_async_ is _hvd_fast.allreduce_async_
    handed = []

    def fallback(*args, **kwargs):
        handed.append(sorted(kwargs))
        return ops._allreduce_async_py(*args, **kwargs)
    _hvd_fast.set_allreduce_async_fallback(fallback)
    try:
        _check_allreduce_async_arguments(n, handed)
    finally:
        _hvd_fast.set_allreduce_async_fallback(ops._allreduce_async_py)


def _check_allreduce_async_arguments(n, handed):
    calls = [
        lambda x: hvd.allreduce_async_(x),  # op=None: Average
        lambda x: hvd.allreduce_async_(x, "cargs.pos", hvd.Sum, 2.0, 0.5,
                                       hvd.global_process_set),
        lambda x: hvd.allreduce_async_(x, name="cargs.kw", op=hvd.Sum, postscale_factor=3.0),
        lambda x: hvd.allreduce_async_(x, None, op=hvd.Max, process_set=None),
        lambda x: hvd.allreduce_async_(tensor=x, op=hvd.Sum),  # to the Python form
    ]
    x0 = torch.full((5,), float(hvd.rank() + 1))
    got = [hvd.synchronize(c(x0.clone())) for c in calls]
    tri = float(n * (n + 1) // 2)
    for g, want in zip(got, [tri / n, tri, 3 * tri, float(n), tri]):
        assert torch.equal(g, torch.full((5,), want)), (g, want)
    assert handed == [["op", "tensor"]]  # only tensor= went to the Python form
    with pytest.warns(DeprecationWarning):
        avg = hvd.synchronize(hvd.allreduce_async_(x0.clone(), average=True))
    assert torch.equal(avg, torch.full((5,), tri / n))
    a = np.full(3, hvd.rank() + 1, dtype=np.int32)  # numpy: the generic path, in place
    assert hvd.synchronize(hvd.allreduce_async_(a, op=hvd.Sum)) is a and a.tolist() == [tri] * 3
    assert handed[1:] == [["average"], ["op"]]
    with pytest.raises(TypeError):
        hvd.allreduce_async_(x0, "dup", name="dup")
    with pytest.raises(TypeError):
        hvd.allreduce_async_(x0, nmae="typo")
    with pytest.raises(TypeError):
        hvd.allreduce_async_()
    with pytest.raises(ValueError):
        hvd.allreduce_async_(x0, op=hvd.Sum, average=True)


def test_many_async_through_both_paths(world):
    """W4's pattern (1000 tensors in flight) gives exact sums either way."""
    r, n = hvd.rank(), hvd.size()
    results = []
    for fast in (True, False):
        saved = ops._fast_allreduce
        if not fast:
            ops._fast_allreduce = lambda *args: None
        try:
            ts = [torch.full((256,), float(r + 1 + i % 7)) for i in range(1000)]
            hs = [hvd.allreduce_async_(t, name="many.%d" % i, op=hvd.Sum)
                  for i, t in enumerate(ts)]
            results.append([hvd.synchronize(h) for h in hs])
        finally:
            ops._fast_allreduce = saved
    for i in range(1000):
        expect = torch.full((256,), float(sum(q + 1 + i % 7 for q in range(n))))
        assert torch.equal(results[0][i], expect) and torch.equal(results[1][i], expect)


def _run_grouped(r, process_set):
    """Groups of every dtype, with and without names and scaling, in the four
    grouped forms (blocking and async, out of place and in place)."""
    waits = []
    for seed, dtype in enumerate(DTYPES):
        ops_ = [hvd.Sum, hvd.Max] + ([hvd.Average] if dtype in FLOATS else [])
        for op in ops_:
            xs = [_inputs(dtype, shape, r, seed * 10 + i) for i, shape in enumerate(SHAPES)]
            scale = dict(prescale_factor=0.5, postscale_factor=2.0) \
                if dtype in FLOATS and op != hvd.Max else {}
            name = "grouped.%d.%d.%d" % (process_set.process_set_id, seed, op)
            kw = dict(op=op, process_set=process_set, **scale)
            waits.append(hvd.grouped_allreduce_async(xs, name=name + ".a", **kw).wait)
            ys = [x.clone() for x in xs]
            h = hvd.grouped_allreduce_async_(ys, **kw)  # automatic names
            waits.append(lambda h=h, ys=ys: list(hvd.synchronize(h)) + ys)
            out = hvd.grouped_allreduce(xs, name=name + ".c", **kw)
            waits.append(lambda out=out: out)
            zs = [torch.nn.Parameter(x.clone()) if dtype in FLOATS else x.clone() for x in xs]
            back = hvd.grouped_allreduce_(zs, name=name + ".d", **kw)
            waits.append(lambda back=back, zs=zs: [b.detach().clone() for b in back] +
                         [z.detach().clone() for z in zs])
    return [t for w in waits for t in w()]


def test_grouped_lean_and_generic_paths_give_the_same_bits(world, monkeypatch):
    """hvd._hvd_fast.grouped_allreduce (the lean path of contiguous CPU torch
    groups) against the generic one: the same bits, in place where asked, and
    the generic path only where a tensor needs it."""
    r, n = hvd.rank(), hvd.size()
    pair = hvd.add_process_set([0, 1])
    seen = []
    real = _tensor.prepare
    monkeypatch.setattr(ops, "prepare", lambda obj: seen.append(type(obj).__name__) or real(obj))
    try:
        lean = _run_grouped(r, hvd.global_process_set)
        lean_pair = _run_grouped(r, pair) if r < 2 else None
        lean_seen, seen[:] = list(seen), []
        monkeypatch.setattr(ops, "_fast_grouped_allreduce", lambda *args: None)
        generic = _run_grouped(r, hvd.global_process_set)
        generic_pair = _run_grouped(r, pair) if r < 2 else None
        generic_seen, seen[:] = len(seen), []
        monkeypatch.undo()
        ones = [torch.ones(2), torch.ones(3, 1)]
        same = [a is b for a, b in zip(hvd.grouped_allreduce_(ones, op=hvd.Sum), ones)]
        # One tensor off the lean path (non-contiguous) sends the whole group the generic way.
        mixed = [torch.full((3,), float(r + 1)), torch.full((2, 3), float(r + 1)).t()]
        monkeypatch.setattr(ops, "prepare", lambda obj: seen.append(type(obj).__name__) or
                            real(obj))
        mixed_out = hvd.grouped_allreduce_(mixed, name="grouped.mixed", op=hvd.Sum)
    finally:
        hvd.remove_process_set(pair)
    assert lean_seen == [] and generic_seen > 0 and same == [True, True]
    assert all(torch.equal(o, torch.full(o.shape, float(n))) for o in ones)
    _assert_bitwise_equal(lean, generic)
    if r < 2:
        _assert_bitwise_equal(lean_pair, generic_pair)
    tri = float(n * (n + 1) // 2)
    assert seen == ["Tensor", "Tensor"] and mixed_out[1] is mixed[1]
    assert all(torch.equal(m, torch.full(m.shape, tri)) for m in mixed)
    # And the values are right: the first group is int-valued uint8, Sum, out of place.
    for i, shape in enumerate(SHAPES):
        expect = sum(_inputs(torch.uint8, shape, q, i) for q in range(n))
        assert torch.equal(lean[i], expect), i


def test_lean_handle_timeout_error_and_orphans(world):
    r = hvd.rank()
    if r != 0:
        time.sleep(0.5)
    x = torch.full((4,), float(r + 1))
    h = hvd.allreduce_async_(x, name="lean.timeout", op=hvd.Sum)
    timed_out = False
    if r == 0:
        try:
            h.wait(timeout=0.01)
        except hvd.HvdTimeoutError:
            timed_out = True
    out = h.wait()
    # A mismatch raises on every rank, through the lean path too.
    with pytest.raises(hvd.HvdMismatchError) as err:
        hvd.allreduce(torch.ones(2, dtype=torch.float32 if r == 0 else torch.float64),
                      name="lean.mismatch")
    with pytest.raises(hvd.HvdInvalidArgument):
        hvd.allreduce(torch.ones(2), op=99)
    # Dropped before completion: memory stays referenced, then released.
    for i in range(50):
        hvd.allreduce_async_(torch.ones(1000), name="lean.dropped.%d" % i, op=hvd.Sum)
    hvd.barrier()
    for _ in range(100):
        _hvd_fast.sweep()
        if _hvd_fast.orphan_count() == 0:
            break
        time.sleep(0.01)
    if r == 0:
        assert timed_out
    assert out is x and torch.equal(x, torch.full((4,), float(sum(range(1, hvd.size() + 1)))))
    assert "lean.mismatch" in str(err.value)
    assert _hvd_fast.orphan_count() == 0


# ------------------------------------------------ DistributedOptimizer paths

def _mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8),
                               torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _data(n, per_rank=8, seed=7):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(per_rank * n, 6, generator=g), torch.randn(per_rank * n, 2, generator=g)


def _train(steps=5, lean=True, per_rank=8, **kwargs):
    r, n = hvd.rank(), hvd.size()
    model = _mlp(50)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters(), **kwargs)
    if not lean:
        opt._lean = False
    x, y = _data(n, per_rank)
    x, y = x[r * per_rank:(r + 1) * per_rank], y[r * per_rank:(r + 1) * per_rank]
    kinds = set()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        kinds.update(len(getattr(k, "members", (k,))) > 1 for k in opt._handles)
        opt.step()
    return model, kinds


def _reference(steps=5, per_rank=8):
    model = _mlp(50)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = _data(hvd.size(), per_rank)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model


def _close(model, ref, atol=1e-6):
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=atol, rtol=0)


def test_optimizer_slot_path_matches_generic_bitwise(world):
    lean, _ = _train(lean=True)
    generic, _ = _train(lean=False)
    for p, q in zip(lean.parameters(), generic.parameters()):
        assert torch.equal(p, q)
    _close(lean, _reference())


def test_optimizer_groups(world):
    ref = _reference()
    model, kinds = _train(groups=2)
    assert True in kinds  # gradients went as grouped allreduces
    _close(model, ref)


def test_optimizer_groups_of_parameters_and_num_groups(world):
    ref = _reference()
    r, n = hvd.rank(), hvd.size()
    model = _mlp(50)
    params = list(model.parameters())
    opt = hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.1, momentum=0.9),
                                   named_parameters=model.named_parameters(),
                                   groups=[[params[0], params[3]], [params[1], params[2]]])
    x, y = _data(n)
    x, y = x[r * 8:(r + 1) * 8], y[r * 8:(r + 1) * 8]
    keys = []
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        keys.append(sorted(len(getattr(k, "members", (k,))) for k in opt._handles))
        opt.step()
    assert keys[0] == [1, 1, 2, 2]  # two groups; params[4] and [5] on their own
    _close(model, ref)
    with pytest.warns(DeprecationWarning):
        model2, kinds = _train(num_groups=3)
    assert True in kinds
    _close(model2, ref)
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.1), groups=[[params[0]],
                                                                          [params[0]]])
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.1), groups=[[torch.ones(2)]])
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.1), groups=0)


def test_optimizer_groups_with_an_unused_parameter(world):
    """A group whose member got no gradient on some rank is still reduced
    once, as a group, on every rank (in step())."""
    r = hvd.rank()
    model = _mlp(50)
    extra = torch.nn.Parameter(torch.zeros(3))
    params = list(model.parameters()) + [extra]
    opt = hvd.DistributedOptimizer(torch.optim.SGD(params, lr=1.0),
                                   groups=[[params[4], extra]])
    loss = model(torch.ones(1, 6)).sum()
    if r == 0:
        loss = loss + (extra * 2.0).sum()
    loss.backward()
    opt.step()
    torch.testing.assert_close(extra.detach(), torch.full((3,), -2.0 / hvd.size()), atol=0,
                               rtol=0)


# -------------------------------------------------------- sparse gradients

class _EmbeddingModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.emb = torch.nn.Embedding(30, 5, sparse=True)
        self.out = torch.nn.Linear(5, 1)

    def forward(self, idx):
        return self.out(self.emb(idx).mean(dim=1))


def _sparse_data(n, per_rank=6):
    g = torch.Generator().manual_seed(11)
    # Overlapping rows between ranks, and repeats within a rank.
    return torch.randint(0, 12, (per_rank * n, 4), generator=g), torch.randn(per_rank * n, 1,
                                                                            generator=g)


def _sparse_train(steps, per_rank=6, distributed=True, **kwargs):
    r, n = hvd.rank(), hvd.size()
    model = _EmbeddingModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    if distributed:
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(), **kwargs)
    x, y = _sparse_data(n, per_rank)
    if distributed:
        x, y = x[r * per_rank:(r + 1) * per_rank], y[r * per_rank:(r + 1) * per_rank]
    layouts = set()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        if distributed:
            opt.synchronize()
            layouts.add(model.emb.weight.grad.layout)
            with opt.skip_synchronize():
                opt.step()
        else:
            opt.step()
    return model, layouts


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_embedding_matches_single_process(world, sparse_as_dense):
    ref, _ = _sparse_train(5, distributed=False)
    model, layouts = _sparse_train(5, sparse_as_dense=sparse_as_dense)
    assert layouts == {torch.sparse_coo}  # the optimizer sees a sparse gradient either way
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-6, rtol=0)


def test_sparse_allreduce_values(world):
    r, n = hvd.rank(), hvd.size()
    # Rank r holds rows r and 5 (shared); the last rank holds nothing.
    if r == n - 1:
        t = torch.sparse_coo_tensor(torch.zeros((1, 0), dtype=torch.int64), torch.zeros(0, 2),
                                    (8, 2))
    else:
        t = torch.sparse_coo_tensor(torch.tensor([[r, 5]]),
                                    torch.tensor([[1.0, 2.0], [float(r), 1.0]]), (8, 2))
    dense = [t.to_dense()]
    summed = hvd.sparse_allreduce(t, name="sparse.sum", op=hvd.Sum)
    averaged = hvd.sparse_allreduce_async(t, name="sparse.avg").wait()
    every = hvd.allgather(dense[0].unsqueeze(0))
    with pytest.raises(hvd.HvdInvalidArgument):
        hvd.sparse_allreduce(t, op=hvd.Max)
    with pytest.raises(hvd.HvdInvalidArgument):
        hvd.allreduce(t)  # dense collectives name the sparse path
    assert summed.is_sparse and summed.is_coalesced()
    assert torch.equal(summed.to_dense(), every.sum(0))
    assert torch.equal(averaged.to_dense(), every.sum(0) / n)


# -------------------------------------------------------------- average=

def test_average_is_a_deprecated_alias(world):
    n = hvd.size()
    x = torch.full((3,), float(hvd.rank() + 1))
    with pytest.warns(DeprecationWarning):
        avg = hvd.allreduce(x, average=True)
    with pytest.warns(DeprecationWarning):
        total = hvd.allreduce(x, average=False)
    with pytest.warns(DeprecationWarning):
        inplace = hvd.allreduce_(x.clone(), average=False)
    with pytest.warns(DeprecationWarning):
        grouped = hvd.grouped_allreduce([x, x * 2], average=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        default = hvd.allreduce(x)  # op=None: Average, no warning
    with pytest.raises(ValueError):
        hvd.allreduce(x, op=hvd.Sum, average=True)
    tri = float(n * (n + 1) // 2)
    assert torch.equal(avg, torch.full((3,), tri / n)) and torch.equal(default, avg)
    assert torch.equal(total, torch.full((3,), tri)) and torch.equal(inplace, total)
    assert torch.equal(grouped[1], total * 2)


# ------------------------------------------------------ DLPack and dtypes

def test_dlpack_capsules_everywhere(world, monkeypatch):
    r, n = hvd.rank(), hvd.size()
    src = torch.full((n, 2), float(r + 1))
    out = hvd.allreduce(dlpack.to_dlpack(src), op=hvd.Sum)
    inplace = hvd.allreduce_(dlpack.to_dlpack(src), op=hvd.Sum)
    bcast = torch.full((3,), float(r))
    hvd.broadcast_(dlpack.to_dlpack(bcast), root_rank=0)
    gathered = hvd.allgather(dlpack.to_dlpack(torch.full((1,), r, dtype=torch.int32)))
    a2a = hvd.alltoall(dlpack.to_dlpack(torch.arange(n, dtype=torch.int64) + 10 * r))
    rs = hvd.reducescatter(dlpack.to_dlpack(torch.ones(n, 2)), op=hvd.Sum)
    grouped = hvd.grouped_allreduce([dlpack.to_dlpack(torch.ones(2))], op=hvd.Sum)
    used = dlpack.to_dlpack(torch.ones(2))
    hvd.allreduce(used, op=hvd.Sum)
    with pytest.raises(ValueError, match="dltensor"):
        hvd.allreduce(used)  # a capsule can be consumed once
    # Without torch loaded, a capsule becomes a numpy array.
    monkeypatch.setattr(_tensor, "_torch", lambda: None)
    as_numpy = hvd.allreduce(dlpack.to_dlpack(torch.full((2,), 3.0)), op=hvd.Sum)
    monkeypatch.undo()
    tri = float(n * (n + 1) // 2)
    assert isinstance(out, torch.Tensor) and torch.equal(out, torch.full((n, 2), tri))
    assert torch.equal(inplace, src) and torch.equal(src, torch.full((n, 2), tri))
    assert torch.equal(bcast, torch.zeros(3))
    assert gathered.tolist() == list(range(n))
    assert a2a.tolist() == [10 * k + r for k in range(n)]
    assert torch.equal(rs, torch.full((1, 2), float(n)))
    assert torch.equal(grouped[0], torch.full((2,), float(n)))
    assert isinstance(as_numpy, np.ndarray) and as_numpy.tolist() == [3.0 * n] * 2


@pytest.mark.parametrize("value,name", [
    (np.ones(2, np.complex64), "numpy.complex64"),
    (np.ones(2, np.uint16), "numpy.uint16"),
    (np.ones(2, np.uint32), "numpy.uint32"),
    (torch.ones(2, dtype=torch.complex64), "torch.complex64"),
    (torch.ones(2, dtype=torch.complex128), "torch.complex128"),
])
def test_unsupported_dtypes_are_named_in_user_terms(world, value, name):
    with pytest.raises(hvd.HvdInvalidArgument) as err:
        hvd.allreduce(value)
    with pytest.raises(hvd.HvdInvalidArgument) as err_capsule:
        if isinstance(value, torch.Tensor):
            hvd.allgather(dlpack.to_dlpack(value))
        else:
            hvd.allgather(value)
    assert name in str(err.value) and "float32" in str(err.value)
    assert name in str(err_capsule.value)


def test_shared_zeros_reduce_between_the_ranks_buffers(world):
    """hvd.shared_zeros: zero-filled tensors in hvd_alloc_shared memory (any
    shape and dtype); adjacent views of one buffer reduced in place as a
    group, exactly; the buffer's name is in /dev/shm while a tensor on it
    lives, and gone once none does."""
    def names():
        mine = "hvd-buf.%d." % os.getpid()
        return [f for f in os.listdir("/dev/shm") if f.startswith(mine)]

    before = len(names())
    k = 1 << 16  # 256 KiB per view
    flat = hvd.shared_zeros(5 * k)
    assert flat.shape == (5 * k,) and flat.dtype == torch.float32 and not flat.any()
    views = [flat[i * k:(i + 1) * k].view(256, 256) for i in range(5)]
    for i, v in enumerate(views):
        v.fill_(hvd.rank() + i)
    hvd.grouped_allreduce_(views, op=hvd.Sum, name="shared_zeros.group")
    for i, v in enumerate(views):
        want = float(sum(r + i for r in range(hvd.size())))
        assert torch.equal(v, torch.full((256, 256), want)), i
    assert len(names()) == before + 1
    del flat, views, v
    gc.collect()
    assert len(names()) == before
    ints = hvd.shared_zeros((2, 3), dtype=torch.int64)
    assert ints.shape == (2, 3) and ints.dtype == torch.int64 and not ints.any()
    assert hvd.shared_zeros(0).shape == (0,)
