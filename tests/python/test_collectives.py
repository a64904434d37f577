"""Collectives on numpy arrays and torch tensors: exact values on every
rank, every dtype, async handles, errors as exceptions, objects, process
sets, join. Runs on any number of ranks >= 2."""
import os
import threading
import time

import numpy as np
import pytest
import torch

import hvd
from hvd import hvd_c

NP_DTYPES = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
             np.float64]
TORCH_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.bfloat16, torch.float32, torch.float64]
FLOAT_NP = [np.float16, np.float32, np.float64]


# ------------------------------------------------------------- before init
# Runs first: the `world` fixture (hvd.init) is requested only later.

def test_calls_before_init_raise():
    assert not hvd.is_initialized()
    with pytest.raises(hvd.HvdNotInitializedError):
        hvd.rank()
    with pytest.raises(hvd.HvdError) as info:
        hvd.allreduce(np.ones(3, np.float32))
    assert info.value.status == hvd_c.HVD_ERR_NOT_INITIALIZED
    assert str(info.value)  # carries the C message


def test_topology(world):
    r, n = hvd.rank(), hvd.size()
    assert n >= 2 and 0 <= r < n
    assert 0 <= hvd.local_rank() < hvd.local_size() <= n
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.is_initialized()
    assert hvd.mpi_enabled() or hvd.gloo_enabled()
    assert isinstance(hvd.nccl_built(), int)  # NCCL_VERSION_CODE or 0, as Horovod
    ranks = hvd.allgather(np.array([r], np.int32))
    assert ranks.tolist() == list(range(n))


# ---------------------------------------------------------------- allreduce

def _base(dtype, n=6):
    return np.arange(n).astype(dtype)


def test_allreduce_numpy_every_dtype_and_op(world):
    r, n = hvd.rank(), hvd.size()
    got = {}
    for dt in NP_DTYPES:
        x = _base(dt) * dt(r + 1)
        got[(dt, "sum")] = hvd.allreduce(x, op=hvd.Sum)
        got[(dt, "min")] = hvd.allreduce(x, op=hvd.Min)
        got[(dt, "max")] = hvd.allreduce(x, op=hvd.Max)
        got[(dt, "prod")] = hvd.allreduce(_base(dt, 4) + dt(r), op=hvd.Product)
        if dt in FLOAT_NP:
            got[(dt, "avg")] = hvd.allreduce(x)  # Average is the default
    tri = n * (n + 1) // 2
    for dt in NP_DTYPES:
        base = _base(dt)
        assert got[(dt, "sum")].dtype == dt
        np.testing.assert_array_equal(got[(dt, "sum")], base * dt(tri))
        np.testing.assert_array_equal(got[(dt, "min")], base)
        np.testing.assert_array_equal(got[(dt, "max")], base * dt(n))
        expect_prod = np.ones(4, np.float64)
        for k in range(n):
            expect_prod *= np.arange(4) + k
        np.testing.assert_array_equal(got[(dt, "prod")], expect_prod.astype(dt))
        if dt in FLOAT_NP:
            np.testing.assert_array_equal(got[(dt, "avg")], base * dt((n + 1) / 2))


def test_allreduce_bool_scales_shapes(world):
    r, n = hvd.rank(), hvd.size()
    flags = np.array([True, False, r == 0, r == 1])
    any_ = hvd.allreduce(flags, op=hvd.Max)
    all_ = hvd.allreduce(flags, op=hvd.Min)
    scaled = hvd.allreduce(np.full((2, 3), r + 1, np.float64), op=hvd.Sum,
                           prescale_factor=3.0, postscale_factor=0.25)
    scalar = hvd.allreduce(np.float32(r), op=hvd.Sum)                 # 0-d
    listed = hvd.allreduce([1, 2, 3], op=hvd.Sum)                     # list -> numpy
    strided = hvd.allreduce(np.arange(12.0).reshape(3, 4).T, op=hvd.Sum)  # non-contiguous
    named = hvd.allreduce(np.ones(3), name="my.tensor", op=hvd.Sum)
    assert any_.dtype == np.bool_ and any_.tolist() == [True, False, True, True]
    assert all_.tolist() == [True, False, False, False]
    np.testing.assert_array_equal(scaled, np.full((2, 3), n * (n + 1) / 2 * 0.75))
    assert scalar.shape == () and scalar == n * (n - 1) / 2
    assert listed.tolist() == [n, 2 * n, 3 * n]
    np.testing.assert_array_equal(strided, np.arange(12.0).reshape(3, 4).T * n)
    np.testing.assert_array_equal(named, np.full(3, float(n)))


def test_allreduce_inplace_numpy(world):
    n = hvd.size()
    x = np.arange(5, dtype=np.float32)
    out = hvd.allreduce_(x, op=hvd.Sum)
    strided = np.zeros((4, 4), np.int64)
    view = strided[:, 1]  # non-contiguous: written back through a copy
    view[:] = 7
    hvd.allreduce_(view, op=hvd.Sum)
    assert out is x
    np.testing.assert_array_equal(x, np.arange(5, dtype=np.float32) * n)
    assert strided[:, 1].tolist() == [7 * n] * 4 and strided[:, 0].tolist() == [0] * 4


def test_grouped_allreduce(world):
    r, n = hvd.rank(), hvd.size()
    xs = [np.full(3, r + 1, np.float32), np.arange(6.0).reshape(2, 3) * (r + 1),
          np.full((1,), r, np.float32)]
    out = hvd.grouped_allreduce(xs, name="group", op=hvd.Sum)
    tri = n * (n + 1) // 2
    assert len(out) == 3
    np.testing.assert_array_equal(out[0], np.full(3, tri, np.float32))
    np.testing.assert_array_equal(out[1], np.arange(6.0).reshape(2, 3) * tri)
    np.testing.assert_array_equal(out[2], np.full((1,), tri - n, np.float32))


def test_dump_flight_record(world, tmp_path):
    r = hvd.rank()
    x = np.full((2, 3), 1.0, np.float32)
    hvd.allreduce(x, name="fr.last", op=hvd.Sum)
    path = str(tmp_path / f"flight.{r}.json")
    hvd.dump_flight_record(path)
    import json
    with open(path) as f:
        d = json.load(f)
    last = d["ops"][-1]
    assert d["format"] == "hvd-flight-1" and d["rank"] == r and d["size"] == hvd.size()
    assert d["reason"] == "hvd_dump_flight_record"
    assert (last["name"], last["kind"], last["dtype"], last["shape"]) == \
        ("fr.last", "allreduce", "float32", [2, 3])
    assert last["state"] == "done" and last["status"] == 0 and last["bytes"] == 24
    assert last["submitted_ms"] <= last["negotiated_ms"] <= last["executing_ms"] <= last["done_ms"]
    with pytest.raises(hvd.HvdInvalidArgument):
        hvd.dump_flight_record(str(tmp_path / "no-such-dir" / "x.json"))


# ------------------------------------------------- allgather / broadcast ...

def test_allgather_every_dtype(world):
    r, n = hvd.rank(), hvd.size()
    got = {dt: hvd.allgather(np.full((r + 1, 3), r, dt)) for dt in NP_DTYPES}
    expect = np.concatenate([np.full((k + 1, 3), k) for k in range(n)])
    for dt, g in got.items():
        assert g.dtype == dt and g.shape == (n * (n + 1) // 2, 3)
        np.testing.assert_array_equal(g, expect.astype(dt))


def test_broadcast(world):
    r, n = hvd.rank(), hvd.size()
    root = n - 1
    got = {dt: hvd.broadcast(np.full((2, 2), r, dt), root_rank=root) for dt in NP_DTYPES}
    x = np.full(4, r, np.int32)
    same = hvd.broadcast_(x, root_rank=0, name="bcast.inplace")
    for dt, g in got.items():
        assert g.dtype == dt
        np.testing.assert_array_equal(g, np.full((2, 2), root, dt))
    assert same is x and x.tolist() == [0] * 4


def test_alltoall(world):
    r, n = hvd.rank(), hvd.size()
    # Rank r sends rank j (j + 1) rows holding 100 r + j.
    rows = np.concatenate([np.full((j + 1, 2), 100 * r + j, np.int64) for j in range(n)])
    out, received = hvd.alltoall(rows, splits=[j + 1 for j in range(n)])
    equal = hvd.alltoall(np.repeat(np.arange(n, dtype=np.float32), 2) + 10 * r)
    expect = np.concatenate([np.full((r + 1, 2), 100 * k + r, np.int64) for k in range(n)])
    np.testing.assert_array_equal(out, expect)
    assert received.tolist() == [r + 1] * n
    np.testing.assert_array_equal(
        equal, np.array([10 * k + r for k in range(n) for _ in range(2)], np.float32))


def test_reducescatter(world):
    r, n = hvd.rank(), hvd.size()
    rows = 2 * n + 1  # uneven: the first rank gets one row more
    x = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) * (r + 1)
    summed = hvd.reducescatter(x, op=hvd.Sum)
    averaged = hvd.reducescatter(x.astype(np.float64))
    full = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    counts = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
    start = sum(counts[:r])
    mine = full[start:start + counts[r]]
    np.testing.assert_array_equal(summed, mine * (n * (n + 1) // 2))
    np.testing.assert_array_equal(averaged, mine.astype(np.float64) * ((n + 1) / 2))


def test_results_borrow_hvds_memory_until_dropped(world):
    """allgather/alltoall/reducescatter results are hvd's own memory (no
    copy): the handle stays alive while any view of the result does, and is
    released with the last one."""
    import gc
    r, n = hvd.rank(), hvd.size()
    h = hvd.allgather_async(np.full(300_000, r, np.float32), name="borrow.np")
    hid = h._id
    got = h.wait()
    tail = got[-10:]  # a view: keeps the memory on its own
    assert hvd_c.hvd_poll(hid) == hvd_c.HVD_OK  # not released: the result borrows it
    del got, h
    gc.collect()
    assert hvd_c.hvd_poll(hid) == hvd_c.HVD_OK
    assert tail.tolist() == [n - 1] * 10
    del tail
    gc.collect()
    assert hvd_c.hvd_poll(hid) == hvd_c.HVD_ERR_INVALID_ARGUMENT  # released with the last view
    t = hvd.alltoall_async(torch.arange(2 * n, dtype=torch.float64) + 10 * r, name="borrow.t")
    thid = t._id
    out = t.wait()
    out_view = out.view(n, 2)
    del out, t
    gc.collect()
    assert hvd_c.hvd_poll(thid) == hvd_c.HVD_OK
    assert out_view[:, 0].tolist() == [10 * k + 2 * r for k in range(n)]
    del out_view
    gc.collect()
    assert hvd_c.hvd_poll(thid) == hvd_c.HVD_ERR_INVALID_ARGUMENT
    empty = hvd.allgather(np.zeros((0, 3), np.int32), name="borrow.empty")
    assert empty.shape == (0, 3)


# ------------------------------------------------------------------ async

def test_async_handles(world):
    r, n = hvd.rank(), hvd.size()
    handles = [hvd.allreduce_async(np.full(3, i + r, np.float64), name="async.%d" % i, op=hvd.Sum)
               for i in range(4)]
    gather = hvd.allgather_async(np.array([r], np.int32))
    results = [h.wait() for h in reversed(handles)]
    assert gather.wait(timeout=60).tolist() == list(range(n))
    assert all(h.poll() for h in handles)
    again = handles[0].wait()  # waiting twice returns the same result
    dropped = hvd.allreduce_async(np.ones(2), name="async.dropped", op=hvd.Sum)
    del dropped  # memory stays alive until hvd is done with it
    barrier = hvd.barrier_async()
    barrier.wait()
    for i, res in enumerate(reversed(results)):
        np.testing.assert_array_equal(res, np.full(3, i * n + n * (n - 1) / 2))
    np.testing.assert_array_equal(again, results[-1])


def test_wait_releases_the_gil(world):
    r = hvd.rank()
    if r != 0:
        time.sleep(0.5)  # rank 0 waits about this long in hvd_wait
    handle = hvd.allreduce_async(np.ones(1), name="gil", op=hvd.Sum)
    ticks, stop = [0], threading.Event()

    def spin():  # pure Python: runs only while nobody holds the GIL
        while not stop.is_set():
            ticks[0] += 1
    thread = threading.Thread(target=spin)
    thread.start()
    before = ticks[0]
    handle.wait()
    during = ticks[0] - before
    stop.set()
    thread.join()
    if r == 0:
        assert during > 1000, "the spinning thread did not run during hvd_wait"


# ------------------------------------------------------------------ errors

def test_mismatched_shapes_raise_on_every_rank(world):
    r = hvd.rank()
    with pytest.raises(hvd.HvdMismatchError) as shape_err:
        hvd.allreduce(np.ones(3 + r, np.float32), name="mismatch.shape")
    with pytest.raises(hvd.HvdMismatchError):
        hvd.allreduce(np.ones(3, np.float32 if r == 0 else np.float64), name="mismatch.dtype")
    after = hvd.allreduce(np.ones(2), name="after.mismatch", op=hvd.Sum)  # still usable
    assert "mismatch.shape" in str(shape_err.value)
    assert shape_err.value.status == hvd_c.HVD_ERR_MISMATCH
    np.testing.assert_array_equal(after, np.full(2, float(hvd.size())))


def test_invalid_arguments_raise(world):
    with pytest.raises(hvd.HvdInvalidArgument):
        hvd.allreduce(np.ones(2, np.complex64))  # unsupported dtype
    with pytest.raises(ValueError):  # HvdInvalidArgument is a ValueError
        hvd.broadcast(np.ones(2), root_rank=hvd.size() + 5)
    assert hvd_c.hvd_wait(123456789, 0) == hvd_c.HVD_ERR_INVALID_ARGUMENT  # unknown handle
    err = hvd.HvdPeerLostError("x")
    assert isinstance(err, hvd.HvdInternalError) and isinstance(hvd.HvdTimeoutError("t"),
                                                                  TimeoutError)


# --------------------------------------------------------------- objects

def test_broadcast_and_allgather_object(world):
    r, n = hvd.rank(), hvd.size()
    obj = {"rank": r, "payload": list(range(r * 100)), "text": "é" * r}
    root = n - 1
    got = hvd.broadcast_object(obj, root_rank=root)
    gathered = hvd.allgather_object(obj)
    named = hvd.broadcast_object(("named", r), root_rank=0, name="obj")
    assert got == {"rank": root, "payload": list(range(root * 100)), "text": "é" * root}
    assert gathered == [{"rank": k, "payload": list(range(k * 100)), "text": "é" * k}
                        for k in range(n)]
    assert named == ("named", 0)


# ---------------------------------------------------------- process sets

def test_process_sets(world):
    r, n = hvd.rank(), hvd.size()
    last_only = hvd.add_process_set([n - 1])
    evens = hvd.add_process_set(hvd.ProcessSet(range(0, n, 2)))
    mine = None
    if r == n - 1:
        mine = hvd.allreduce(np.full(2, r, np.int32), op=hvd.Sum, process_set=last_only)
    in_evens = None
    if r % 2 == 0:
        in_evens = hvd.allreduce(np.full(2, r, np.int32), op=hvd.Sum, process_set=evens)
    info = (last_only.included(), last_only.rank(), last_only.size())
    hvd.remove_process_set(last_only)
    hvd.remove_process_set(evens)
    if r == n - 1:
        assert mine.tolist() == [r, r]
        assert info == (True, 0, 1)
    else:
        assert info[0] is False and info[1] == -1
    if r % 2 == 0:
        assert in_evens.tolist() == [sum(range(0, n, 2))] * 2


def test_join_with_uneven_work(world):
    r = hvd.rank()
    extra = None
    if r == 0:  # rank 0 has one more batch; the others feed zeros
        extra = hvd.allreduce(np.full(3, 5.0), name="join.extra", op=hvd.Sum)
    last = hvd.join()
    lasts = hvd.allgather(np.array([last], np.int32))
    if r == 0:
        np.testing.assert_array_equal(extra, np.full(3, 5.0))
    assert lasts.tolist() == [0] * hvd.size()


# ------------------------------------------------------------------ torch

def test_torch_every_dtype(world):
    r, n = hvd.rank(), hvd.size()
    got = {}
    for dt in TORCH_DTYPES:
        x = torch.arange(6).to(dt) * (r + 1)
        got[dt] = (hvd.allreduce(x, op=hvd.Sum), hvd.allreduce(x, op=hvd.Max),
                   hvd.allgather(torch.full((r + 1, 2), r).to(dt)),
                   hvd.broadcast(torch.full((3,), r).to(dt), root_rank=n - 1))
    tri = n * (n + 1) // 2
    for dt, (s, mx, g, b) in got.items():
        for t in (s, mx, g, b):
            assert isinstance(t, torch.Tensor) and t.dtype == dt
        assert torch.equal(s, torch.arange(6).to(dt) * tri)
        assert torch.equal(mx, torch.arange(6).to(dt) * n)
        assert torch.equal(g, torch.cat([torch.full((k + 1, 2), k) for k in range(n)]).to(dt))
        assert torch.equal(b, torch.full((3,), n - 1).to(dt))


def test_bool_reduces_logically_and_moves_unchanged(world):
    r, n = hvd.rank(), hvd.size()
    flags = [(r + i) % 3 == 0 for i in range(7)]
    any_ = [any((k + i) % 3 == 0 for k in range(n)) for i in range(7)]
    all_ = [all((k + i) % 3 == 0 for k in range(n)) for i in range(7)]
    for make in (lambda v: np.array(v, np.bool_), lambda v: torch.tensor(v, dtype=torch.bool)):
        x = make(flags)
        got = {op: hvd.allreduce(x, op=op) for op in (hvd.Sum, hvd.Max, hvd.Min, hvd.Product)}
        for op, g in got.items():
            assert g.dtype == x.dtype, op
            assert list(map(bool, g.tolist())) == (any_ if op in (hvd.Sum, hvd.Max) else all_), op
        gathered = hvd.allgather(make([r % 2 == 1] * (r + 1)))
        assert gathered.dtype == x.dtype
        assert [bool(v) for v in gathered.tolist()] == [k % 2 == 1 for k in range(n)
                                                       for _ in range(k + 1)]
        bc = hvd.broadcast(x, root_rank=n - 1)
        assert [bool(v) for v in bc.tolist()] == [(n - 1 + i) % 3 == 0 for i in range(7)]
        rs = hvd.reducescatter(make([(r + i) % 3 == 0 for i in range(n)]), op=hvd.Sum)
        assert rs.dtype == x.dtype and [bool(v) for v in rs.tolist()] == [any_[r]]
        with pytest.raises(hvd.HvdInvalidArgument, match="bool"):
            hvd.allreduce(x, op=hvd.Average)
        with pytest.raises(hvd.HvdInvalidArgument, match="scaled"):
            hvd.allreduce(x, op=hvd.Sum, postscale_factor=2.0)


def test_int16_in_every_collective(world):
    r, n = hvd.rank(), hvd.size()
    tri = n * (n + 1) // 2
    for make in (lambda v: np.array(v, np.int16), lambda v: torch.tensor(v, dtype=torch.int16)):
        x = make([1000 * (r + 1), -7, 3])
        assert hvd.allreduce(x, op=hvd.Sum).tolist() == [1000 * tri, -7 * n, 3 * n]
        assert hvd.allreduce(x, op=hvd.Average).tolist() == [round(1000 * tri / n), -7, 3]
        assert hvd.allreduce(x, op=hvd.Min).tolist() == [1000, -7, 3]
        rs = hvd.reducescatter(make([[r + k] for k in range(2 * n + 1)]), op=hvd.Sum)
        first = sum(2 + (k < 1) for k in range(r))
        assert rs.dtype == x.dtype
        assert rs.tolist() == [[n * (first + i) + n * (n - 1) // 2] for i in range(2 + (r < 1))]
        a2a = hvd.alltoall(make([100 * r + k for k in range(n)]))
        assert a2a.tolist() == [100 * k + r for k in range(n)]


def test_grouped_allgather_uneven_mixed_types(world):
    r, n = hvd.rank(), hvd.size()
    xs = [np.full((r + 1, 3), r, np.float32), np.arange(2 * r + 1, dtype=np.int16),
          np.full((r % 2, 2), r, np.float64), np.array([r % 2 == 0] * (r + 2)),
          torch.full((r + 1, 2), r, dtype=torch.bfloat16), torch.arange(r, dtype=torch.int64)]
    for out in (hvd.grouped_allgather(xs, name="gag"), hvd.grouped_allgather_async(xs).wait(),
                hvd.ops.grouped_allgather(xs)):
        assert len(out) == len(xs)
        for x, g in zip(xs, out):
            assert type(g) is type(x) and g.dtype == x.dtype
        np.testing.assert_array_equal(
            out[0], np.concatenate([np.full((k + 1, 3), k) for k in range(n)]).astype(np.float32))
        np.testing.assert_array_equal(
            out[1], np.concatenate([np.arange(2 * k + 1) for k in range(n)]).astype(np.int16))
        assert out[2].shape == (sum(k % 2 for k in range(n)), 2)
        np.testing.assert_array_equal(
            out[2], np.concatenate([np.full((k % 2, 2), k) for k in range(n)]).astype(np.float64))
        assert out[3].tolist() == [k % 2 == 0 for k in range(n) for _ in range(k + 2)]
        assert torch.equal(out[4], torch.cat([torch.full((k + 1, 2), k) for k in range(n)])
                           .to(torch.bfloat16))
        assert out[5].tolist() == [i for k in range(n) for i in range(k)]


def test_grouped_reducescatter_ops_and_scaling(world):
    r, n = hvd.rank(), hvd.size()
    rows = [2 * n + 1, n, 1]

    def block(total):  # this rank's (first row, rows) of a reduce-scatter
        first = sum(total // n + (k < total % n) for k in range(r))
        return first, total // n + (r < total % n)

    xs = [np.arange(m * 2, dtype=np.float64).reshape(m, 2) + r for m in rows]
    xs.append(torch.arange(3 * n, dtype=torch.int32).reshape(3 * n, 1) + r)
    shift = n * (n - 1) / 2
    for kwargs, scale in (({}, 1.0 / n), ({"op": hvd.Sum}, 1.0),
                          ({"op": hvd.Sum, "prescale_factor": 2.0, "postscale_factor": 0.25}, 0.5)):
        out = hvd.grouped_reducescatter(xs, **kwargs)
        assert len(out) == len(xs)
        for m, x, g in zip(rows, xs, out):
            first, mine = block(m)
            assert type(g) is type(x) and g.shape == (mine, 2)
            want = (n * np.arange(first * 2, (first + mine) * 2).reshape(mine, 2) + shift) * scale
            np.testing.assert_allclose(g, want, rtol=1e-12)
        first, mine = block(3 * n)
        want = (n * torch.arange(first, first + mine) + int(shift)).reshape(mine, 1)
        if "prescale_factor" not in kwargs:
            # Integer averages truncate toward zero, as Horovod's do.
            want = want if scale == 1.0 else torch.div(want, n, rounding_mode="trunc")
            assert out[3].dtype == torch.int32 and torch.equal(out[3], want.to(torch.int32))
    with pytest.raises(hvd.HvdInvalidArgument, match="scalar"):
        hvd.grouped_reducescatter([np.float32(1.0)])
    with pytest.raises(hvd.HvdInvalidArgument, match="HVD_OP_SUM and HVD_OP_AVERAGE"):
        hvd.grouped_reducescatter([np.ones(n)], op=hvd.Max)


def test_grouped_results_outlive_each_other(world):
    n = hvd.size()
    a, b = hvd.grouped_allgather([np.ones(1000, np.float32), torch.ones(3)])
    del a  # b keeps the group's handle alive
    import gc
    gc.collect()
    assert torch.equal(b, torch.ones(3 * n))


def test_torch_inplace_and_autograd_tensors(world):
    r, n = hvd.rank(), hvd.size()
    x = torch.full((4,), float(r + 1))
    out = hvd.allreduce_(x, op=hvd.Sum)
    p = torch.nn.Parameter(torch.full((2, 2), float(r)))
    hvd.broadcast_(p, root_rank=0)
    t = torch.arange(12.0).reshape(3, 4).t()  # non-contiguous
    hvd.allreduce_(t, op=hvd.Sum)
    avg = hvd.allreduce(torch.full((3,), float(r)))
    flags = hvd.allreduce(torch.tensor([True, r == 0]), op=hvd.Min)
    rs = hvd.reducescatter(torch.ones(2 * n, 2) * (r + 1), op=hvd.Sum)
    a2a = hvd.alltoall(torch.arange(n, dtype=torch.int32) + 10 * r)
    assert out is x and torch.equal(x, torch.full((4,), float(n * (n + 1) // 2)))
    assert torch.equal(p.data, torch.zeros(2, 2)) and p.requires_grad
    assert torch.equal(t, torch.arange(12.0).reshape(3, 4).t() * n)
    assert torch.equal(avg, torch.full((3,), (n - 1) / 2))
    assert flags.dtype == torch.bool and flags.tolist() == [True, False]
    assert torch.equal(rs, torch.full((2, 2), float(n * (n + 1) // 2)))
    assert a2a.tolist() == [10 * k + r for k in range(n)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_torch_cuda_allreduce(world):
    if not hvd.cuda_built():
        pytest.skip("hvd built without CUDA")
    r, n = hvd.rank(), hvd.size()
    x = torch.full((5,), float(r + 1), device="cuda")
    y = hvd.allreduce(x, op=hvd.Sum)
    assert y.device.type == "cuda"
    assert torch.equal(y.cpu(), torch.full((5,), float(n * (n + 1) // 2)))


# ----------------------------------------------------------- init(comm=)
# Last: it restarts hvd on a communicator from mpi4py.

@pytest.mark.skipif("OMPI_COMM_WORLD_SIZE" not in os.environ, reason="needs an mpirun job")
def test_init_on_mpi4py_communicator(world):
    if not hvd.mpi_built():
        pytest.skip("hvd built without MPI")
    from mpi4py import MPI
    world_rank, n = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
    hvd.shutdown()
    reversed_comm = MPI.COMM_WORLD.Split(0, n - 1 - world_rank)  # hvd ranks reversed
    hvd.init(comm=reversed_comm)
    ranks = hvd.allgather(np.array([world_rank], np.int32))
    assert hvd.mpi_enabled()
    assert hvd.rank() == n - 1 - world_rank and hvd.size() == n
    assert ranks.tolist() == list(reversed(range(n)))
