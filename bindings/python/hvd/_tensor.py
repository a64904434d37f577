"""Turning caller tensors into DLTensors and results back into caller tensors.

Zero-copy: a DLTensor points straight at the memory of a numpy array
(`__array_interface__` address) or a torch tensor (`data_ptr()`), so hvd
reads and writes the caller's buffer. Copies happen only where unavoidable:
non-contiguous inputs, and results whose size is known only after
negotiation (allgather, alltoall, reducescatter), which hvd owns and which
are copied out before the handle is released.

Other objects implementing `__dlpack__` (CPU memory) are viewed as numpy
arrays through `numpy.from_dlpack` and their results converted back with
their library's `from_dlpack` when it has one.
"""
import ctypes
import sys

import numpy as np

from . import hvd_c as _c
from ._errors import HvdInvalidArgument, HvdUnsupportedError

_NUMPY_KINDS = {"i": _c.kDLInt, "u": _c.kDLUInt, "f": _c.kDLFloat, "c": _c.kDLComplex}
_NUMPY_FROM_DL = {
    (_c.kDLInt, 8): np.int8, (_c.kDLInt, 16): np.int16, (_c.kDLInt, 32): np.int32,
    (_c.kDLInt, 64): np.int64, (_c.kDLUInt, 8): np.uint8, (_c.kDLUInt, 16): np.uint16,
    (_c.kDLUInt, 32): np.uint32, (_c.kDLUInt, 64): np.uint64, (_c.kDLFloat, 16): np.float16,
    (_c.kDLFloat, 32): np.float32, (_c.kDLFloat, 64): np.float64,
}


def _torch():
    """torch if the program imported it; hvd itself never imports torch."""
    return sys.modules.get("torch")


def is_torch(obj):
    torch = _torch()
    return torch is not None and isinstance(obj, torch.Tensor)


def _torch_dl_dtype(dtype):
    torch = _torch()
    table = {
        torch.uint8: (_c.kDLUInt, 8), torch.int8: (_c.kDLInt, 8), torch.int16: (_c.kDLInt, 16),
        torch.int32: (_c.kDLInt, 32), torch.int64: (_c.kDLInt, 64),
        torch.float16: (_c.kDLFloat, 16), torch.bfloat16: (_c.kDLBfloat, 16),
        torch.float32: (_c.kDLFloat, 32), torch.float64: (_c.kDLFloat, 64),
    }
    if dtype not in table:
        raise HvdInvalidArgument("hvd does not support torch dtype %s" % dtype)
    return table[dtype]


def _torch_from_dl_dtype(code, bits):
    torch = _torch()
    table = {
        (_c.kDLUInt, 8): torch.uint8, (_c.kDLInt, 8): torch.int8, (_c.kDLInt, 16): torch.int16,
        (_c.kDLInt, 32): torch.int32, (_c.kDLInt, 64): torch.int64,
        (_c.kDLFloat, 16): torch.float16, (_c.kDLBfloat, 16): torch.bfloat16,
        (_c.kDLFloat, 32): torch.float32, (_c.kDLFloat, 64): torch.float64,
    }
    return table[(code, bits)]


class Prepared:
    """A contiguous tensor hvd may use directly (`native`: numpy array or
    torch tensor) and how to hand a result back in the caller's type."""

    __slots__ = ("original", "native", "is_torch", "_was_bool", "_back")

    def __init__(self, original, native, was_bool, back):
        self.original = original
        self.native = native
        self.is_torch = is_torch(native)
        self._was_bool = was_bool
        self._back = back

    def to_caller(self, result):
        """`result`: numpy array or torch tensor of the same kind as native."""
        if self._was_bool:
            result = result != 0  # bool travels as uint8; reductions may give 2
        return self._back(result) if self._back else result

    def write_back(self):
        """After an in-place operation on `native`: make sure `original`
        holds the result (a no-op when native is original's own memory)."""
        orig, native = self.original, self.native
        if self.is_torch:
            if orig.data_ptr() != native.data_ptr() or orig.dtype != native.dtype:
                with _torch().no_grad():
                    orig.copy_(self.to_caller(native))
            return
        target = orig if isinstance(orig, np.ndarray) else np.from_dlpack(orig)
        if (target.dtype != native.dtype
                or target.__array_interface__["data"][0] != native.__array_interface__["data"][0]):
            np.copyto(target, self.to_caller(native) if self._was_bool else native)


def _dlpack_back(obj):
    """The converter from numpy back to the type of a generic DLPack object."""
    module = sys.modules.get(type(obj).__module__.split(".")[0])
    from_dlpack = getattr(module, "from_dlpack", None)
    return from_dlpack if callable(from_dlpack) else None


def prepare(obj):
    """A Prepared for any supported input (torch, numpy, __dlpack__, or
    anything numpy.asarray accepts: lists, scalars)."""
    if is_torch(obj):
        t = obj.detach()
        was_bool = t.dtype == _torch().bool
        if was_bool:
            t = t.to(_torch().uint8)
        return Prepared(obj, t.contiguous(), was_bool, None)
    back, a = None, obj
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__"):
        back = _dlpack_back(obj)
        a = np.from_dlpack(obj)
    a = np.asarray(a, order="C")  # C-contiguous (copies only if needed), keeps 0-d
    was_bool = a.dtype == np.bool_
    if was_bool:
        a = a.view(np.uint8)
    return Prepared(obj, a, was_bool, back)


def empty_like(native):
    if is_torch(native):
        return _torch().empty_like(native, memory_format=_torch().contiguous_format)
    return np.empty_like(native, order="C")


def copy_of(native):
    if is_torch(native):
        return native.clone(memory_format=_torch().contiguous_format)
    return np.array(native, order="C", copy=True)


def dltensor(native):
    """A DLTensor over `native`'s memory. The caller keeps `native` alive
    for as long as hvd may use the DLTensor."""
    if is_torch(native):
        code, bits = _torch_dl_dtype(native.dtype)
        addr = native.data_ptr()
        dev = native.device
        if dev.type == "cpu":
            dev_type, dev_id = _c.kDLCPU, 0
        elif dev.type == "cuda":
            dev_type, dev_id = _c.kDLCUDA, dev.index if dev.index is not None else 0
        else:
            raise HvdUnsupportedError("hvd does not support torch device %s" % dev)
        shape = tuple(native.shape)
    else:
        dt = native.dtype
        if dt.kind not in _NUMPY_KINDS:
            raise HvdInvalidArgument("hvd does not support numpy dtype %s" % dt)
        code, bits = _NUMPY_KINDS[dt.kind], dt.itemsize * 8
        addr = native.__array_interface__["data"][0]
        dev_type, dev_id = _c.kDLCPU, 0
        shape = native.shape
    t = _c.DLTensor(addr, dev_type, dev_id, code, bits, len(shape))
    for i, extent in enumerate(shape):
        t.set_shape(i, extent)
    return t


def cuda_stream_of(native):
    """cudaStream_t (as an int) a CUDA torch tensor is produced on, else None."""
    if is_torch(native) and native.device.type == "cuda":
        return _torch().cuda.current_stream(native.device).cuda_stream
    return None


def copy_result(view, like):
    """Copy hvd's result `view` (a DLTensor filled in by hvd_result) into a
    new tensor of the same kind as `like` (numpy array or torch tensor)."""
    code, bits = view.dtype.code, view.dtype.bits
    shape = tuple(view.shape_at(i) for i in range(view.ndim))
    nbytes = view.nbytes()
    if view.device.device_type != _c.kDLCPU:
        raise HvdUnsupportedError(
            "hvd's Python binding reads allgather/alltoall/reducescatter results from CPU memory "
            "only; move the tensor to the CPU first")
    raw = np.empty(nbytes, dtype=np.uint8)
    if nbytes:
        ctypes.memmove(raw.ctypes.data, view.data_address(), nbytes)
    if is_torch(like):
        # Through bytes, so dtypes numpy lacks (bfloat16) work too.
        return _torch().from_numpy(raw).view(_torch_from_dl_dtype(code, bits)).reshape(shape)
    return raw.view(_NUMPY_FROM_DL[(code, bits)]).reshape(shape)

