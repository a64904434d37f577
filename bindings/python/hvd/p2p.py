"""Point-to-point messages: send/recv between two ranks, outside the
negotiation of collectives (pipeline parallelism and the like).

    if hvd.rank() == 0:
        hvd.send(activations, dst=1)
    else:
        hvd.recv(buffer, src=0)              # fills `buffer` in place

`isend`/`irecv` return a Handle whose wait() completes the message (and
returns the filled tensor for irecv). `batch_isend_irecv` posts a list of
P2POp as one operation. Messages from one rank to another on one tag
arrive in the order they were sent; the receive buffer must have exactly
the message's size in bytes. CPU numpy arrays and torch tensors (any
supported dtype); the operation deadline (HVD_OP_TIMEOUT_SECONDS) applies.
Ranks are ranks of `process_set` (default: all ranks).
"""
from . import hvd_c as _c
from ._errors import check
from ._handle import Handle, sweep_orphans
from ._tensor import dltensor, prepare
from .process_sets import global_process_set, set_id


def _options(process_set):
    opts = _c.hvd_p2p_options()
    opts.process_set = set_id(process_set)
    return opts


def _post(fn, *args):
    sweep_orphans()
    status, hid = fn(*args)
    check(status)
    return hid


def isend(tensor, dst, tag=0, process_set=global_process_set):
    """Send `tensor` to rank `dst`; a Handle (wait() returns None)."""
    prep = prepare(tensor)
    d = dltensor(prep.native)
    opts = _options(process_set)
    hid = _post(_c.hvd_send_async, d, int(dst), int(tag), opts)
    return Handle(hid, (prep, d, opts), lambda _: None)


def irecv(tensor, src, tag=0, process_set=global_process_set):
    """Receive into `tensor` from rank `src`; a Handle whose wait() returns
    `tensor`, filled."""
    prep = prepare(tensor)
    d = dltensor(prep.native)
    opts = _options(process_set)
    hid = _post(_c.hvd_recv_async, d, int(src), int(tag), opts)

    def finish(_):
        prep.write_back()
        return prep.original
    return Handle(hid, (prep, d, opts), finish)


def send(tensor, dst, tag=0, process_set=global_process_set):
    """Send `tensor` to rank `dst` and wait until it has gone."""
    isend(tensor, dst, tag, process_set).wait()


def recv(tensor, src, tag=0, process_set=global_process_set):
    """Receive into `tensor` from rank `src`; returns `tensor`."""
    return irecv(tensor, src, tag, process_set).wait()


class P2POp:
    """One message of batch_isend_irecv: `op` is hvd.isend or hvd.irecv (or
    "send"/"recv"), as torch.distributed.P2POp takes it."""

    __slots__ = ("op", "tensor", "peer", "tag", "process_set")

    def __init__(self, op, tensor, peer, tag=0, process_set=global_process_set):
        if op in (isend, send, "send", "isend"):
            self.op = "send"
        elif op in (irecv, recv, "recv", "irecv"):
            self.op = "recv"
        else:
            raise ValueError("P2POp: op must be hvd.isend or hvd.irecv, got %r" % (op,))
        self.tensor = tensor
        self.peer = int(peer)
        self.tag = int(tag)
        self.process_set = process_set

    def __repr__(self):
        return "P2POp(%s, peer=%d, tag=%d)" % (self.op, self.peer, self.tag)


def batch_isend_irecv(p2p_op_list):
    """Post every P2POp in list order as one operation. Returns a list with
    one Handle covering them all (torch returns one per op; waiting on each
    element of the list works alike). wait() returns the list of tensors,
    received ones filled."""
    ops = list(p2p_op_list)
    if not ops:
        raise ValueError("batch_isend_irecv: the list of P2POp is empty")
    sets = {set_id(o.process_set) for o in ops}
    if len(sets) != 1:
        raise ValueError("batch_isend_irecv: all P2POp must use one process set")
    preps = [prepare(o.tensor) for o in ops]
    ds = [dltensor(p.native) for p in preps]
    arr = _c.hvd_swig_p2p_ops_new(len(ops))
    try:
        for i, (o, d) in enumerate(zip(ops, ds)):
            kind = _c.HVD_P2P_SEND if o.op == "send" else _c.HVD_P2P_RECV
            _c.hvd_swig_p2p_ops_set(arr, len(ops), i, kind, d, o.peer, o.tag)
        opts = _options(ops[0].process_set)
        hid = _post(_c.hvd_batch_isend_irecv, arr, len(ops), opts)
    except BaseException:
        _c.hvd_swig_p2p_ops_free(arr)
        raise
    # The C side read the array when posting: it can go now.
    _c.hvd_swig_p2p_ops_free(arr)

    def finish(_):
        out = []
        for o, p in zip(ops, preps):
            if o.op == "recv":
                p.write_back()
            out.append(p.original)
        return out
    return [Handle(hid, (preps, ds, opts), finish)]
