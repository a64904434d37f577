"""hvd.elastic.TorchState's cheap commit and join (run at np 3):

* async_commit=True copies the commit in the background: after more steps
  and restore() the state is bit-identical to a synchronous commit's (plain
  SGD and DistributedOptimizer + Adam, with an LR scheduler), the fences
  (optimizer.step, restore) wait for the copy, a failure while the copy is
  in flight still restores a complete commit, and a change nothing fences
  is reported;
* sync() streams rank 0's commit to ranks without one by point to point
  while the others, holding it already, do not call the blocking broadcast;
  every rank then holds bit-identical parameters and optimizer state.
"""
import time

import pytest
import torch

import hvd.torch as hvd
from hvd import HvdUnsupportedError
import hvd.torch.elastic as torch_elastic
from hvd.elastic.state import plan_for

torch.set_num_threads(1)


def _slow_copies(monkeypatch, seconds):
    """Delay every background copy, so that it is surely in flight."""
    real = torch_elastic._run_copies

    def slow(jobs):
        time.sleep(seconds)
        return real(jobs)
    monkeypatch.setattr(torch_elastic, "_run_copies", slow)


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5),
                               torch.nn.Linear(5, 3))


def _optimizer(kind, model):
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if kind == "adam":  # 0-d "step" tensors in its state
        return torch.optim.Adam(model.parameters(), lr=0.01)
    return hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                    named_parameters=model.named_parameters())


def _step(model, opt, state, i):
    x = torch.randn(8, 6, generator=torch.Generator().manual_seed(i))
    opt.zero_grad()
    model(x).pow(2).sum().backward()  # overlaps the background copy
    opt.step()
    state.step += 1


def _tensors(model, opt):
    """Every tensor of the model and the optimizer state, by name."""
    out = {"model." + k: v.clone() for k, v in model.state_dict().items()}
    for idx, entry in opt.state_dict()["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                out["opt.%d.%s" % (idx, key)] = value.clone()
    return out


def _run(kind, async_commit):
    """Three committed steps, two more, restore: what the commit held."""
    model = _net()
    opt = _optimizer(kind, model)
    state = hvd.elastic.TorchState(model, opt, step=0, async_commit=async_commit)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)  # wraps opt.step
    for i in range(3):
        _step(model, opt, state, i)
        sched.step()
        state.commit()
    committed = _tensors(model, opt)
    lr = opt.param_groups[0]["lr"]
    _step(model, opt, state, 3)
    sched.step()
    _step(model, opt, state, 4)
    state.restore()
    return committed, _tensors(model, opt), state.step, opt.param_groups[0]["lr"], lr


@pytest.mark.parametrize("kind", ["sgd", "distributed_adam"])
def test_async_commit_equals_a_synchronous_one(world, monkeypatch, kind):
    sync_commit, sync_restored, sync_step, sync_lr, _ = _run(kind, False)
    _slow_copies(monkeypatch, 0.2)  # the next step() must wait for it
    committed, restored, step, lr, lr_at_commit = _run(kind, True)
    assert set(restored) == set(sync_restored) and len(restored) > 7
    for name, value in restored.items():
        assert torch.equal(value, sync_restored[name]), name
        assert torch.equal(value, committed[name]), name
        assert torch.equal(committed[name], sync_commit[name]), name
    assert step == sync_step == 3 and lr == sync_lr == lr_at_commit


def test_async_commit_failure_in_flight_restores_the_whole_commit(world, monkeypatch):
    model = _net()
    opt = _optimizer("sgd", model)
    state = hvd.elastic.TorchState(model, opt, step=0, async_commit=True)
    for i in range(2):
        _step(model, opt, state, i)
        state.commit()
    _slow_copies(monkeypatch, 0.3)
    _step(model, opt, state, 2)
    state.commit()  # returns at once; the copy sleeps, then runs
    started = time.monotonic()
    committed = _tensors(model, opt)
    returned_at_once = state._copying is not None and not state._copying.done()
    with pytest.raises(RuntimeError, match="lost a peer"):
        x = torch.randn(8, 6)
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        raise RuntimeError("lost a peer")  # as a gradient allreduce would
    # Without waiting, restore() would copy back the previous commit (the
    # buffers are rewritten only once the delayed copy runs).
    state.restore()
    waited = time.monotonic() - started
    assert returned_at_once and waited > 0.2
    for name, value in _tensors(model, opt).items():
        assert torch.equal(value, committed[name]), name
    assert state.step == 3


def test_async_commit_reports_an_unfenced_change(world, monkeypatch):
    model = _net()
    opt = _optimizer("sgd", model)
    state = hvd.elastic.TorchState(model, opt, step=0, async_commit=True)
    _step(model, opt, state, 0)
    state.commit()
    _slow_copies(monkeypatch, 0.2)
    state.commit()
    with torch.no_grad():
        model[0].weight.mul_(2.0)  # not through the state's optimizer
    with pytest.raises(RuntimeError, match="changed while the commit copied it"):
        opt.step()


def test_sync_plan():
    assert plan_for([None, None, None]) == ("broadcast", [])
    assert plan_for([4, 4, 4]) == ("none", [])
    assert plan_for([4, None, 4, None]) == ("stream", [1, 3])
    assert plan_for([4, 3, None]) == ("broadcast", [])  # a failure inside commit()
    assert plan_for([None, 4]) == ("broadcast", [])  # rank 0 has no commit


def test_sync_plan_stream_off(monkeypatch):
    monkeypatch.setenv("HVD_ELASTIC_STREAM_JOIN", "0")
    assert plan_for([4, None]) == ("broadcast", [])


# Plain optimizers: only the ranks holding the commit train before the join.
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_join_streams_the_commit_without_a_blocking_broadcast(world, monkeypatch, kind):
    """The last rank is new (no commit); the others hold rank 0's commit."""
    r, n = hvd.rank(), hvd.size()
    new = r == n - 1
    model = _net(seed=100 + r if new else 0)  # the new rank starts elsewhere
    opt = _optimizer(kind, model)
    sampler = hvd.elastic.ElasticSampler(list(range(30)), shuffle=False)
    state = hvd.elastic.TorchState(model, opt, sampler=sampler, step=0, note="start")
    if not new:
        for i in range(3):
            _step(model, opt, state, i)
            sampler.record_batch(i, 2)
            state.note = "after %d" % i
            state.save()  # commit() without its collective: the new rank is not here yet
        state._commit_id = 3  # as after a first sync and three commits
    calls = []

    def blocking(*args, **kwargs):
        calls.append(args)
        raise AssertionError("blocking broadcast of the state")
    monkeypatch.setattr(torch_elastic, "broadcast_parameters", blocking)
    monkeypatch.setattr(torch_elastic, "broadcast_optimizer_state", blocking)
    state.sync()
    sends_left = len(state._sends)
    # The survivors could train on here while rank 0's sends are in flight.
    state.finish_pending()
    mine = torch.cat([v.reshape(-1).double() for v in _tensors(model, opt).values()])
    everyone = hvd.allgather(mine.reshape(1, -1))
    assert calls == []
    assert sends_left == (1 if r == 0 else 0)
    assert all(torch.equal(everyone[0], everyone[k]) for k in range(n))
    assert len(opt.state_dict()["state"]) == 6  # per parameter: momentum (Adam: step, moments)
    assert state.step == 3 and state.note == "after 2" and state._commit_id == 3
    assert sampler.processed_num == 3 * 2 * n
    # The new rank's commit is what it received: restore keeps it.
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    state.restore()
    again = torch.cat([v.reshape(-1).double() for v in _tensors(model, opt).values()])
    assert torch.equal(again, mine)


def test_join_falls_back_to_the_broadcast_where_p2p_is_refused(world, monkeypatch):
    """HVD_P2P=0: rank 0's sends are refused, and every rank takes the
    broadcast instead of the new rank waiting for sends that never come."""
    r, n = hvd.rank(), hvd.size()
    new = r == n - 1
    model = _net(seed=100 + r if new else 0)
    opt = _optimizer("sgd", model)
    state = hvd.elastic.TorchState(model, opt, step=0)
    if not new:
        for i in range(2):
            _step(model, opt, state, i)
            state.save()
        state._commit_id = 2

    def refused(ops):
        raise HvdUnsupportedError("point to point is off (HVD_P2P=0)")
    monkeypatch.setattr(torch_elastic, "batch_isend_irecv", refused)
    state.sync()
    assert state._sends == []
    mine = torch.cat([v.reshape(-1).double() for v in _tensors(model, opt).values()])
    everyone = hvd.allgather(mine.reshape(1, -1))
    assert all(torch.equal(everyone[0], everyone[k]) for k in range(n))
    assert state.step == 2 and state._commit_id == 2


def test_elastic_flags_are_spelled_as_the_cores(monkeypatch):
    from hvd.elastic.state import env_flag
    for word, value in [("1", True), ("on", True), ("TRUE", True), ("0", False), ("off", False),
                        ("no", False), ("", False)]:
        monkeypatch.setenv("HVD_ELASTIC_STREAM_JOIN", word)
        assert env_flag("HVD_ELASTIC_STREAM_JOIN", True) is value
    monkeypatch.setenv("HVD_ELASTIC_STREAM_JOIN", "maybe")
    with pytest.raises(ValueError, match="HVD_ELASTIC_STREAM_JOIN='maybe'"):
        plan_for([4, None])
