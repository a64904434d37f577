#!/usr/bin/python3
"""run_examples: issue 36 item 4. Horovod 0.28.1's own PyTorch examples, run
unchanged (taken from the Horovod mirror at run time, never copied into the
project) through hvd's `horovod` compatibility package and through Horovod
0.28.1 itself (built by bench/horovod/build_horovod.sh), one after the other:

  adasum    examples/adasum/adasum_small_model.py over a grid (mode, op,
            learning rate, x_max) at --np; prints both outputs (the steps to
            converge) and how many agree.
  elastic   examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py
            under `horovodrun -np N --min-np 1 --max-np N
            --host-discovery-script` (two hosts, localhost and
            127.0.0.1, both this machine), SIGKILLs a worker on 127.0.0.1
            --kill-after seconds into "Running benchmark...", and
            prints the exit code, the seconds from the kill until the
            survivors resume ("Running benchmark..." again) and until
            their next completed iteration, and the final img/s.

The synthetic benchmark without failures is bench/launches/run_training.py.

    /usr/bin/python3 bench/horovod/run_examples.py adasum [--np 2]
    /usr/bin/python3 bench/horovod/run_examples.py elastic [--reps 2]

Horovod's horovodrun gets `--network-interface lo`: without it, its probe of
the network interfaces does not finish in this machine's namespaces.
"""
import argparse
import itertools
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "launches"))
from run_training import horovod_example  # noqa: E402  (Horovod's script, src or mirror)
MIRROR = "/work/.mirror/horovod+horovod/repo"
ADASUM = "examples/adasum/adasum_small_model.py"
ELASTIC = "examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py"
PY = "/usr/bin/python3"


def launcher(args, impl):
    """(horovodrun command prefix, environment) for 'hvd' or 'horovod'."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    if impl == "hvd":
        env["PYTHONPATH"] = os.path.join(args.build, "python")
        return [os.path.join(args.build, "bin", "horovodrun")], env
    env["PYTHONPATH"] = args.horovod_install
    return [PY, os.path.join(args.horovod_install, "bin", "horovodrun"),
            "--network-interface", "lo"], env


def last_stdout(text):
    lines = [l.split(">:", 1)[-1] for l in text.splitlines() if "<stdout>" in l]
    return lines[-1].strip() if lines else "(no output)"


def run_adasum(args, tmp):
    script = horovod_example(args, tmp, ADASUM)
    agree = total = 0
    grid = itertools.product(["square", "cubic"], ["Average", "Adasum"],
                             ["0.1", "0.01", "0.001"], ["0.5", "1", "2"])
    for mode, op, lr, x_max in grid:
        out = {}
        for impl in ("hvd", "horovod"):
            cmd, env = launcher(args, impl)
            p = subprocess.run(cmd + ["-np", str(args.np), PY, script, "--mode", mode,
                                      "--op", op, "--learning_rate", lr, "--x_max", x_max],
                               env=env, capture_output=True, text=True, timeout=args.timeout)
            out[impl] = last_stdout(p.stdout) if p.returncode == 0 else "exit %d" % p.returncode
        total += 1
        agree += out["hvd"] == out["horovod"]
        print("np=%d %-6s %-7s lr=%-5s x_max=%-3s  hvd: %-28s horovod: %s" %
              (args.np, mode, op, lr, x_max, out["hvd"], out["horovod"]), flush=True)
    print("adasum_small_model at np=%d: %d of %d configurations print the same" %
          (args.np, agree, total))


def worker_on(host, script):
    """PID of a worker running `script` on `host` (HOROVOD_HOSTNAME or
    HVD_HOSTNAME in its environment)."""
    keys = (b"HOROVOD_HOSTNAME=" + host.encode(), b"HVD_HOSTNAME=" + host.encode())
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if (len(argv) > 1 and argv[0].endswith(b"python3") and argv[1] == script.encode()
                and any(k in env for k in keys)):
            return int(pid)
    return None


def run_elastic_once(args, impl, script, tmp):
    disc = os.path.join(tmp, "discover.sh")
    with open(disc, "w") as f:
        # Two hosts, both this machine: Horovod blacklists the host of a
        # failed worker, so with one host its job could not go on.
        f.write("#!/bin/sh\necho localhost:%d\necho 127.0.0.1:%d\n" % (args.np // 2, args.np - args.np // 2))
    os.chmod(disc, 0o755)
    cmd, env = launcher(args, impl)
    cmd += ["-np", str(args.np), "--min-np", "1", "--max-np", str(args.np),
            "--host-discovery-script", disc, PY, script, "--model", args.model,
            "--batch-size", str(args.batch_size), "--num-warmup-batches", "2",
            "--num-batches-per-iter", str(args.batches), "--num-iters", str(args.iters)]
    start = time.time()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    watchdog = threading.Timer(args.timeout, os.killpg, (p.pid, signal.SIGKILL))
    watchdog.start()
    kill_at = killed = resumed = next_iter = None
    total = None
    log = []
    for line in p.stdout:
        now = time.time()
        log.append("%8.2f %s" % (now - start, line.rstrip()))
        if "Running benchmark" in line and kill_at is None:
            kill_at = now + args.kill_after
        elif "Running benchmark" in line and killed and resumed is None:
            resumed = now - killed
        if re.search(r"Iter #\d+", line) and killed and next_iter is None:
            next_iter = now - killed
        m = re.search(r"Total img/sec on (\d+) \S+: ([0-9.]+)", line)
        if m:
            total = float(m.group(2))
        if kill_at and not killed and now >= kill_at:
            pid = worker_on("127.0.0.1", script)
            if pid:
                os.kill(pid, signal.SIGKILL)
                killed = time.time()
                log.append("%8.2f [run_examples] SIGKILL worker pid %d" % (killed - start, pid))
    rc = p.wait()
    watchdog.cancel()
    with open(os.path.join(args.logs, "elastic.%s.%d.log" % (impl, int(start))), "w") as f:
        f.write("\n".join(log) + "\n")
    return rc, resumed, next_iter, total, time.time() - start


def run_elastic(args, tmp):
    script = horovod_example(args, tmp, ELASTIC)
    os.makedirs(args.logs, exist_ok=True)
    print("impl     rc  kill->resumed (s)  kill->next iter (s)  total img/s  wall (s)")
    for rep in range(args.reps):
        for impl in (("hvd", "horovod") if rep % 2 == 0 else ("horovod", "hvd")):
            rc, resumed, gap, total, wall = run_elastic_once(args, impl, script, tmp)
            print("%-8s %3d  %17s  %19s  %11s  %8.1f" % (
                impl, rc, "%.2f" % resumed if resumed is not None else "-",
                "%.2f" % gap if gap is not None else "-",
                "%.1f" % total if total is not None else "-", wall), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["adasum", "elastic"])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--batches", type=int, default=5, help="--num-batches-per-iter")
    p.add_argument("--iters", type=int, default=6, help="--num-iters")
    p.add_argument("--kill-after", type=float, default=5.0)
    p.add_argument("--timeout", type=int, default=900, help="seconds per run")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--horovod-install", default="/work/horovod-install")
    p.add_argument("--horovod-src", help="Horovod 0.28.1 checkout (default: the mirror)")
    p.add_argument("--mirror", default=MIRROR)
    p.add_argument("--logs", default=os.path.join(tempfile.gettempdir(), "hvd-examples"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (run_adasum if args.what == "adasum" else run_elastic)(args, tmp)


if __name__ == "__main__":
    sys.exit(main())
