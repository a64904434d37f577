#!/usr/bin/python3
"""step_waits: runs a training script unchanged and prints, per rank, where
its timed steps' time went: the main thread's CPU (the model's compute, and
whatever else that thread does), the process's other threads' CPU, and how
long the steps waited for hvd's collectives (hvd.get_stats()).

    mpirun -np 2 /usr/bin/python3 bench/launches/step_waits.py SCRIPT [ARGS...]

Horovod's pytorch_synthetic_benchmark.py (and bench/python/
ddp_synthetic_benchmark.py) time their steps with timeit.timeit, the first
call being the warm-up: every later call is timed here too, with hvd's
counters before and after. Per rank:

  step_cpu rank R: S steps, step T s, main thread M s a step, other
  threads O s a step

  step_waits rank R: S steps, step T s, waited W s a step (N s for slower
  ranks, D s for data), data not hidden P%

M and O are CPU time (time.thread_time, time.process_time - M). N is the
time a collective waited for every rank to submit it (wait_negotiating_ns),
D the rest: communication that backward did not hide. The step_waits line
is left out where the script never loaded hvd (DDP, local).
"""
import os
import runpy
import sys
import time
import timeit

_timeit = timeit.timeit
_calls = []  # (seconds, steps, stats before, stats after, main CPU s, process CPU s)


def _stats():
    mod = sys.modules.get("hvd")
    return mod.get_stats() if mod is not None and hasattr(mod, "get_stats") else None


def _timed(stmt="pass", setup="pass", timer=timeit.default_timer, number=1000000, globals=None):
    before = _stats()
    t0, main0, proc0 = time.perf_counter(), time.thread_time(), time.process_time()
    result = _timeit(stmt, setup, timer, number, globals)
    _calls.append((time.perf_counter() - t0, number, before, _stats(),
                   time.thread_time() - main0, time.process_time() - proc0))
    return result


def report():
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("HVD_RANK", "?"))
    timed = _calls[1:]
    if not timed:
        return
    steps = sum(c[1] for c in timed)
    step = sum(c[0] for c in timed) / steps
    main_cpu = sum(c[4] for c in timed) / steps
    print("step_cpu rank %s: %d steps, step %.3f s, main thread %.3f s a step, other threads"
          " %.3f s a step" % (rank, steps, step, main_cpu, sum(c[5] for c in timed) / steps - main_cpu),
          flush=True)
    timed = [c for c in timed if c[2] is not None and c[3] is not None]
    if len(timed) != len(_calls) - 1:  # hvd not loaded (DDP, local), or not from the start
        return
    delta = {k: sum(c[3][k] - c[2][k] for c in timed) for k in ("wait_ns", "wait_negotiating_ns")}
    waited = delta["wait_ns"] / 1e9 / steps
    slower = delta["wait_negotiating_ns"] / 1e9 / steps
    print("step_waits rank %s: %d steps, step %.3f s, waited %.4f s a step (%.4f s for slower ranks,"
          " %.4f s for data), data not hidden %.2f%%"
          % (rank, steps, step, waited, slower, waited - slower, 100 * (waited - slower) / step),
          flush=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    timeit.timeit = _timed
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        report()


if __name__ == "__main__":
    main()
