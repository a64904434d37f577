#!/usr/bin/python3
"""Horovod's published setting (bench/notebook/scaling-runs.md, "Horovod's published setting").

Models Horovod as it ran its published GPU benchmarks (0.9-0.13, 2017-18:
Pascal GPUs, 4 per server, 25 Gbit/s RoCE, NCCL 2 ring) on the gradient
tensors of Inception V3, ResNet-101 and VGG-16, fits three cluster
parameters on VGG-16 only, predicts Inception V3 and ResNet-101, and then
predicts hvd in the same setting with its own measured host-side costs.

    /usr/bin/python3 bench/scale_model/published.py [--plot docs/scaling_published.png]
    /usr/bin/python3 bench/scale_model/scale_model.py published [--plot ...]   (the same)

Pure arithmetic: nothing is measured here. Every number that is not fitted
is an assumption stated where it is defined.
"""
import argparse
import functools
import math
import os
import sys
from dataclasses import dataclass, replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_model as sm  # noqa: E402

# ------------------------------------------------------------ public figures

# Single-GPU images/s, batch 64, synthetic data, on the servers of Horovod's
# runs (4 Pascal GPUs each, 25 Gbit/s RoCE): Horovod's README at 830ef659
# (2017-09-03, "Update benchmark results"), row "Baseline single-GPU (batch
# size=64)". Cross-check, TensorFlow's own P100 figures (DGX-1, SXM2, batch
# 64, synthetic, May 2017): Inception V3 142, VGG16 154 images/s; no
# ResNet-101 (ResNet-50 219, ResNet-152 91.8), tensorflow/docs
# site/en/r1/guide/performance/benchmarks.md. Horovod's are 5-15% lower,
# as PCIe P100s are against SXM2 ones.
PASCAL_IMAGES_PER_S = {"inception_v3": 134.4, "resnet101": 119.4, "vgg16": 130.9}
BATCH = 64
TITLES = {"inception_v3": "Inception V3", "resnet101": "ResNet-101", "vgg16": "VGG-16"}

# Published scaling efficiencies (speed-up / GPUs) in that setting (RoCE,
# Pascal, 4 per server), Horovod on GPU with NCCL. The 128 and 512 figures
# are the sentences under the README's charts; the charts' other bars are
# images with no numbers in the text, so 8, 32, 64 and 256 GPUs have none.
#  16 GPUs, 4 servers: README 830ef659 (2017-09-03), "RDMA Horovod on GPU
#          (NCCL)": 2,022.6 (15.0x), 1,746.2 (14.6x), 1,787.4 (13.7x)
#          images/s over the baseline above.
# 128 GPUs, 32 servers: README 6bb6a2db (2017-10-17): "90% scaling
#          efficiency for both Inception V3 and ResNet-101, and 79% ... VGG-16"
# 512 GPUs, 128 servers: README 8318a898 (2018-05-10): 90%, 90%, 68%.
PUBLISHED = {
    16: {"inception_v3": 2022.6 / 16 / 134.4, "resnet101": 1746.2 / 16 / 119.4,
         "vgg16": 1787.4 / 16 / 130.9},
    128: {"inception_v3": 0.90, "resnet101": 0.90, "vgg16": 0.79},
    512: {"inception_v3": 0.90, "resnet101": 0.90, "vgg16": 0.68},
}
# Public points in other settings, not modelled (listed in bench/notebook/scaling-runs.md):
#  the paper (arXiv 1802.05799, section 8, figure 6): 88% at 128 GPUs for
#  Inception V3 and ResNet-101 over 25 GbE TCP (no RDMA);
#  README d54e3a88 (2017-09-05): 64 GPUs, 16 servers x 4 Pascal, plain
#  40 Gbit/s, TCP Horovod on GPU (NCCL), baseline 148.8 / 136.0 / 149.6:
#  53.3x, 56.9x, 40.7x = 83.3%, 88.9%, 63.6%.

SCALES = [8, 16, 32, 64, 128, 256, 512]
GPUS_PER_SERVER = 4
LINK_LINE_RATE = 25e9 / 8  # bytes/s


# ------------------------------------------------------------ the cluster


@dataclass
class GpuCluster:
    """The published cluster. link_bw, fabric and gamma are fitted
    (fit_horovod); the rest are assumptions."""

    link_bw: float = 2.9e9  # fit: NCCL's goodput on one 25 Gbit/s RoCE link
    fabric: float = 0.0  # fit: goodput / (1 + fabric * log2(servers / 4)),
    # the fabric's oversubscription as the job spans more switches
    gamma: float = 0.0  # fit: compute runs 1 + gamma slower while bytes move
    # (NCCL's kernels and the fusion copies share the GPU's SMs and memory)
    alpha: float = 10e-6  # s per inter-server ring step (NCCL over RoCE)
    alpha_local: float = 3e-6  # s per intra-server ring step (PCIe)
    ctrl_msg: float = 5e-6  # s of the sender's or receiver's CPU per small MPI
    # message (Horovod's control messages: MPI over TCP, `-mca btl ^openib`
    # in its benchmark instructions)
    ctrl_latency: float = 20e-6  # s per round of a small MPI allreduce across servers
    cpu_link_bw: float = 2.5e9  # bytes/s of a CPU allreduce (MPI or Gloo over TCP)
    # on the same 25 Gbit/s link
    pcie_bw: float = 10e9  # bytes/s, device <-> pinned host copies (PCIe 3 x16)
    nccl_local_bw: float = 8e9  # bytes/s of an NCCL ring inside a PCIe server

    def servers(self, gpus):
        return max(1, gpus // GPUS_PER_SERVER)

    def link(self, gpus):
        return self.link_bw / (1.0 + self.fabric * math.log2(max(self.servers(gpus), 4) / 4.0))

    def cluster(self, gpus):
        return sm.Cluster(gpus, min(gpus, GPUS_PER_SERVER), self.link(gpus), self.alpha,
                          self.alpha_local, local_bw=self.nccl_local_bw)


def ring_allreduce(nbytes, gpus, g):
    """NCCL's flat ring over every GPU (NCCL 2.0-2.3 had rings only)."""
    return sm.allreduce_time(nbytes, g.cluster(gpus), "ring")


def hvd_hierarchical_allreduce(nbytes, gpus, g):
    """hvd's GPU hierarchy (core/backends/nccl/hierarchical_comm.cc): NCCL
    reduce-scatter inside the server, each GPU's share copied to pinned
    memory, allreduced across servers by the CPU backend (all 4 shares of a
    server at once over its one link), copied back, NCCL allgather inside
    the server. The steps run one after another (StagingComm waits)."""
    L = min(gpus, GPUS_PER_SERVER)
    H = g.servers(gpus)
    if H < 2:
        return ring_allreduce(nbytes, gpus, g)
    share = nbytes / L
    local = 2 * ((L - 1) * g.alpha_local + (L - 1) / L * nbytes / g.nccl_local_bw)
    staging = 2 * share / g.pcie_bw
    cpu_bw = min(g.cpu_link_bw, g.link(gpus))
    cross = 2 * (H - 1) * g.ctrl_latency + 2.0 * (H - 1) / H * nbytes / cpu_bw
    return local + staging + cross


# ------------------------------------------------------------ the frameworks


@dataclass
class GpuFramework:
    name: str
    cycle: float  # s: Horovod sleeps this long before every cycle; hvd waits
    # at most this long for more work (it wakes on the first submission)
    sleeps_every_cycle: bool
    async_launch: bool  # the loop launches a bucket and goes on (Horovod's
    # finalizer thread) or waits for it (hvd: ExecuteOnGpu waits the stream)
    fusion_bytes: float
    t_tensor: float  # s of the loop per tensor (bookkeeping, copy launches)
    t_call: float  # s of the loop per bucket (NCCL launch)
    neg_cycle: object  # (P, tensors in the cycle) -> s of negotiation per cycle
    neg_bucket: object  # P -> s of control messages per bucket
    allreduce: object  # (nbytes, gpus, g) -> s
    copy_bw: float = 200e9  # bytes/s, device-to-device fusion-buffer copies
    burst_wait: float = 10e-6  # hvd: quiet time that ends a submission burst


# The Horovod code each published point ran on, by date: until #188
# (06e2f2d2, 2018-03-01) every rank sent rank 0 one MPI message per
# request (mpi_ops.cc at 830ef659 and 6bb6a2db); from then on one request
# list per cycle (operations.cc at 8318a898).
HOROVOD_VERSION = {16: 2017, 128: 2017, 512: 2018}


def horovod_published_framework(g, version=2018):
    """Horovod 0.9-0.13 (operations.cc at 8318a898, 2018-05-10; mpi_ops.cc
    at 830ef659 and 6bb6a2db, 2017): the loop sleeps 5 ms before every
    cycle; every rank sends rank 0 its requests (2017: one message per
    tensor; 2018: one list) and a DONE message; rank 0 sends every fused
    response to each rank in turn before it runs it ((P-1) sends per bucket)
    and a DONE to each at the end of the cycle; no response cache; 64 MiB
    fusion; ncclAllReduce queued on a stream, completion left to a detached
    finalizer thread, so the loop does not wait for the bytes."""
    if version == 2017:
        neg = lambda P, k: 100e-6 + (k + 2) * (P - 1) * g.ctrl_msg  # noqa: E731
    else:
        neg = lambda P, k: 100e-6 + 3 * (P - 1) * g.ctrl_msg  # noqa: E731
    return GpuFramework(
        name="Horovod %d model" % version,
        cycle=5e-3,
        sleeps_every_cycle=True,
        async_launch=True,
        fusion_bytes=64 * 2**20,
        t_tensor=20e-6,  # request bookkeeping, copy launches (assumption)
        t_call=50e-6,  # NCCL launch, events for the finalizer (assumption)
        neg_cycle=neg,
        neg_bucket=lambda P: (P - 1) * g.ctrl_msg,
        allreduce=ring_allreduce,
    )


def hvd_gpu_framework(p, g, backend="mpi", hierarchical=False):
    """hvd in the same setting: its measured host-side costs per cycle
    (neg_base) and per tensor (t_tensor) from data/params.json, measured on
    CPU tensors at np=2 on one host; a cycle in steady state is one small
    bit-vector allreduce (response cache), log2(P) rounds across servers;
    no per-bucket control messages; 128 MiB fusion; it wakes on submission;
    each response runs to completion before the loop goes on. GPU-side
    costs (copy and NCCL launches) are taken equal to Horovod's: hvd's GPU
    path has never run on a GPU (docs/gpu.md)."""
    c = p["hvd"][backend]
    return GpuFramework(
        name="hvd hierarchical" if hierarchical else "hvd flat",
        cycle=1e-3,
        sleeps_every_cycle=False,
        async_launch=False,
        fusion_bytes=128 * 2**20,
        t_tensor=10e-6 + c["t_tensor"],  # + a batched copy launch share (assumption)
        t_call=50e-6,
        neg_cycle=lambda P, k: c["neg_base"] + g.ctrl_latency * math.log2(max(P, 2)),
        neg_bucket=lambda P: 0.0,
        allreduce=hvd_hierarchical_allreduce if hierarchical else ring_allreduce,
    )


# ------------------------------------------------------------ one step


def loop(tensor_bytes, ready, fw, g, gpus, busy):
    """The background loop and the GPU stream: returns when the last bucket
    is done. busy receives the (start, end) of every bucket's byte moving."""
    order = sorted(range(len(tensor_bytes)), key=lambda i: ready[i])
    n = len(order)
    pending, t, stream = 0, 0.0, 0.0
    latency = fw.allreduce(1e-9, gpus, g)
    while pending < n:
        t, take = sm.next_cycle(t, pending, order, ready, fw)
        t += fw.neg_cycle(gpus, take - pending)
        if take == pending:
            continue
        batch = [tensor_bytes[order[k]] for k in range(pending, take)]
        for b in sm.fuse(batch, fw.fusion_bytes):
            t += fw.neg_bucket(gpus) + len(b) * fw.t_tensor + fw.t_call
            nbytes = sum(b)
            moving = (fw.allreduce(nbytes, gpus, g) - latency
                      + (2.0 * nbytes / fw.copy_bw if len(b) > 1 else 0.0))
            begin = max(t, stream)
            stream = begin + latency + moving
            busy.append((stream - moving, stream))
            if not fw.async_launch:
                t = stream
        pending = take
    return max(t, stream)


@functools.lru_cache(maxsize=None)
def tensor_bytes(model):
    return tuple(sm.load_tensor_bytes(model))


def step_time(model, gpus, fw, g):
    """sm.training_step with this file's loop: backward produces gradients
    last parameter first, evenly over the backward pass, stretched by gamma
    where bytes move; the step ends when compute and the last bucket do."""
    sizes = tensor_bytes(model)
    step = sm.Step(BATCH / PASCAL_IMAGES_PER_S[model])
    t_fwd = step.compute * step.fwd_fraction
    t_bwd = step.compute - t_fwd
    n = len(sizes)
    busy, end, comm_end = [], step.compute, 0.0
    for _ in range(8 if g.gamma > 0 else 1):
        ready = [0.0] * n
        t = t_fwd
        for i in reversed(range(n)):
            t = sm._stretch(t, t_bwd / n, busy, g.gamma)
            ready[i] = t
        end = t
        new_busy = []
        comm_end = loop(sizes, ready, fw, g, gpus, new_busy)
        busy = new_busy
    return step.compute, max(end, comm_end), len(busy)


def efficiency(model, gpus, fw, g):
    compute, total, _ = step_time(model, gpus, fw, g)
    return compute / total


# ------------------------------------------------------------ fit and report

FIT_POINTS = [(16, "vgg16"), (128, "vgg16"), (512, "vgg16")]


def fit_horovod(base=None):
    """Least squares over a grid, on VGG-16's three published points only;
    every Inception V3 and ResNet-101 point is held out. `base` carries the
    assumed (not fitted) values."""
    base = base or GpuCluster()
    best = None
    for bw in [2.5e9 + 0.05e9 * i for i in range(13)]:  # 80-100% of line rate
        for fab in [0.02 * i for i in range(16)]:
            for gam in [0.05 * i for i in range(11)]:
                g = replace(base, link_bw=bw, fabric=fab, gamma=gam)
                err = sum((efficiency(m, n, horovod_at(n, g), g) - PUBLISHED[n][m]) ** 2
                          for n, m in FIT_POINTS)
                if best is None or err < best[0]:
                    best = (err, g)
    return best[1]


def horovod_at(n, g):
    """The Horovod model of the code that ran the published point at n GPUs."""
    return horovod_published_framework(g, HOROVOD_VERSION.get(n, 2018))


def held_out_misses(g):
    return {(n, m): 100 * (efficiency(m, n, horovod_at(n, g), g) - PUBLISHED[n][m])
            for n in PUBLISHED for m in PUBLISHED[n] if (n, m) not in FIT_POINTS}


def sensitivity(p):
    """Refits with each assumed latency halved and doubled: do the held-out
    misses and hvd's gain at 512 GPUs depend on those guesses?"""
    base = GpuCluster()
    variants = [
        ("ring step latencies x0.5", replace(base, alpha=base.alpha / 2, alpha_local=base.alpha_local / 2)),
        ("ring step latencies x2", replace(base, alpha=base.alpha * 2, alpha_local=base.alpha_local * 2)),
        ("control message cost x0.5", replace(base, ctrl_msg=base.ctrl_msg / 2)),
        ("control message cost x2", replace(base, ctrl_msg=base.ctrl_msg * 2)),
        ("hvd cycle round x2 (40 us)", replace(base, ctrl_latency=2 * base.ctrl_latency)),
    ]
    print("sensitivity (refitted on VGG-16 each time):")
    for label, b in variants:
        g = fit_horovod(b)
        hor, hvd = horovod_published_framework(g), hvd_gpu_framework(p, g, "mpi")
        miss = held_out_misses(g)
        worst = max(miss, key=lambda k: abs(miss[k]))
        gain = ", ".join("%s %+.1f" % (TITLES[m], 100 * (efficiency(m, 512, hvd, g) - efficiency(m, 512, hor, g)))
                         for m in PASCAL_IMAGES_PER_S)
        print("  %-28s fit %.2f GB/s, fabric %.2f, gamma %.2f; held-out within 5: %d of %d, worst %s@%d %+.1f;"
              " hvd flat - Horovod at 512: %s" % (
                  label, g.link_bw / 1e9, g.fabric, g.gamma, sum(1 for v in miss.values() if abs(v) <= 5),
                  len(miss), worst[1], worst[0], miss[worst], gain))


def run(params_path, plot=None, shaped=None, sens=False):
    p = sm.load_params(params_path)
    g = fit_horovod()
    frameworks = [
        horovod_published_framework(g, 2017),
        horovod_published_framework(g, 2018),
        hvd_gpu_framework(p, g, "mpi"),
        hvd_gpu_framework(p, g, "mpi", hierarchical=True),
    ]
    print("fitted on %s: link goodput %.2f GB/s (line %.3f), fabric %.2f, gamma %.2f" % (
        ", ".join("%s@%d" % (m, n) for n, m in FIT_POINTS), g.link_bw / 1e9,
        LINK_LINE_RATE / 1e9, g.fabric, g.gamma))
    print("link goodput at 16/128/512 GPUs: %s GB/s" % " / ".join(
        "%.2f" % (g.link(n) / 1e9) for n in (16, 128, 512)))
    print("hvd costs (params.json, MPI, np=2 on one host): per cycle %.1f us, per tensor %.2f us" % (
        1e6 * p["hvd"]["mpi"]["neg_base"], 1e6 * p["hvd"]["mpi"]["t_tensor"]))
    results = {}
    for fw in frameworks:
        for m in PASCAL_IMAGES_PER_S:
            results[(fw.name, m)] = [efficiency(m, n, fw, g) for n in SCALES]
    print("scaling efficiency, %")
    print("%-18s %-13s " % ("", "model") + " ".join("%6d" % n for n in SCALES))
    for m in PASCAL_IMAGES_PER_S:
        pub = ["%6s" % ("%.1f" % (100 * PUBLISHED[n][m]) if n in PUBLISHED else "-") for n in SCALES]
        print("%-18s %-13s " % ("published", m) + " ".join(pub))
        for fw in frameworks:
            print("%-18s %-13s " % (fw.name, m) + " ".join(
                "%6.1f" % (100 * e) for e in results[(fw.name, m)]))
    print("Horovod model of each point's code (16, 128: 2017; 512: 2018) minus published,"
          " points (* = held out, predicted):")
    miss = held_out_misses(g)
    for m in PASCAL_IMAGES_PER_S:
        d = []
        for n in sorted(PUBLISHED):
            held = (n, m) not in FIT_POINTS
            diff = miss[(n, m)] if held else 100 * (
                efficiency(m, n, horovod_at(n, g), g) - PUBLISHED[n][m])
            d.append("%d:%+.1f%s" % (n, diff, "*" if held else ""))
        print("  %-13s %s" % (m, " ".join(d)))
    print("held out within 5 points: %d of %d; largest miss %.1f points" % (
        sum(1 for v in miss.values() if abs(v) <= 5), len(miss), max(abs(v) for v in miss.values())))
    gloo = hvd_gpu_framework(p, g, "gloo")
    print("hvd flat, Gloo controller (per cycle %.0f us): %s" % (
        1e6 * p["hvd"]["gloo"]["neg_base"], ", ".join(
            "%s %.1f at 512" % (m, 100 * efficiency(m, 512, gloo, g)) for m in PASCAL_IMAGES_PER_S)))
    ablation(p, g)
    if sens:
        sensitivity(p)
    if plot:
        plot_published(plot, results, frameworks, g, p, shaped)
    return results


def ablation(p, g, scales=(128, 512)):
    """Horovod's model with one of hvd's differences at a time: where the
    gap between the two comes from."""
    hor = horovod_published_framework(g)
    hvd = hvd_gpu_framework(p, g, "mpi")
    steps = [
        ("Horovod 2018 model", hor),
        ("+ wakes on submission (no 5 ms sleep)", replace(hor, cycle=1e-3, sleeps_every_cycle=False)),
        ("+ waits for each bucket (hvd's sync)", replace(hor, async_launch=False)),
        ("+ hvd's negotiation (cache, no per-bucket msgs)",
         replace(hor, neg_cycle=hvd.neg_cycle, neg_bucket=hvd.neg_bucket)),
        ("+ 128 MiB fusion", replace(hor, fusion_bytes=128 * 2**20)),
        ("all four", replace(hvd, t_tensor=hor.t_tensor)),
        ("hvd flat", hvd),
    ]
    n = scales[-1]
    print("at %d GPUs: one ring allreduce call's latency %.1f ms; Horovod 2018's rank 0 spends %.1f ms of"
          " control messages per cycle and %.1f ms per bucket; hvd's cycle %.2f ms" % (
              n, 1e3 * ring_allreduce(1e-9, n, g), 1e3 * hor.neg_cycle(n, 0), 1e3 * hor.neg_bucket(n),
              1e3 * hvd.neg_cycle(n, 0)))
    print("allreduce calls per step at %d GPUs, Horovod 2018 model / hvd flat: %s" % (n, ", ".join(
        "%s %d / %d" % (TITLES[m], step_time(m, n, hor, g)[2], step_time(m, n, hvd, g)[2])
        for m in PASCAL_IMAGES_PER_S)))
    print("one difference at a time (efficiency %% at %s GPUs):" % " and ".join(map(str, scales)))
    print("%-48s " % "" + " ".join("%-13s" % TITLES[m] for m in PASCAL_IMAGES_PER_S))
    for label, fw in steps:
        cells = []
        for m in PASCAL_IMAGES_PER_S:
            cells.append("/".join("%.1f" % (100 * efficiency(m, n, fw, g)) for n in scales))
        print("%-48s " % label + " ".join("%-13s" % c for c in cells))


def plot_published(path, results, frameworks, g, p, shaped_csv=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = 4 if shaped_csv else 3
    fig, axes = plt.subplots(1, panels, figsize=(4.3 * panels, 4.2))
    styles = {"Horovod 2017 model": ("C1", "-."), "Horovod 2018 model": ("C0", "--"),
              "hvd flat": ("C3", "-"), "hvd hierarchical": ("C2", ":")}
    labels = {"Horovod 2017 model": "Horovod model, 2017 code (16, 128)",
              "Horovod 2018 model": "Horovod model, 2018 code (512)",
              "hvd flat": "hvd flat NCCL (prediction)",
              "hvd hierarchical": "hvd hierarchical (prediction)"}
    for ax, m in zip(axes, PASCAL_IMAGES_PER_S):
        for fw in frameworks:
            color, ls = styles[fw.name]
            ax.plot(SCALES, [100 * e for e in results[(fw.name, m)]], ls, color=color,
                    label=labels[fw.name])
        fit = [n for n in sorted(PUBLISHED) if (n, m) in FIT_POINTS]
        held = [n for n in sorted(PUBLISHED) if (n, m) not in FIT_POINTS]
        if fit:
            ax.plot(fit, [100 * PUBLISHED[n][m] for n in fit], "s", color="k", mfc="none",
                    label="published, fitted on")
        if held:
            ax.errorbar(held, [100 * PUBLISHED[n][m] for n in held], yerr=5, fmt="o", color="k",
                        capsize=3, label="published, held out (\u00b15 points)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(SCALES)
        ax.set_xticklabels([str(n) for n in SCALES])
        ax.set_ylim(50, 101)
        ax.set_title("%s (Pascal, 25 Gbit/s RoCE)" % TITLES[m], fontsize=10)
        ax.set_xlabel("GPUs (4 per server)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("scaling efficiency, %")
    axes[0].legend(fontsize=7, loc="lower left")
    axes[2].legend(fontsize=7, loc="lower left")
    if shaped_csv:
        ax = axes[3]
        rows = sm.read_rows(shaped_csv)
        latencies = sm.session_latencies(rows)
        cycles = sm.session_cycles(rows)
        for backend, marker in (("gloo", "o"), ("mpi", "s")):
            xs, ys = [], []
            for key, rs in sm.shaped_groups(rows).items():
                pred = sm.predict_shaped(rs[0], p, latencies, cycles) if key[2] == backend else None
                if pred:
                    xs.append(sm.median([sm.fnum(r, "median_ms") for r in rs]) / 1e3)
                    ys.append(pred)
            ax.plot(xs, ys, marker, label=backend, alpha=0.7)
        lim = [0.3, 40]
        ax.plot(lim, lim, "k-", lw=0.8)
        ax.fill_between(lim, [0.85 * v for v in lim], [1.15 * v for v in lim], color="k", alpha=0.08)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("measured s/iteration (shaped cluster)")
        ax.set_ylabel("model s/iteration")
        ax.set_title("Validation: np=4, 8 at 1 Gbit/s")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("wrote", path)


def cmd_published(args):
    run(args.params, args.plot, getattr(args, "shaped", None), getattr(args, "sensitivity", False))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", default=sm.DEFAULT_PARAMS)
    ap.add_argument("--plot", help="write the figure here (PNG)")
    ap.add_argument("--shaped", help="add the shaped-cluster validation panel from this CSV")
    ap.add_argument("--sensitivity", action="store_true", help="refit with the assumed latencies changed")
    cmd_published(ap.parse_args(argv))


if __name__ == "__main__":
    main()
