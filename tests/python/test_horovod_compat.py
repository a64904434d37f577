"""Horovod's semantics where a Horovod program sees them, and the horovod
compatibility package (import horovod.torch), on 2+ ranks: each test pins
one incompatibility that Horovod 0.28.1's own test_torch.py found
(docs/migrating-from-horovod.md)."""
import os
import warnings

import numpy as np
import pytest
import torch

import hvd
import hvd.torch as ht


def test_init_twice_is_a_no_op(world):
    hvd.init()  # Horovod: a second init() does nothing
    assert hvd.is_initialized() and hvd.size() >= 2


def test_init_registers_process_sets_when_running(world):
    ps = hvd.ProcessSet([0])
    hvd.init(process_sets=[ps])
    assert ps.process_set_id not in (None, 0)
    assert ps.included() == (hvd.rank() == 0)
    assert hvd.remove_process_set(ps) is True


def test_nccl_built_is_a_version_code(world):
    code = hvd.nccl_built()
    assert type(code) is int
    assert code == 0 or code >= 2000  # NCCL_VERSION_CODE, e.g. 2708 or 22809


def test_process_sets_as_horovod_has_them(world):
    everyone = hvd.add_process_set(list(range(hvd.size())))  # the global set's ranks
    assert everyone.process_set_id == 0
    assert hvd.remove_process_set(everyone) is False  # the global set stays
    assert hvd.global_process_set.ranks == list(range(hvd.size()))

    first = hvd.add_process_set(hvd.ProcessSet([0]))  # an object
    again = hvd.add_process_set([0])  # a rank list with the same ranks
    assert again.process_set_id == first.process_set_id
    x = np.array([hvd.rank() + 1], np.int32)
    if hvd.rank() == 0:
        assert hvd.allreduce(x, op=hvd.Sum, process_set=again)[0] == 1
    assert hvd.remove_process_set(first) is True
    if hvd.rank() == 0:  # still registered for `again`
        assert hvd.allreduce(x, op=hvd.Sum, process_set=again)[0] == 1
    assert hvd.remove_process_set(again) is True
    assert hvd.remove_process_set(again) is False  # nothing left to remove

    empty = hvd.add_process_set([])  # e.g. the odd ranks of a 1-rank job
    assert empty.size() == 0 and empty.rank() == -1 and not empty.included()
    assert hvd.remove_process_set(empty) is False


def test_integer_scaling_truncates_like_horovod(world):
    n = hvd.size()
    x = torch.tensor([7, -7, 10, 3], dtype=torch.int32)
    pre = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.7)
    post = hvd.allreduce(x, op=hvd.Sum, postscale_factor=0.7)
    odd = torch.tensor([hvd.rank() % 2 * 5 + 1], dtype=torch.int64)  # 1, 6, 1, ...
    avg = hvd.allreduce(odd, op=hvd.Average)
    scaled = (x.double() * 0.7).to(torch.int32)  # Horovod: in double, toward zero
    assert pre.tolist() == (scaled * n).tolist()
    assert post.tolist() == ((x * n).double() * 0.7).to(torch.int32).tolist()
    total = sum(r % 2 * 5 + 1 for r in range(n))
    assert avg.tolist() == [int(total / n)]


def test_average_is_the_sum_divided_by_the_size(world):
    # DDP's result and what Horovod's own tests compare against exactly; at 3
    # ranks a multiply by the rounded 1/3 misses by a bit for many values.
    n = hvd.size()
    m = 999 // n * n  # reduce-scatter blocks of equal size
    # Integers: their sums are exact in any order, their thirds are not.
    base = torch.arange(-500, 499, dtype=torch.float64)[:m] * 7
    for dtype in (torch.float32, torch.float64):
        r = hvd.rank()
        x = (base * (r + 1) + r * r).to(dtype)
        want = sum((base * (k + 1) + k * k).to(dtype) for k in range(n)) / n
        assert torch.equal(hvd.allreduce(x, op=hvd.Average), want)
        assert torch.equal(ht.allreduce(x, average=True), want)
        block = m // n
        mine = want[r * block:(r + 1) * block]
        assert torch.equal(ht.reducescatter(x, op=hvd.Average), mine)


def test_reducescatter_of_a_scalar_raises(world):
    with pytest.raises(ValueError, match="at least one dimension"):
        hvd.reducescatter(torch.tensor(1.0), op=hvd.Sum)


def test_alltoall_splits_must_be_integers(world):
    # Horovod raises ValueError for a float splits tensor; uninitialised
    # floats must not reach the C ABI as huge row counts either.
    x = torch.zeros(hvd.size())
    for bad in (torch.full((hvd.size(),), 1e30), np.ones(hvd.size(), dtype=np.float32)):
        with pytest.raises(ValueError, match="splits must hold integers"):
            hvd.alltoall(x, bad)
    out, received = hvd.alltoall(x, [1.0] * hvd.size())  # a list converts, as in Horovod
    assert out.tolist() == [0.0] * hvd.size() and received.tolist() == [1] * hvd.size()
    assert received.dtype == torch.int32  # not the data's dtype: splits go back in as splits
    y = torch.ones(hvd.size(), requires_grad=True)
    out, received = ht.alltoall(y, torch.ones(hvd.size(), dtype=torch.int32))
    out.sum().backward()  # backward sends the rows back with the received splits
    assert y.grad.tolist() == [1.0] * hvd.size()


def test_sparse_handle_is_callable(world):
    t = torch.sparse_coo_tensor([[hvd.rank()]], [1.0], (hvd.size(),))
    handle = ht.sparse_allreduce_async(t, name="compat.sparse", op=hvd.Sum)
    assert handle().to_dense().tolist() == [1.0] * hvd.size()


def test_optimizer_names_parameters_without_named_parameters(world):
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
    opt = ht.DistributedOptimizer(torch.optim.SGD(
        [{"params": model[0].parameters()}, {"params": model[1].parameters()}], lr=0.1))
    names = opt._parameter_names
    assert set(names) == set(model.parameters())
    assert len(set(names.values())) == 4
    assert hvd.allgather_object(sorted(names.values())) == [sorted(names.values())] * hvd.size()


def test_grouped_allgather_and_reducescatter(world):
    r, n = hvd.rank(), hvd.size()
    a = torch.full((r + 1, 2), float(r))
    b = torch.arange(n * 2, dtype=torch.int32)
    ga, gb = ht.grouped_allgather([a, b], name="compat.ga")
    assert ga.shape == (n * (n + 1) // 2, 2)
    assert gb.tolist() == list(range(n * 2)) * n
    ra, rb = ht.grouped_reducescatter([torch.ones(n * 3), b * 1], op=hvd.Sum, name="compat.grs")
    assert ra.tolist() == [float(n)] * 3
    assert rb.tolist() == [v * n for v in range(r * 2, r * 2 + 2)]


def test_join_returns_the_last_rank_to_join(world):
    if hvd.rank() != 0:
        hvd.allreduce(torch.ones(3), name="compat.join.work")
    last = hvd.join()
    assert last != 0 and hvd.allgather_object(last) == [last] * hvd.size()


# ------------------------------------------------------- import horovod.torch

def test_horovod_names_take_horovods_argument_order(world):
    import horovod.torch as hv
    from horovod.torch.mpi_ops import synchronize  # noqa: F401  (Horovod's module path)
    n = hvd.size()
    t = torch.IntTensor([1])
    # allreduce_(tensor, average, name, op): Horovod's positional order
    assert hv.allreduce_(t, None, "compat.positional", hv.Sum).tolist() == [n]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert hv.allreduce(torch.ones(2), False).tolist() == [float(n)] * 2
    # reducescatter(tensor, name, compression, op, process_set, pre, post)
    out = hv.reducescatter(torch.ones(n * 2), None, hv.Compression.none, hv.Sum,
                           hv.global_process_set, 2.0, 1.0)
    assert out.tolist() == [2.0 * n] * 2
    assert isinstance(hv.join(-1), int)
    assert hv.elastic.TorchState and hv.elastic.ElasticSampler and hv.elastic.run
    assert hv.HorovodInternalError is hvd.HvdInternalError


def test_horovod_rank_variables_under_hvdrun(world):
    import horovod  # noqa: F401  (mirrors hvdrun's HVD_* for Horovod programs)
    if "HVD_RANK" in os.environ:
        assert os.environ["HOROVOD_RANK"] == str(hvd.rank())
        assert os.environ["HOROVOD_SIZE"] == str(hvd.size())


def test_horovod_broadcast_roots_are_global_ranks(world):
    import horovod.torch as hv
    last = hvd.size() - 1
    ps = hvd.add_process_set([last])  # one member, global rank `last`
    if hvd.rank() == last:
        x = torch.tensor([float(last)])
        assert hv.broadcast(x, last, process_set=ps).tolist() == [float(last)]
        assert hv.broadcast_object({"r": last}, root_rank=last, process_set=ps) == {"r": last}
    hvd.remove_process_set(ps)


def test_horovod_gradient_conventions(world):
    import horovod.torch as hv
    n = hvd.size()
    x = torch.ones(2, requires_grad=True)
    hv.allgather(x).sum().backward()  # Horovod: the average of the ranks' gradients
    y = torch.ones(n * 2, requires_grad=True)
    hv.reducescatter(y, op=hv.Sum).sum().backward()  # Horovod: times the set size
    z = torch.ones(2, requires_grad=True)
    hv.broadcast(z, 0).sum().backward()  # Horovod: root gets the average
    assert x.grad.tolist() == [1.0, 1.0]
    assert y.grad.tolist() == [float(n)] * (n * 2)
    assert z.grad.tolist() == ([1.0, 1.0] if hvd.rank() == 0 else [0.0, 0.0])


def test_step_after_synchronize_warns_in_horovods_words(world):
    model = torch.nn.Linear(1, 1)
    opt = ht.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                  named_parameters=model.named_parameters())
    model(torch.ones(1, 1)).sum().backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step()
    assert any("optimizer.step() called without optimizer.skip_synchronize()" in str(w.message)
               for w in caught)


def test_optimizer_reports_duplicate_names_before_init():
    # Runs before `world` initialises hvd in this file only when alone; the
    # check itself does not need hvd running.
    a, b = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1)
    named = list(a.named_parameters()) + list(b.named_parameters())
    with pytest.raises(ValueError, match="unique"):
        ht.DistributedOptimizer(opt, named_parameters=named)


def test_optimizer_outside_its_process_set_steps_locally(world):
    ps = hvd.add_process_set([0])
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.constant_(model.weight, 1.0)
    opt = ht.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                  named_parameters=model.named_parameters(), process_set=ps)
    model(torch.full((1, 1), float(hvd.rank() + 1))).sum().backward()
    opt.step()  # rank 0 alone in the set; the others keep their own gradient
    assert model.weight.item() == 1.0 - (hvd.rank() + 1)
    hvd.remove_process_set(ps)


def test_horovod_object_collectives_are_named_by_type(world):
    import horovod.torch as hv
    alone = hvd.add_process_set([1])
    if hvd.rank() == 1:  # an unnamed collective on one rank only
        hvd.allgather(torch.ones(1), process_set=alone)
    assert hv.allgather_object(hvd.rank()) == list(range(hvd.size()))
    assert hv.broadcast_object({"x": hvd.rank()}, root_rank=0) == {"x": 0}
    hvd.remove_process_set(alone)
