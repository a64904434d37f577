#!/usr/bin/python3
"""step_waits: runs a training script unchanged and prints, per rank, how
long its timed steps waited for hvd's collectives (hvd.get_stats()).

    mpirun -np 2 /usr/bin/python3 bench/launches/step_waits.py SCRIPT [ARGS...]

Horovod's pytorch_synthetic_benchmark.py (and bench/python/
ddp_synthetic_benchmark.py) time their steps with timeit.timeit, the first
call being the warm-up: every later call is timed here too, with hvd's
counters before and after. Per rank, one line:

  step_waits rank R: S steps, step T s, waited W s a step (N s for slower
  ranks, D s for data), data not hidden P%

N is the time a collective waited for every rank to submit it (wait_negotiating_ns),
D the rest: communication that backward did not hide. Nothing is printed
where the script never loaded hvd.
"""
import os
import runpy
import sys
import time
import timeit

_timeit = timeit.timeit
_calls = []  # (seconds, steps, stats before, stats after)


def _stats():
    mod = sys.modules.get("hvd")
    return mod.get_stats() if mod is not None and hasattr(mod, "get_stats") else None


def _timed(stmt="pass", setup="pass", timer=timeit.default_timer, number=1000000, globals=None):
    before = _stats()
    t0 = time.perf_counter()
    result = _timeit(stmt, setup, timer, number, globals)
    _calls.append((time.perf_counter() - t0, number, before, _stats()))
    return result


def report():
    timed = [c for c in _calls[1:] if c[2] is not None and c[3] is not None]
    if not timed:
        return
    steps = sum(c[1] for c in timed)
    seconds = sum(c[0] for c in timed)
    delta = {k: sum(c[3][k] - c[2][k] for c in timed) for k in ("wait_ns", "wait_negotiating_ns")}
    waited = delta["wait_ns"] / 1e9 / steps
    slower = delta["wait_negotiating_ns"] / 1e9 / steps
    step = seconds / steps
    print("step_waits rank %s: %d steps, step %.3f s, waited %.4f s a step (%.4f s for slower ranks,"
          " %.4f s for data), data not hidden %.2f%%"
          % (os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("HVD_RANK", "?")), steps, step,
             waited, slower, waited - slower, 100 * (waited - slower) / step), flush=True)


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
