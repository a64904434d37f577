#!/usr/bin/python3
"""Alpha-beta model of one data-parallel training step (bench/notebook/scaling-runs.md).

A step is forward compute, then backward compute during which gradients
become ready one tensor at a time (reverse parameter order, evenly spread
over the backward pass). A background loop negotiates the ready tensors in
cycles, fuses them into buckets up to the fusion threshold and allreduces
the buckets one after another; communication overlaps the rest of the
backward pass. The step ends when compute and the last bucket are done.

One bucket of S bytes costs
    t_call + n_tensors * t_tensor + 2 * S / copy_bw   (fusion-buffer copies)
    + allreduce(S)
and allreduce(S) over P ranks, L per host, H = P / L hosts, each host with a
full-duplex link of B bytes/s and latency alpha per message step is
    ring          2 (P-1) alpha + f_ring S / B,   f_ring = 2 (P-1) / P
    hierarchical  2 (H-1) alpha + 2 (L-1) alpha_local + f_hier S / B,
                  f_hier = 2 (H-1) / H     (the intra-host steps overlap)
    hvd's MPI hierarchy (its ring cross step): t_call + f_hier S / (B * duplex),
                  its cross step a pipelined ring; duplex < 1 only with
                  Open MPI's default TCP flags at 2 hosts
    rabenseifner  (Open MPI's flat allreduce on the shaped cluster, 8 KiB
                  and more; below, recursive doubling)
                  t_call + sum over cross-host steps of bytes on the link
                  / (B * duplex) + S * serial(S)  (the steps run in turn;
                  duplex measured with mpi_probe.c's exchanges; serial(S),
                  what does not overlap the link, per byte by bytes per
                  call: mpi_probe.c's allreduce on the shaped links less
                  its link time, least over launches, not derived)
f is the number of bytes the busiest host link carries per byte reduced
(block placement: a ring crosses each host boundary once per direction).

Subcommands (all read CSVs, so they can be re-run after hvd's overheads
change; see bench/notebook/scaling-runs.md):
  calibrate LOCAL.csv [-o params.json]
      derive hvd's costs from hvd_bench rows (calibrate.sh writes them)
  validate SHAPED.csv... [--params params.json] [--w3-from CSV...]
      predict every measured shaped-cluster row (link goodput from
      params.json, measured by netns_cluster.sh check; Open MPI's TCP
      transport from params.json "mpi_tcp", measured with mpi_probe.c; call
      latency from each session's raw W3 rows, or, for a session without
      W3 rows, from --w3-from's, else from the sessions before it on the
      command line); report the error per backend and kind of row (hvd,
      hvd's old MPI hierarchy (Open MPI's allreduce across hosts), raw), the misses with their load,
      and the spread of configurations measured in several launches
  table SHAPED.csv
      markdown tables of a session: median (range) ms, time / wire limit
  published [--params params.json] [--plot docs/scaling_published.png]
      Horovod's 512-GPU setting: the model of Horovod as published and of
      hvd with its own measured overheads
"""
import argparse
import csv
import json
import math
import os
from dataclasses import dataclass, replace

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES_DIR = os.path.join(HERE, "..", "..", "tools", "hvd_bench", "shapes")
DEFAULT_PARAMS = os.path.join(HERE, "data", "params.json")

# Workload names (as measure_shaped.sh and hvd_bench write them) -> shape files.
SHAPE_FILES = {
    "W2": "resnet50_grads.txt",
    "resnet50": "resnet50_grads.txt",
    "W2b": "vgg16_grads.txt",
    "vgg16": "vgg16_grads.txt",
    "inception_v3": "inception_v3_grads.txt",
    "resnet101": "resnet101_grads.txt",
}


def load_tensor_bytes(name, shapes_dir=SHAPES_DIR):
    """Bytes of each float32 gradient tensor, in parameter order."""
    path = os.path.join(shapes_dir, SHAPE_FILES.get(name, name + "_grads.txt"))
    sizes = []
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].split()
            if line:
                sizes.append(4 * math.prod(int(d) for d in line))
    return sizes


# ---------------------------------------------------------------- the network


@dataclass
class Cluster:
    ranks: int
    per_host: int
    link_bw: float  # bytes/s per host link, each direction (goodput)
    alpha: float  # s per message step across hosts
    alpha_local: float = 2e-6  # s per message step inside a host
    local_bw: float = 10e9  # bytes/s inside a host (only when hosts == 1)
    # s per collective call whatever its size: on a shared, oversubscribed
    # machine the wait until every rank is scheduled, measured as the time
    # of a 1 KiB allreduce (W3) in the same session
    call_latency: float = 0.0
    # Open MPI's TCP transport (see mpi_tcp_cluster): the fraction of a host
    # link's two directions a step of pairwise exchanges across hosts gets,
    # as a function of the bytes each rank sends in the step (None: 1.0)
    duplex: object = None
    # s per byte allreduced of Open MPI's steps that do not overlap the link
    # (the exchanges and reductions inside a host, the transport's copies)
    serial_s_per_byte: float = 0.0
    # the same by bytes per call (None: serial_s_per_byte whatever the size)
    serial_by_call: object = None
    # hvd's MPI ring cross step: the fraction of the link's two directions
    # it gets, by bytes each rank sends per ring step (None: 1.0)
    ring_duplex: object = None

    @property
    def hosts(self):
        return max(1, self.ranks // self.per_host)


def traffic_factor(algorithm, cl):
    """Bytes on the busiest host link per byte allreduced."""
    P, H = cl.ranks, cl.hosts
    if P < 2:
        return 0.0
    if algorithm in ("hierarchical", "hierarchical_ring") and H > 1 and cl.per_host > 1:
        return 2.0 * (H - 1) / H
    if algorithm == "rabenseifner_far_first" and H > 1:
        # Open MPI's recursive halving pairs rank r with r ^ (P/2) first:
        # every rank of a host sends half its buffer across at once.
        return 2.0 * (P // 2) / P * cl.per_host if H == 2 else 2.0 * (P - 1) / P
    return 2.0 * (P - 1) / P


def halving_cross_time(nbytes, ranks, per_host, cl):
    """Seconds on the host links of recursive halving (reduce-scatter) then
    doubling (allgather) of nbytes among `ranks` ranks placed per_host to a
    host in blocks, as Open MPI's "rabenseifner" (coll_base_allreduce.c,
    allreduce_intra_redscat_allgather) runs it: the partner at step k is
    rank ^ 2^k, each rank sends half of what it still holds, so the steps
    with 2^k >= per_host cross hosts, per_host pairs per host link at once,
    and nothing else overlaps them (blocking sendrecv, then the reduction).
    Powers of two only (the ranks measured here)."""
    t, d, x = 0.0, 1, nbytes / 2.0
    while d < ranks:
        if d >= per_host:
            duplex = cl.duplex(x) if cl.duplex else 1.0
            t += 2 * per_host * x / (cl.link_bw * duplex)  # the RS step and its AG mirror
        d, x = 2 * d, x / 2.0
    return t


def allreduce_time(nbytes, cl, algorithm="ring"):
    """One allreduce call of nbytes (latency + bandwidth terms)."""
    P, H, L = cl.ranks, cl.hosts, cl.per_host
    if P < 2 or nbytes <= 0:
        return 0.0
    if algorithm == "rabenseifner" and H > 1 and nbytes < OMPI_RABENSEIFNER_FROM:
        # Open MPI's choice below 8 KiB at 4-15 ranks: recursive doubling,
        # every step the whole buffer; the steps with 2^k >= L cross hosts,
        # L pairs per link. Its latency is the W3 call's (also 1 KiB).
        duplex = cl.duplex(nbytes) if cl.duplex else 1.0
        return cl.call_latency + math.log2(H) * L * nbytes / (cl.link_bw * duplex)
    if algorithm == "rabenseifner" and H > 1:
        # Open MPI's flat allreduce: link time of its cross-host steps plus
        # what does not overlap the link (the steps inside the hosts, the
        # reductions, the transport's handshakes), one after the other.
        serial = cl.serial_by_call(nbytes) if cl.serial_by_call else cl.serial_s_per_byte
        return cl.call_latency + halving_cross_time(nbytes, P, L, cl) + nbytes * serial
    if algorithm == "hierarchical_ring" and H > 1 and L > 1:
        # hvd's hierarchy on MPI with MpiRingAllreduce: L rings,
        # one per share of nbytes / L, among the H carriers of one local
        # rank, reduce-scatter then allgather in nonblocking 256 KiB pieces,
        # each forwarded as soon as it has arrived: the steps overlap, so
        # the link carries f_hier of the bytes without idling between them;
        # the steps inside the host overlap too (hvd's pipeline).
        duplex = cl.ring_duplex(nbytes / (L * H)) if cl.ring_duplex else 1.0
        return cl.call_latency + traffic_factor("hierarchical", cl) * nbytes / (cl.link_bw * duplex)
    if algorithm == "hierarchical" and H > 1 and L > 1 and cl.duplex:
        # hvd's old hierarchy on MPI (Open MPI's allreduce across hosts): L shares of nbytes / L
        # cross at once, each Open MPI's Rabenseifner allreduce among the H
        # ranks of one local rank; the steps inside the host taken to
        # overlap them (hvd's pipeline). That code busy-polled beside them,
        # which this does not model.
        return cl.call_latency + halving_cross_time(nbytes / L, H, 1, replace(
            cl, link_bw=cl.link_bw / L))
    if cl.call_latency > 0:
        return cl.call_latency + traffic_factor(algorithm, cl) * nbytes / cl.link_bw
    if H == 1:
        return 2 * (P - 1) * cl.alpha_local + 2.0 * (P - 1) / P * nbytes / cl.local_bw
    if algorithm in ("hierarchical", "hierarchical_ring") and L > 1:
        lat = 2 * (H - 1) * cl.alpha + 2 * (L - 1) * cl.alpha_local
    else:
        # A ring over P ranks: the hops inside a host are cheap ones.
        lat = 2 * (H - 1) * cl.alpha + 2 * (P - H) * cl.alpha_local
    return lat + traffic_factor(algorithm, cl) * nbytes / cl.link_bw


# ------------------------------------------------------- the framework's loop


@dataclass
class Framework:
    name: str
    cycle: float  # s: Horovod sleeps this long before every cycle; hvd waits
    # at most this long for more work (it wakes on the first submission)
    sleeps_every_cycle: bool
    fusion_bytes: float  # fusion threshold
    t_tensor: float  # s per tensor (submit, negotiate, complete)
    t_call: float  # s per collective call (bucket) in the library
    neg_base: float  # s per negotiation cycle, fixed part
    neg_per_rank: float = 0.0  # s per cycle per rank (a coordinator that
    # talks to every rank in turn)
    neg_per_log2: float = 0.0  # s per cycle per log2(P) (a tree/bit allreduce)
    copy_bw: float = 0.0  # bytes/s of fusion-buffer copies; 0: no copies
    chunk_bytes: float = 0.0  # buckets split into calls of this size (0: no)
    algorithm: str = "ring"
    burst_wait: float = 10e-6  # hvd: quiet time that ends a submission burst
    solo_bytes: float = 0.0  # tensors at least this big skip fusion (0: none)

    def negotiation(self, P):
        return self.neg_base + self.neg_per_rank * (P - 1) + self.neg_per_log2 * math.log2(max(P, 2))


@dataclass
class Step:
    compute: float  # s: the whole single-device step
    fwd_fraction: float = 1.0 / 3.0  # backward takes twice the forward


def bucket_time(sizes, fw, cl):
    """One fused bucket: per-tensor and per-call costs, copies, allreduce.
    Returns (total seconds, seconds spent moving bytes)."""
    nbytes = sum(sizes)
    t = len(sizes) * fw.t_tensor
    moving = 0.0
    if fw.copy_bw > 0 and len(sizes) > 1:
        moving += 2.0 * nbytes / fw.copy_bw
    calls = 1
    if fw.chunk_bytes > 0 and nbytes > fw.chunk_bytes:
        calls = math.ceil(nbytes / fw.chunk_bytes)
    t += calls * fw.t_call
    for _ in range(calls):
        whole = allreduce_time(nbytes / calls, cl, fw.algorithm)
        wire = whole - allreduce_time(1e-9, cl, fw.algorithm)  # less the latency
        t += whole - wire
        moving += wire
    return t + moving, moving


def fuse(sizes, threshold, solo=0.0):
    """Greedy, in order; a tensor above the threshold (or at least `solo`
    bytes, when set) runs alone."""
    buckets, cur, cur_bytes = [], [], 0
    for s in sizes:
        if solo and s >= solo:
            buckets.append([s])
            continue
        if cur and cur_bytes + s > threshold:
            buckets.append(cur)
            cur, cur_bytes = [], 0
        cur.append(s)
        cur_bytes += s
    if cur:
        buckets.append(cur)
    return buckets


def next_cycle(t, pending, order, ready, fw):
    """One cycle of the background loop from time t: it sleeps one cycle
    (sleeps_every_cycle) or wakes on the first pending gradient and waits
    for the burst to end (quiet for burst_wait, at most one cycle), then
    takes what is ready. order: tensor indices by ready time; pending: the
    first of them not yet taken. Returns (time, index after the last taken)."""
    n = len(order)
    if fw.sleeps_every_cycle:
        t += fw.cycle
    else:
        t = max(t, ready[order[pending]])
        start = t
        nxt = pending
        while True:
            while nxt < n and ready[order[nxt]] <= t:
                nxt += 1
            if nxt < n and ready[order[nxt]] <= t + fw.burst_wait and t < start + fw.cycle:
                t = ready[order[nxt]]
                continue
            break
        t += fw.burst_wait
    take = pending
    while take < n and ready[order[take]] <= t:
        take += 1
    return t, take


def simulate(tensor_bytes, ready, fw, cl, busy=None):
    """Background loop: returns the time the last bucket completes.

    tensor_bytes, ready: per tensor, in submission order (ready times in s).
    busy: if a list, receives the (start, end) of the time every bucket
    moves bytes (copies and the allreduce's bandwidth term).
    """
    order = sorted(range(len(tensor_bytes)), key=lambda i: ready[i])
    pending = 0  # index into order of the first tensor not yet negotiated
    t = 0.0  # the loop's clock
    neg = fw.negotiation(cl.ranks)
    n = len(order)
    while pending < n:
        t, take = next_cycle(t, pending, order, ready, fw)
        t += neg
        if take == pending:
            continue
        batch = [tensor_bytes[order[k]] for k in range(pending, take)]
        for b in fuse(batch, fw.fusion_bytes, fw.solo_bytes):
            d, moving = bucket_time(b, fw, cl)
            if busy is not None and moving > 0:
                busy.append((t + d - moving, t + d))  # bytes on the move
            t += d
        pending = take
    return t


def _stretch(t0, work, busy, gamma):
    """Time at which `work` seconds of compute started at t0 end, when
    compute runs 1 + gamma times slower inside the busy intervals."""
    t = t0
    for b0, b1 in busy:
        if b1 <= t:
            continue
        if b0 > t:  # free stretch before this interval
            if work <= b0 - t:
                return t + work
            work -= b0 - t
            t = b0
        span = (b1 - t) / (1.0 + gamma)
        if work <= span:
            return t + work * (1.0 + gamma)
        work -= span
        t = b1
    return t + work


def training_step(tensor_bytes, step, fw, cl, gamma=0.0):
    """Step time with communication overlapping the backward pass.

    gamma: compute slows down by this factor while a collective moves bytes
    (its kernels and copies share the device's memory and PCIe); waiting
    out a collective's latency is taken to cost compute nothing.
    """
    n = len(tensor_bytes)
    t_fwd = step.compute * step.fwd_fraction
    t_bwd = step.compute - t_fwd
    if cl.ranks < 2:
        return step.compute
    busy = []
    end = t_fwd + t_bwd
    for _ in range(8 if gamma > 0 else 1):
        # Backward produces gradients from the last parameter to the first,
        # evenly over the backward pass (stretched where communication runs).
        ready = [0.0] * n
        t = t_fwd
        for k, i in enumerate(reversed(range(n))):
            t = _stretch(t, t_bwd / n, busy, gamma)
            ready[i] = t
        end = t
        new_busy = []
        comm_end = simulate(tensor_bytes, ready, fw, cl, new_busy)
        busy = new_busy
    return max(end, comm_end)


def efficiency(tensor_bytes, step, fw, cl, gamma=0.0):
    return step.compute / training_step(tensor_bytes, step, fw, cl, gamma)


# ----------------------------------------------------------- CSV helpers


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def median(values):
    v = sorted(values)
    if not v:
        return float("nan")
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


def fnum(row, key, default=float("nan")):
    try:
        return float(row.get(key, ""))
    except ValueError:
        return default


# ------------------------------------------------------------- calibration


def calibrate_local(rows):
    """hvd's costs per backend from calibrate.sh rows (np=2, one host).

    per cycle  = W3 hvd - W3 raw (one tensor: wake-up, negotiation, call)
    per tensor = (W4 hvd - W4 raw one call - per cycle) / 1000
    copy bw    = 2 * bytes(W2) / (W2 with --gap - W2 without), where hvd
                 copies every tensor into and out of the fusion buffer
    """
    out = {}
    w2_bytes = sum(load_tensor_bytes("W2"))
    for backend in sorted({r["backend"] for r in rows}):

        def med(workload, impl, variant="default"):
            return median(
                [
                    fnum(r, "median_ms") * 1e-3
                    for r in rows
                    if r["backend"] == backend
                    and r["variant"] == variant
                    and r["workload"] == workload
                    and r["impl"].startswith(impl)
                ]
            )

        raw = "raw MPI" if backend == "mpi" else "raw Gloo"
        cycle = med("W3", "hvd") - med("W3", raw)
        per_tensor = (med("W4", "hvd") - med("W4", raw + " one call") - cycle) / 1000.0
        extra = med("W2", "hvd", "gap") - med("W2", "hvd")
        out[backend] = {
            "neg_base": max(cycle, 0.0),
            "t_tensor": max(per_tensor, 0.0) if per_tensor == per_tensor else None,
            # nan (no gap rows) or noise below zero: not measurable, no copies
            "copy_bw": 2.0 * w2_bytes / extra if extra > 0 else 0.0,
            "samples": sum(1 for r in rows if r["backend"] == backend),
            "load1": median([fnum(r, "load1") for r in rows if r["backend"] == backend]),
        }
    # The per-tensor work is the core's, not the backend's: a backend
    # without W4 rows borrows the other's figure.
    known = [v["t_tensor"] for v in out.values() if v["t_tensor"] is not None]
    for v in out.values():
        if v["t_tensor"] is None:
            v["t_tensor"] = median(known) if known else 0.0
            v["t_tensor_borrowed"] = True
    return out


def session_latencies(rows, impl="raw"):
    """(backend, np, ranks per host) -> seconds of a 1 KiB allreduce (W3) in
    the session, raw calls (impl "raw") or through hvd ("hvd"): the least
    over its launches, the one other jobs on the machine disturbed least."""
    out = {}
    for r in rows:
        if r["workload"] == "W3" and r["impl"].startswith(impl):
            key = (r["backend"], int(r["np"]), int(r["per_host"]))
            out.setdefault(key, []).append(fnum(r, "median_ms") * 1e-3)
    return {k: min(v) for k, v in out.items()}


def session_cycles(rows):
    """(backend, np, ranks per host) -> seconds hvd's cycle adds to one small allreduce on
    the cluster (negotiation over the links): W3 through hvd less raw W3."""
    raw, hvd = session_latencies(rows, "raw"), session_latencies(rows, "hvd")
    return {k: max(0.0, hvd[k] - raw[k]) for k in raw if k in hvd}


def load_params(path):
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------- the shaped cluster

MPI_CHUNK = 4 * 2**20  # HVD_ALLREDUCE_CHUNK_BYTES default


def hvd_framework(p, backend, algorithm, cycle_cost):
    """hvd as calibrated: wakes on submission, 128 MiB fusion; a cycle costs
    what it was measured to cost on the cluster (W3 through hvd less raw)."""
    c = p["hvd"][backend]
    return Framework(
        name="hvd",
        cycle=1e-3,
        sleeps_every_cycle=False,
        fusion_bytes=128 * 2**20,
        t_tensor=c["t_tensor"],
        t_call=0.0,
        neg_base=cycle_cost,
        copy_bw=0.0,  # hvd_bench's tensors are adjacent views: no copies
        chunk_bytes=MPI_CHUNK if backend == "mpi" or algorithm.startswith("hierarchical") else 0.0,
        algorithm=algorithm,
        # flat MPI (and the old MPI hierarchy (Open MPI's allreduce across hosts)): tensors of a
        # quarter chunk or more run alone, in place; the ring hierarchy
        # fuses every size
        solo_bytes=MPI_CHUNK / 4 if backend == "mpi" and algorithm != "hierarchical_ring" else 0.0,
    )


# Open MPI 4.1's fixed decision (coll_tuned_decision_fixed.c,
# ompi_coll_tuned_allreduce_intra_dec_fixed, commutative ops): at 4-7 ranks
# ring below 16 B, recursive doubling below 8 KiB, else rabenseifner; at
# 8-15 ranks recursive doubling below 8 KiB, else rabenseifner.
OMPI_RABENSEIFNER_FROM = 8192


def flat_algorithm(backend):
    # Open MPI 4.1's allreduce of 8 KiB and more at 4 to 15 ranks (256 KiB
    # at 2-3) is "rabenseifner" (coll_tuned_decision_fixed.c): recursive
    # halving, then doubling; with ranks placed by host it crosses the host
    # links with 2(H-1)/H of the bytes, as the hierarchy does (measured with
    # the links' byte counters), but its steps run one after the other.
    # Below 8 KiB, recursive doubling (allreduce_time). Gloo's ring carries
    # 2(P-1)/P.
    return "rabenseifner" if backend == "mpi" else "ring"


def interp_log2(points, x):
    """Piecewise-linear in log2(x) through [[x, y], ...], flat outside."""
    pts = sorted(points)
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            f = (math.log2(x) - math.log2(x0)) / (math.log2(x1) - math.log2(x0))
            return y0 + f * (y1 - y0)
    return pts[-1][1]


def mpi_tcp_cluster(cl, p, flags, per_host):
    """Open MPI's TCP transport as measured with mpi_probe (params.json
    "mpi_tcp", not the validation rows): `flags` "default" (btl_tcp_flags
    as shipped: large messages by emulated RDMA put, which runs one
    direction of an exchange between two ranks at a time) or "send"
    (btl_tcp_flags=send, what hvdrun passes across hosts). duplex: one pair
    per host link, or per_host pairs sharing it (then directions of
    different pairs may overlap), by bytes per rank in the step;
    serial_s_per_byte: the same allreduce in 4 MiB calls on unshaped links at
    this np; serial_by_call, where mpi_tcp "shaped_allreduce" has probe
    rows for this np and flags (2 ranks per host): by bytes per call, the
    probe's time on the shaped links less the link time modelled here, per
    byte (shaped_residuals)."""
    m = p["mpi_tcp"][flags]
    table = m["duplex_one_pair"] if per_host == 1 else m["duplex_two_pairs"]
    serial = m["serial_s_per_byte"].get(str(cl.ranks), 0.0)
    cl = replace(cl, duplex=lambda x: interp_log2(table, x), serial_s_per_byte=serial)
    points = shaped_residuals(p, flags, cl) if per_host == 2 else []
    if points:
        cl = replace(cl, serial_by_call=lambda x: interp_log2(points, x))
    return cl


# which probe figure shaped_residuals takes: "min_ms" (fastest iteration)
# or "ms" (median of 3); bench/notebook/scaling-runs.md gives the counts with both
PROBE_STAT = "min_ms"


def shaped_residuals(p, flags, cl):
    """[[bytes per call, s per byte], ...]: mpi_probe allreduce rows on the
    shaped cluster (params.json mpi_tcp "shaped_allreduce", buffers of
    20-50 MiB, not the validated rows) at cl's np and these flags, less the
    link time of their calls (halving_cross_time with cl's duplex), per
    byte; per call size the least over the launches of each launch's
    fastest iteration (PROBE_STAT), the figure other jobs disturbed least,
    as the W3 call latency is. Measured, not derived: what of Open MPI's
    call does not overlap the link (bench/notebook/scaling-runs.md, "Open MPI's calls on
    the shaped links"). It includes the probe's own call latency, which
    allreduce_time adds again (at most 0.3 ms per call)."""
    rows = p["mpi_tcp"].get("shaped_allreduce", {}).get("rows", [])
    by_size = {}
    for r in rows:
        if r["flags"] != flags or r["np"] != cl.ranks:
            continue
        calls = math.ceil(r["bytes"] / r["chunk"]) if r["chunk"] else 1
        size = r["bytes"] / calls
        link = calls * halving_cross_time(size, cl.ranks, 2, cl)
        by_size.setdefault(size, []).append((r[PROBE_STAT] * 1e-3 - link) / r["bytes"])
    return [[k, min(v)] for k, v in sorted(by_size.items())]


L2_HALF = 512 * 1024  # hvd_bench's "cache-sized" chunks here: half the 1 MiB L2

# What carried a hierarchical row's cross-host step: the CSV's "cross"
# column when it has one ("tcpring": hvd's TcpRing; "mpiring":
# MpiRingAllreduce; "mpiallreduce": Open MPI's allreduce among the hosts,
# with tensors of 1 MiB or more as calls of their own, the MPI hierarchy of
# the first sessions; "backend": Gloo's ring). Rows without it are read
# from their label: "tcpring", or "mpiring"/"glooring"/"backend" for
# HVD_HIERARCHICAL_CROSS=backend; else the current default, TcpRing.
def cross_step(row):
    if row.get("cross"):
        return row["cross"]
    words = set(row["label"].split())
    if words & {"mpiring", "glooring", "backend"}:
        return "mpiring" if row["backend"] == "mpi" else "backend"
    return "tcpring"


def mpi_hier_is_ring(row):
    return cross_step(row) != "mpiallreduce"


def hier_on_tcp_ring(row):
    return cross_step(row) == "tcpring"


def skip_reason(row):
    """Why a row is not modelled (None: it is)."""
    if row["workload"] in ("W1", "W3") or row["label"] == "link":
        return "latency or link row"
    if row.get("rate", "1gbit") != "1gbit":
        return "links not shaped to 1gbit (the model's goodput is 1gbit's)"
    if "gap" in row["label"].split()[-1]:
        return "fusion-buffer copies (--gap): copy bandwidth not calibrated"
    if row["impl"].startswith("best"):
        return "duplicate of the best raw row"
    return None


def row_kind(row):
    """hvd (the current code), hvd-old (the old MPI hierarchy (Open MPI's allreduce across hosts)),
    raw, raw-idle (raw with hvd idle beside it)."""
    if row["impl"] == "hvd":
        if row["backend"] == "mpi" and row["label"].startswith("hier") and not mpi_hier_is_ring(row):
            return "hvd-old"
        return "hvd"
    return "raw-idle" if row["impl"].endswith("(hvd idle)") else "raw"


def predict_shaped(row, p, latencies, cycles):
    """Predicted seconds for one measure_shaped.sh row (None: not modelled):
    the time the links allow. Link goodput: p["link"] (one TCP stream,
    netns_cluster.sh check); call latency and hvd's cycle cost: the session's W3 rows
    at the same np and ranks per host (for the cross-host calls of the
    hierarchy: at np = hosts, one rank per host, when measured; else at the
    row's np); hvd's per-tensor cost: calibrate.sh; Open MPI's transport:
    p["mpi_tcp"] (mpi_probe)."""
    backend = row["backend"]
    impl = row["impl"].replace(" (hvd idle)", "")  # the same pattern, hvd idle beside it
    P, L = int(row["np"]), int(row["per_host"])
    lat = latencies.get((backend, P, L))
    if lat is None or skip_reason(row):
        return None
    cl = Cluster(P, L, p["link"]["goodput"], 0.0, call_latency=lat)
    send = "+send" in row["label"]
    if backend == "mpi" and "mpi_tcp" in p:
        cl = mpi_tcp_cluster(cl, p, "send" if send else "default", L)
    sizes = load_tensor_bytes(row["workload"])
    flat = flat_algorithm(backend)
    if impl == "hvd":
        hier = row["label"].startswith("hier")
        algorithm = "hierarchical" if hier else flat
        if hier and hier_on_tcp_ring(row):
            # TcpRing: the same ring of pieces on plain sockets, full duplex
            # whatever Open MPI's flags (its own connections).
            algorithm = "hierarchical_ring"
        elif hier and backend == "mpi" and mpi_hier_is_ring(row):
            algorithm = "hierarchical_ring"
            # With `send` the ring runs at the link's goodput. With Open
            # MPI's default flags, at 2 hosts a carrier's left and right
            # neighbours are one process, and the transport runs the two
            # directions of such an exchange in turn (mpi_probe: L pairs per
            # link, by bytes per rank per step; 1 MiB and less: 0.78); with
            # more hosts it sends and receives on different connections.
            cl = replace(cl, ring_duplex=cl.duplex if not send and P // L == 2 else None)
        fw = hvd_framework(p, backend, algorithm,
                           cycles.get((backend, P, L), p["hvd"][backend]["neg_base"]))
        if hier:
            # Calls of the pipeline are cross-host calls among one rank per host.
            hosts = max(2, P // L)
            # (a session without one rank per host: W3 at np = hosts, as
            # the 2026-11-24 validation did)
            near = [v for (b, n, _), v in latencies.items() if b == backend and n == hosts]
            cl = replace(cl, call_latency=latencies.get((backend, hosts, 1), min(near or [lat])))
        return simulate(sizes, [0.0] * len(sizes), fw, cl)
    if impl.endswith("per tensor"):
        return sum(allreduce_time(s, cl, flat) for s in sizes)
    if "chunked" in impl and backend == "mpi":
        # MPI: every call's steps run one after the other (Gloo's chunked
        # rows stay modelled as one call, as in the 2026-11-24 validation)
        chunk = L2_HALF if "cache-sized" in impl else MPI_CHUNK
        total = sum(sizes)
        calls = math.ceil(total / chunk)
        return calls * allreduce_time(total / calls, cl, flat)
    if impl.startswith("raw"):
        return allreduce_time(sum(sizes), cl, flat)
    return None


KINDS = (("hvd", "hvd"), ("hvd-old", "hvd, old MPI hierarchy (Open MPI's allreduce across hosts)"), ("raw", "raw"),
         ("raw-idle", "raw, hvd idle beside it"))


def count_lines(errs, indent=""):
    """Rows within 15% per backend and kind of row; errs: [(key, err, kind, load)]."""
    for b in ("gloo", "mpi"):
        e = [(x, kind, key[1].startswith("hier")) for key, x, kind, _ in errs if key[2] == b]

        def within(xs):
            return "%d of %d" % (sum(1 for x in xs if abs(x) <= 0.15), len(xs))

        parts = []
        for kind, name in KINDS:
            ek = [x for x, k, _ in e if k == kind]
            if ek and kind == "hvd":
                split = [(what, [x for x, k, h in e if k == kind and h == hier])
                         for what, hier in (("flat", False), ("hierarchical", True))]
                parts.append("%s %s: %s" % (name, within(ek), ", ".join(
                    "%s %s" % (what, within(xs)) for what, xs in split if xs)))
            elif ek:
                parts.append("%s %s" % (name, within(ek)))
        print("%s%s: within 15%%: %s (%s)" % (indent, b, within([x for x, _, _ in e]), "; ".join(parts)))


def cmd_validate(args):
    p = load_params(args.params)
    print("link goodput %.1f MB/s (%s)" % (p["link"]["goodput"] / 1e6, p["link"]["source"]))
    # W3 rows for sessions without their own: --w3-from's, else those of
    # the sessions before it on the command line (per np, ranks per host and
    # backend, the last file that has them)
    lent, lent_cycles, lenders = {}, {}, []
    for path in args.w3_from or []:
        rows = read_rows(path)
        lent.update(session_latencies(rows))
        lent_cycles.update(session_cycles(rows))
        lenders.append(path)
    total, all_rows = [], []
    for path in args.shaped:
        print("\n== %s" % path)
        rows = read_rows(path)
        latencies, cycles = session_latencies(rows), session_cycles(rows)
        if not latencies:
            if not lent:
                print("no W3 rows in this session and none to borrow (--w3-from): not validated")
                continue
            print("NO W3 ROWS IN THIS SESSION: call latency and hvd's cycle cost borrowed from "
                  "the W3 rows of %s" % ", ".join(lenders))
            latencies, cycles = dict(lent), dict(lent_cycles)
        elif not args.w3_from:
            lent.update(latencies)
            lent_cycles.update(cycles)
            lenders.append(path)
        total += validate_session(rows, p, latencies, cycles)
        all_rows += rows
    if len(args.shaped) > 1:
        print("\nall sessions:")
        count_lines(total)
    misses = [t for t in total if abs(t[1]) > 0.15]
    if misses:
        print("\nmisses (|err| > 15%%), %d:" % len(misses))
        for key, err, kind, load in sorted(misses, key=lambda t: (t[2], t[0][2], int(t[0][0]), t[0][1:])):
            print("  %-8s np=%s %-24s %-5s %-13s %-40s %+6.1f%%  load %s" % (
                kind, key[0], key[1], key[2], key[3], key[4], 100 * err, load))
    launch_spread(all_rows)


def code_of(r):
    """What a row ran, for pooling launches across labels: raw rows by
    implementation; hvd rows by algorithm (flat, hier, hier-ring: the MPI
    hierarchy with its ring cross step, hier-old: Open MPI's allreduce among the hosts)."""
    if row_kind(r) != "hvd-old" and r["impl"] != "hvd":
        return r["impl"]
    if not r["label"].startswith("hier"):
        return "hvd flat"
    if r["backend"] != "mpi":
        return "hvd hier"
    return "hvd hier-ring" if mpi_hier_is_ring(r) else "hvd hier-old"


def launch_spread(rows):
    """Configurations measured in several launches (over every session
    given, labels pooled where the code is the same): np, ranks per host,
    backend, Open MPI's TCP flags, workload, implementation. If the slowest
    launch is more than 1.15 / 0.85 = 1.35x the fastest, no figure is
    within 15% of both."""
    groups = {}
    for r in rows:
        if skip_reason(r) or int(r["np"]) < 4:
            continue
        flags = "send" if "+send" in r["label"] else "default"
        key = (code_of(r).startswith("hvd"), int(r["np"]), r["backend"],
               flags if r["backend"] == "mpi" else "", r["workload"], code_of(r))
        groups.setdefault(key, []).append(r)
    print("\nlaunches of one configuration (launch medians, ms; * = slowest / fastest > 1.35:"
          " no figure is within 15% of every launch):")
    for key, rs in sorted(groups.items()):
        if len(rs) < 2:
            continue
        ms = sorted(fnum(r, "median_ms") for r in rs)
        days = sorted({r["date"][:10] for r in rs})
        print("  %s np=%d %-5s %-7s %-4s %-40s %2d launches %6.0f-%-6.0f (median %6.0f) %.2fx  load %s, %s" % (
            "*" if ms[-1] / ms[0] > 1.15 / 0.85 else " ", key[1], key[2], key[3], key[4], key[5],
            len(rs), ms[0], ms[-1], median(ms), ms[-1] / ms[0], load_range(rs), " ".join(days)))


def load_range(rs):
    v = [fnum(r, "load1_before") for r in rs] + [fnum(r, "load1_after") for r in rs]
    return "%.1f-%.1f" % (min(v), max(v))


def validate_session(rows, p, latencies=None, cycles=None):
    """Prints the model against every modelled row group of one session;
    returns [(group key, relative error, kind of row, load range)]."""
    latencies = session_latencies(rows) if latencies is None else latencies
    cycles = session_cycles(rows) if cycles is None else cycles
    print("hvd cycle cost (W3 hvd - raw):", ", ".join(
        "%s np=%d/%d per host %.2f ms" % (b, n, l, 1e3 * v) for (b, n, l), v in sorted(cycles.items())))
    print("call latency (W3, raw):", ", ".join(
        "%s np=%d/%d per host %.2f ms" % (b, n, l, 1e3 * v)
        for (b, n, l), v in sorted(latencies.items())))
    print("measured: median over the launches (range min-max); err against the median;"
          " load: 1-min load average before-after the launches")
    print("%-4s %-24s %-5s %-13s %-40s %-8s %4s %9s %15s %9s %7s %9s" % (
        "np", "label", "bknd", "workload", "impl", "kind", "runs", "meas_ms", "range_ms", "model_ms",
        "err", "load"))
    errs, skipped = [], {}
    for key, rs in sorted(shaped_groups(rows).items(), key=lambda kv: (int(kv[0][0]), kv[0][1:])):
        why = skip_reason(rs[0])
        if why:
            if why != "latency or link row":
                skipped.setdefault(why, []).append(len(rs))
            continue
        pred = predict_shaped(rs[0], p, latencies, cycles)
        if pred is None:
            continue
        ms = [fnum(r, "median_ms") for r in rs]
        meas = median(ms)
        err = pred * 1e3 / meas - 1
        kind = row_kind(rs[0])
        errs.append((key, err, kind, load_range(rs)))
        rng = "%.1f-%.1f" % (min(ms), max(ms))
        print("%-4s %-24s %-5s %-13s %-40s %-8s %4d %9.1f %15s %9.1f %+6.1f%% %9s" % (
            key[0], key[1], key[2], key[3], key[4], kind, len(rs), meas, rng, pred * 1e3, 100 * err,
            load_range(rs)))
    for why, ns in sorted(skipped.items()):
        print("not modelled: %d row groups (%d launches): %s" % (len(ns), sum(ns), why))
    count_lines(errs)
    return errs


def shaped_groups(rows):
    """(np, label, backend, workload, impl) -> the rows of its launches."""
    groups = {}
    for r in rows:
        if r["label"] == "link" or int(r["np"]) < 4:
            continue
        groups.setdefault((r["np"], r["label"], r["backend"], r["workload"], r["impl"]), []).append(r)
    return groups


def cmd_calibrate(args):
    p = load_params(args.output) if os.path.exists(args.output) else {}
    p["hvd"] = calibrate_local(read_rows(args.local))
    p["hvd_source"] = os.path.basename(args.local)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(p, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(p, indent=2, sort_keys=True))


def cmd_table(args):
    """Markdown tables of a shaped session: median (min-max) ms over the
    launches, the time over the wire limit, and the load averages."""
    rows = read_rows(args.shaped)
    line_rate = 1e9 / 8  # bytes/s of a 1 Gbit/s link
    base = ["hvd flat", "hvd hierarchical", "raw per tensor", "raw one call"]
    # MPI rows with btl_tcp_flags=send (label "+send") get their own lines
    impls = base + [k + ", btl_tcp_flags=send" for k in base]

    def kind(r):
        send = ", btl_tcp_flags=send" if "+send" in r["label"] else ""
        if r["impl"] == "hvd":
            return ("hvd hierarchical" if r["label"].startswith("hier") else "hvd flat") + send
        if r["impl"].endswith("per tensor"):
            return "raw per tensor" + send
        if r["impl"].endswith("one call"):
            return "raw one call" + send
        return None  # chunked, "best" and "(hvd idle)" rows: not tabled

    for np_ in sorted({int(r["np"]) for r in rows if r["label"] != "link"}):
        sel = [r for r in rows if int(r["np"]) == np_ and r["label"] != "link" and r["workload"] != "W3"]
        if not sel:
            continue
        H = np_ // int(sel[0]["per_host"])
        loads = [fnum(r, "load1_before") for r in sel] + [fnum(r, "load1_after") for r in sel]
        print("\nnp=%d (%d hosts x %s), load average %.1f-%.1f, %d launches per cell at most"
              % (np_, H, sel[0]["per_host"], min(loads), max(loads), max(int(r["rep"]) for r in sel)))
        print("\n| workload | impl | MPI ms | MPI / wire | Gloo ms | Gloo / wire |")
        print("|---|---|---|---|---|---|")
        for w in ["W2", "inception_v3", "W2b"]:
            ws = [r for r in sel if r["workload"] == w]
            if not ws:
                continue
            nbytes = int(ws[0]["bytes"])
            wire = 2.0 * (H - 1) / H * nbytes / line_rate  # the least any algorithm sends
            for k in impls:
                if not any(kind(r) == k for r in ws):
                    continue
                cells = []
                for b in ["mpi", "gloo"]:
                    v = [fnum(r, "median_ms") for r in ws if r["backend"] == b and kind(r) == k]
                    if v:
                        rng = " (%.0f-%.0f)" % (min(v), max(v)) if len(v) > 1 else ""
                        cells += ["%.0f%s" % (median(v), rng), "%.2fx" % (median(v) / 1e3 / wire)]
                    else:
                        cells += ["-", "-"]
                print("| %s | %s | %s |" % (w, k, " | ".join(cells)))


# ------------------------------------------- Horovod's published setting


def cmd_published(args):
    # The published setting lives in published.py (it imports this file).
    import published

    published.cmd_published(args)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate", help="hvd's costs from calibrate.sh rows")
    c.add_argument("local")
    c.add_argument("-o", "--output", default=DEFAULT_PARAMS)
    c.set_defaults(func=cmd_calibrate)
    v = sub.add_parser("validate", help="predict the measured shaped-cluster rows")
    v.add_argument("shaped", nargs="+", help="one CSV per session (each with its own W3 rows)")
    v.add_argument("--params", default=DEFAULT_PARAMS)
    v.add_argument("--w3-from", nargs="+", metavar="CSV",
                   help="W3 rows for sessions that have none (default: the sessions before it)")
    v.set_defaults(func=cmd_validate)
    t = sub.add_parser("table", help="markdown tables of a shaped session")
    t.add_argument("shaped")
    t.set_defaults(func=cmd_table)
    pb = sub.add_parser("published", help="Horovod's 512-GPU setting, Horovod and hvd")
    pb.add_argument("--params", default=DEFAULT_PARAMS)
    pb.add_argument("--plot", help="write the figure here (PNG)")
    pb.add_argument("--shaped", help="add the validation panel from this CSV")
    pb.set_defaults(func=cmd_published)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
