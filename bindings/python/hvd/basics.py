"""Start, stop and topology."""
from . import hvd_c as _c
from ._errors import check, error_for, HvdInvalidArgument
from ._handle import sweep_orphans

_BACKENDS = {None: _c.HVD_BACKEND_AUTO, "auto": _c.HVD_BACKEND_AUTO,
             "mpi": _c.HVD_BACKEND_MPI, "gloo": _c.HVD_BACKEND_GLOO}


def init(comm=None, process_sets=None, controller=None, cpu_operations=None):
    """Start hvd; collective over all ranks.

    comm: None (the launcher's world) or an mpi4py communicator to run on
    (hvd uses it until shutdown; the caller keeps ownership).
    process_sets: ProcessSet objects to register right away.
    controller / cpu_operations: "mpi", "gloo" or None (HVD_* variables).

    As in Horovod, init() while hvd is running does nothing beyond
    registering `process_sets` (shutdown() first to start over)."""
    if is_initialized():
        _add_sets(process_sets)
        return
    if comm is not None:
        if controller is not None or cpu_operations is not None:
            raise HvdInvalidArgument("init: comm implies MPI; do not pass controller/cpu_operations")
        check(_c.hvd_init_mpi_comm(comm.py2f()))
    elif controller is None and cpu_operations is None:
        check(_c.hvd_init())
    else:
        opts = _c.hvd_init_options()
        try:
            opts.controller = _BACKENDS[controller]
            opts.cpu_operations = _BACKENDS[cpu_operations]
        except KeyError as exc:
            raise HvdInvalidArgument("init: unknown backend %r" % exc.args[0]) from None
        check(_c.hvd_init_with(opts))
    _add_sets(process_sets)


def _add_sets(process_sets):
    """init's process_sets: ProcessSet objects or rank lists; "dynamic"
    (Horovod's switch for add_process_set after init) is accepted, as hvd
    always allows that."""
    if not process_sets or isinstance(process_sets, str):
        return
    from .process_sets import add_process_set
    for ps in process_sets:
        add_process_set(ps)


def shutdown():
    """Stop hvd; pending operations fail with HvdShutdownError."""
    status = _c.hvd_shutdown()
    sweep_orphans(force=True)
    from .process_sets import _forget_all
    _forget_all()
    check(status)


def is_initialized():
    return bool(_c.hvd_is_initialized())


def _query(fn):
    value = fn()
    if value < 0:
        raise error_for(_c.HVD_ERR_NOT_INITIALIZED)
    return value


def rank():
    return _query(_c.hvd_rank)


def size():
    return _query(_c.hvd_size)


def local_rank():
    return _query(_c.hvd_local_rank)


def local_size():
    return _query(_c.hvd_local_size)


def cross_rank():
    return _query(_c.hvd_cross_rank)


def cross_size():
    return _query(_c.hvd_cross_size)


def is_homogeneous():
    """True when every host runs the same number of ranks."""
    return bool(_query(_c.hvd_is_homogeneous))


def mpi_threads_supported():
    return bool(_c.hvd_mpi_threads_supported())


def mpi_enabled():
    return bool(_c.hvd_mpi_enabled())


def gloo_enabled():
    return bool(_c.hvd_gloo_enabled())


def mpi_built():
    return bool(_c.hvd_mpi_built())


def gloo_built():
    return bool(_c.hvd_gloo_built())


def nccl_built():
    """NCCL's version code (e.g. 22809 for 2.28.9) when built with NCCL,
    else 0 (Horovod's convention: truthy, and comparable to 2700)."""
    return int(_c.hvd_nccl_built())


def cuda_built():
    return bool(_c.hvd_cuda_built())


def start_timeline(file_path, mark_cycles=False):
    check(_c.hvd_start_timeline(file_path, int(bool(mark_cycles))))


def stop_timeline():
    check(_c.hvd_stop_timeline())


def dump_flight_record(path=None):
    """Writes this rank's flight record (its last operations, see
    docs/fault-tolerance.md) to `path`, or to
    $HVD_FLIGHT_RECORDER_DIR/hvd_flight.rank<N>.json when None."""
    check(_c.hvd_dump_flight_record(path))


_STATS_FIELDS = ("allreduced_bytes", "host_bytes_moved", "host_allreduces", "shm_chosen_calls",
                 "shm_streamed_calls", "shm_mapped_calls", "waits", "wait_ns",
                 "wait_negotiating_ns", "shm_backend_calls", "shm_peer_read_calls")


def get_stats():
    """hvd_get_stats as a dict: this process's counters since it loaded hvd
    (docs/c-api.md). Differences across a training step: wait_ns -
    wait_negotiating_ns is the communication synchronize() waited for, not
    hidden behind backward; wait_negotiating_ns, the wait for slower ranks."""
    s = _c.hvd_stats()
    s.struct_size = 8 * (1 + len(_STATS_FIELDS))  # size_t, then uint64_t fields
    check(_c.hvd_get_stats(s))
    return {f: int(getattr(s, f)) for f in _STATS_FIELDS}
