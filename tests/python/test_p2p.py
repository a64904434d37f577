"""Point-to-point messages from Python (hvd.send/recv/isend/irecv,
hvd.batch_isend_irecv with hvd.P2POp) on numpy arrays and torch tensors:
a ring exchange with exact per-rank values, order per tag, size errors,
and a two-stage GPipe-style pipeline on ranks 0 and 1 whose gradients equal
the single-process model's. Runs at any np >= 2; every test ends with all
ranks done with their messages (conftest's allreduce follows each test)."""
import numpy as np
import pytest
import torch

import hvd.torch as hvd

torch.set_num_threads(1)


def _ring():
    r, n = hvd.rank(), hvd.size()
    return r, n, (r + 1) % n, (r - 1) % n


def test_ring_isend_irecv_numpy(world):
    r, n, nxt, prv = _ring()
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.uint8):
        out = (np.arange(1000) + 7 * r).astype(dtype)
        into = np.zeros(1000, dtype=dtype)
        hr = hvd.irecv(into, src=prv, tag=3)
        hs = hvd.isend(out, dst=nxt, tag=3)
        assert hr.wait() is into
        assert hs.wait() is None
        np.testing.assert_array_equal(into, (np.arange(1000) + 7 * prv).astype(dtype))


def test_ring_blocking_torch(world):
    r, n, nxt, prv = _ring()
    out = torch.arange(12, dtype=torch.float32).reshape(3, 4) * (r + 1)
    into = torch.empty(3, 4)
    # Even ranks send first, odd ranks receive first: blocking calls must
    # pair up around the ring without deadlock (n even), or with the
    # nonblocking send for odd n.
    if n % 2 == 0:
        if r % 2 == 0:
            hvd.send(out, nxt)
            got = hvd.recv(into, prv)
        else:
            got = hvd.recv(into, prv)
            hvd.send(out, nxt)
    else:
        h = hvd.isend(out, nxt)
        got = hvd.recv(into, prv)
        h.wait()
    assert got is into
    assert torch.equal(into, torch.arange(12, dtype=torch.float32).reshape(3, 4) * (prv + 1))


def test_batch_isend_irecv_both_ways(world):
    r, n, nxt, prv = _ring()
    to_next = torch.full((5,), float(r), dtype=torch.float64)
    to_prev = np.full(7, 100 + r, dtype=np.int64)
    from_prev = torch.zeros(5, dtype=torch.float64)
    from_next = np.zeros(7, dtype=np.int64)
    ops = [hvd.P2POp(hvd.isend, to_next, nxt, tag=1), hvd.P2POp(hvd.irecv, from_prev, prv, tag=1),
           hvd.P2POp(hvd.isend, to_prev, prv, tag=2), hvd.P2POp(hvd.irecv, from_next, nxt, tag=2)]
    reqs = hvd.batch_isend_irecv(ops)
    for req in reqs:
        got = req.wait()
    assert got[1] is from_prev and got[3] is from_next
    assert torch.equal(from_prev, torch.full((5,), float(prv), dtype=torch.float64))
    np.testing.assert_array_equal(from_next, np.full(7, 100 + nxt, dtype=np.int64))


def test_order_per_tag(world):
    r = hvd.rank()
    if r == 0:
        hs = [hvd.isend(np.full(3, 10 * tag + k, dtype=np.int32), 1, tag=tag)
              for k in range(5) for tag in (1, 2)]
        for h in hs:
            h.wait()
    elif r == 1:
        bufs = {tag: [np.zeros(3, dtype=np.int32) for _ in range(5)] for tag in (2, 1)}
        hs = [hvd.irecv(b, 0, tag=tag) for tag in (2, 1) for b in bufs[tag]]
        for h in hs:
            h.wait()
        for tag in (1, 2):
            assert [int(b[0]) for b in bufs[tag]] == [10 * tag + k for k in range(5)]


def test_size_mismatch_and_bad_peer(world):
    r = hvd.rank()
    if r == 0:
        hvd.send(np.ones(8, dtype=np.float32), 1, tag=9)
        hvd.send(np.ones(4, dtype=np.float32), 1, tag=9)
    elif r == 1:
        with pytest.raises(hvd.HvdMismatchError, match="from rank 0"):
            hvd.recv(np.zeros(4, dtype=np.float32), 0, tag=9)
        got = hvd.recv(np.zeros(4, dtype=np.float32), 0, tag=9)
        np.testing.assert_array_equal(got, np.ones(4, dtype=np.float32))
    with pytest.raises(hvd.HvdInvalidArgument, match="not another rank"):
        hvd.isend(np.ones(2), r)
    with pytest.raises(ValueError):
        hvd.P2POp("broadcast", np.ones(2), 0)


# ------------------------------------------------------------ pipeline

def _stages():
    torch.manual_seed(1234)
    stage0 = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh()).double()
    stage1 = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                 torch.nn.Linear(16, 3)).double()
    g = torch.Generator().manual_seed(99)
    x = torch.randn(24, 8, generator=g, dtype=torch.float64)
    y = torch.randn(24, 3, generator=g, dtype=torch.float64)
    return stage0, stage1, x, y


def test_gpipe_two_stages_match_single_process(world):
    """Rank 0 runs stage 0, rank 1 stage 1, over 4 micro-batches: every
    forward first (activations 0 -> 1), then every backward in reverse
    (activation gradients 1 -> 0). Each rank's gradients equal those of
    the whole model run in one process on the whole batch."""
    r = hvd.rank()
    if r > 1:
        return
    stage0, stage1, x, y = _stages()
    micro = 4
    xs, ys = x.chunk(micro), y.chunk(micro)
    if r == 0:
        outs = []
        for m in range(micro):
            h = stage0(xs[m])
            outs.append(h)
            hvd.send(h.detach(), 1, tag=m)
        for m in reversed(range(micro)):
            grad = hvd.recv(torch.empty_like(outs[m]), 1, tag=100 + m)
            outs[m].backward(grad)
        mine = stage0
    else:
        acts = []
        for m in range(micro):
            h = hvd.recv(torch.empty(xs[m].shape[0], 16, dtype=torch.float64), 0, tag=m)
            acts.append(h.requires_grad_())
        losses = [torch.nn.functional.mse_loss(stage1(h), ys[m]) / micro
                  for m, h in enumerate(acts)]
        for m in reversed(range(micro)):
            losses[m].backward()
            hvd.send(acts[m].grad, 0, tag=100 + m)
        mine = stage1
    ref0, ref1, _, _ = _stages()
    torch.nn.functional.mse_loss(ref1(ref0(x)), y).backward()
    ref = ref0 if r == 0 else ref1
    for (name, p), q in zip(mine.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-12, atol=1e-14, msg=name)
