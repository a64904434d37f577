"""Python objects through collectives: pickle into uint8 tensors, sending
the size first so receivers can allocate."""
import pickle

import numpy as np

from .ops import allgather, broadcast_
from .process_sets import global_process_set


def _name(name, part):
    return None if name is None else "%s.%s" % (name, part)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Root's `obj` on every rank (pickled; must be picklable on root)."""
    from .basics import rank
    me = rank() if process_set.process_set_id == 0 else process_set.rank()
    if me == root_rank:
        payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
        size = np.array([payload.size], dtype=np.int64)
    else:
        size = np.zeros(1, dtype=np.int64)
    broadcast_(size, root_rank, _name(name, "size"), process_set)
    if me != root_rank:
        payload = np.zeros(int(size[0]), dtype=np.uint8)
    broadcast_(payload, root_rank, _name(name, "data"), process_set)
    return obj if me == root_rank else pickle.loads(payload.tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """A list of every rank's `obj`, in rank order."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    sizes = allgather(np.array([payload.size], dtype=np.int64), _name(name, "sizes"), process_set)
    data = allgather(payload, _name(name, "data"), process_set)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return [pickle.loads(data[offsets[i]:offsets[i + 1]].tobytes()) for i in range(len(sizes))]
