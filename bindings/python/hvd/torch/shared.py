"""Tensors in host memory that the other ranks of the host can map
(hvd_alloc_shared, docs/tuning.md "Shared buffers"): an allreduce of such
tensors on every rank goes straight between the ranks' buffers, each byte
read once and written once, instead of through hvd's shared-memory slots.

    flat = hvd.shared_zeros(n)                   # one buffer, as DDP's buckets
    views = [flat[a:b].view(shape) for ...]      # the tensors: adjacent views
    hvd.grouped_allreduce_(views, op=hvd.Average)

The memory is freed (hvd_free_shared) when the last tensor on it is gone."""
import ctypes
import math

import torch

from .. import library_path
from .._errors import check

_lib = None


def _libhvd():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(library_path())  # the libhvd this package loaded
        lib.hvd_alloc_shared.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
        lib.hvd_free_shared.argtypes = [ctypes.c_void_p]
        _lib = lib
    return _lib


def _shared_bytes(nbytes):
    """A ctypes array over a new buffer from hvd_alloc_shared that frees the
    buffer when it goes (torch.frombuffer keeps it while a tensor uses it)."""
    lib = _libhvd()
    ptr = ctypes.c_void_p()
    check(lib.hvd_alloc_shared(nbytes, ctypes.byref(ptr)))
    address = ptr.value

    class Owned(ctypes.c_uint8 * nbytes):
        def __del__(self):
            lib.hvd_free_shared(address)

    return Owned.from_address(address)


def shared_zeros(*size, dtype=torch.float32):
    """A zero-filled CPU tensor of `size` in memory from hvd_alloc_shared."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    numel = math.prod(size)
    itemsize = torch.empty((), dtype=dtype).element_size()
    memory = _shared_bytes(max(1, numel) * itemsize)
    return torch.frombuffer(memory, dtype=dtype, count=max(1, numel))[:numel].view(size)
