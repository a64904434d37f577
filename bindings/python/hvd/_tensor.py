"""Turning caller tensors into DLTensors and results back into caller tensors.

Zero-copy: a DLTensor points straight at the memory of a numpy array
(`__array_interface__` address) or a torch tensor (`data_ptr()`), so hvd
reads and writes the caller's buffer. Copies happen only where unavoidable:
non-contiguous inputs, and results whose size is known only after
negotiation (allgather, alltoall, reducescatter), which hvd owns and which
are copied out before the handle is released.

Other objects implementing `__dlpack__` (CPU memory) are viewed as numpy
arrays through `numpy.from_dlpack` and their results converted back with
their library's `from_dlpack` when it has one. A raw DLPack capsule (named
"dltensor", e.g. from `torch.utils.dlpack.to_dlpack`) is consumed: it becomes
a torch tensor when the program has imported torch, else a numpy array, and
results come back as that.

The common case, an allreduce of a contiguous CPU torch tensor, does not come
here at all: hvd._hvd_fast reads the tensor in C (see ops.py).
"""
import datetime
import sys

import numpy as np

from . import _hvd_fast
from . import hvd_c as _c
from ._errors import HvdInvalidArgument, HvdUnsupportedError, check

SUPPORTED = ("uint8, int8, int16, int32, int64, float16, bfloat16 (torch), float32, float64 "
             "and bool")

# DLPack's kDLBool (DLPack 0.8): one byte per element. hvd reduces it
# logically (Sum/Max: or, Min/Product: and).
DL_BOOL = 6

# numpy (kind, itemsize) -> DLPack (code, bits).
_NUMPY_TO_DL = {
    ("u", 1): (_c.kDLUInt, 8), ("i", 1): (_c.kDLInt, 8), ("i", 2): (_c.kDLInt, 16),
    ("i", 4): (_c.kDLInt, 32), ("i", 8): (_c.kDLInt, 64), ("f", 2): (_c.kDLFloat, 16),
    ("f", 4): (_c.kDLFloat, 32), ("f", 8): (_c.kDLFloat, 64), ("b", 1): (DL_BOOL, 8),
}
_NUMPY_FROM_DL = {
    (_c.kDLInt, 8): np.int8, (_c.kDLInt, 16): np.int16, (_c.kDLInt, 32): np.int32,
    (_c.kDLInt, 64): np.int64, (_c.kDLUInt, 8): np.uint8, (_c.kDLFloat, 16): np.float16,
    (_c.kDLFloat, 32): np.float32, (_c.kDLFloat, 64): np.float64, (DL_BOOL, 8): np.bool_,
}
# torch dtype name -> DLPack (code, bits).
_TORCH_NAMES_TO_DL = {
    "uint8": (_c.kDLUInt, 8), "int8": (_c.kDLInt, 8), "int16": (_c.kDLInt, 16),
    "int32": (_c.kDLInt, 32), "int64": (_c.kDLInt, 64), "float16": (_c.kDLFloat, 16),
    "bfloat16": (_c.kDLBfloat, 16), "float32": (_c.kDLFloat, 32), "float64": (_c.kDLFloat, 64),
    "bool": (DL_BOOL, 8),
}
_TORCH_DL = {}       # torch.dtype -> (code, bits), filled by _register
_TORCH_FROM_DL = {}  # (code, bits) -> torch.dtype

_CapsuleType = type(datetime.datetime_CAPI)


def _register(torch):
    """Teach this module and the C fast path torch's types and dtypes."""
    for name, code_bits in _TORCH_NAMES_TO_DL.items():
        _TORCH_DL[getattr(torch, name)] = code_bits
        _TORCH_FROM_DL[code_bits] = getattr(torch, name)
    _hvd_fast.register_torch(torch.Tensor, torch.nn.Parameter, torch.empty_like, dict(_TORCH_DL))


def _torch():
    """torch if the program imported it; hvd itself never imports torch."""
    torch = sys.modules.get("torch")
    if torch is not None and not _TORCH_DL:
        _register(torch)
    return torch


def is_torch(obj):
    torch = _torch()
    return torch is not None and isinstance(obj, torch.Tensor)


def unsupported_dtype(dtype):
    """The error for a dtype hvd does not reduce, named as the user knows it
    (numpy.complex64, torch.complex64)."""
    name = str(dtype) if str(dtype).startswith("torch.") else "numpy.%s" % np.dtype(dtype).name
    return HvdInvalidArgument("hvd does not support dtype %s; supported: %s" % (name, SUPPORTED))


def _torch_dl_dtype(dtype):
    try:
        return _TORCH_DL[dtype]
    except KeyError:
        raise unsupported_dtype(dtype) from None


class Prepared:
    """A contiguous tensor hvd may use directly (`native`: numpy array or
    torch tensor) and how to hand a result back in the caller's type.
    `original` is the caller's object (for a DLPack capsule: the tensor it
    became), which in-place operations return."""

    __slots__ = ("original", "native", "is_torch", "_back")

    def __init__(self, original, native, back, native_is_torch):
        self.original = original
        self.native = native
        self.is_torch = native_is_torch
        self._back = back

    def to_caller(self, result):
        """`result`: numpy array or torch tensor of the same kind as native."""
        return self._back(result) if self._back else result

    def write_back(self):
        """After an in-place operation on `native`: make sure `original`
        holds the result (a no-op when native is original's own memory)."""
        orig, native = self.original, self.native
        if self.is_torch:
            if orig.data_ptr() != native.data_ptr() or orig.dtype != native.dtype:
                with _torch().no_grad():
                    orig.copy_(native)
            return
        target = orig if isinstance(orig, np.ndarray) else np.from_dlpack(orig)
        if (target.dtype != native.dtype
                or target.__array_interface__["data"][0] != native.__array_interface__["data"][0]):
            np.copyto(target, native)


def _dlpack_back(obj):
    """The converter from numpy back to the type of a generic DLPack object."""
    module = sys.modules.get(type(obj).__module__.split(".")[0])
    from_dlpack = getattr(module, "from_dlpack", None)
    return from_dlpack if callable(from_dlpack) else None


class _CapsuleHolder:
    """What numpy.from_dlpack asks for: an object handing out the capsule."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def from_capsule(capsule):
    """The tensor a DLPack capsule describes (the capsule is consumed): torch
    when the program imported torch, else numpy (CPU memory only)."""
    device = _hvd_fast.dlpack_device(capsule)  # ValueError unless named "dltensor"
    torch = _torch()
    if torch is not None:
        import torch.utils.dlpack  # noqa: F401  (a submodule; torch itself is loaded)
        return torch.utils.dlpack.from_dlpack(capsule)
    if device[0] != _c.kDLCPU:
        raise HvdUnsupportedError("hvd reads DLPack capsules of device type %d only through "
                                  "torch; import torch first" % device[0])
    try:
        return np.from_dlpack(_CapsuleHolder(capsule, device))
    except (TypeError, ValueError, BufferError, RuntimeError) as exc:
        raise HvdInvalidArgument("hvd cannot read this DLPack capsule with numpy (%s); import "
                                 "torch to pass it" % exc) from None


def prepare(obj):
    """A Prepared for any supported input (torch, numpy, a DLPack capsule,
    __dlpack__, or anything numpy.asarray accepts: lists, scalars)."""
    if type(obj) is _CapsuleType:
        obj = from_capsule(obj)
    torch = _torch()
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided:
            raise HvdInvalidArgument(
                "hvd's dense collectives take strided tensors, not %s; for sparse gradients use "
                "hvd.torch.sparse_allreduce_async or DistributedOptimizer(sparse_as_dense=True)"
                % obj.layout)
        return Prepared(obj, obj.detach().contiguous(), None, True)
    back, a = None, obj
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__"):
        back = _dlpack_back(obj)
        a = np.from_dlpack(obj)
    a = np.asarray(a, order="C")  # C-contiguous (copies only if needed), keeps 0-d
    return Prepared(obj, a, back, False)


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
        try:
            code, bits = _NUMPY_TO_DL[(dt.kind, dt.itemsize)]
        except KeyError:
            raise unsupported_dtype(dt) from None
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


class _Borrowed:
    """hvd's result memory seen as a byte array (numpy's array interface);
    holds the Lease that keeps the memory until the last view is gone."""
    __slots__ = ("__array_interface__", "lease")

    def __init__(self, address, nbytes, lease):
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}
        self.lease = lease


def result_of(hid, like, index=0, lease=None):
    """The hvd-owned result of finished handle `hid` (allgather, alltoall,
    reducescatter) as a new tensor of the same kind as `like` (numpy array
    or torch tensor), on hvd's memory without a copy: the handle moves into
    a Lease that the tensor keeps, and is released with the tensor's last
    view (hvd_release then returns the memory to hvd's cache). Grouped
    operations read result `index` of each tensor and share one `lease`
    (from _hvd_fast.take(hid)) among them."""
    view = _c.DLTensor(0, _c.kDLCPU, 0, 0, 0, 0)
    check(_c.hvd_result_at(hid, index, view))
    code, bits = view.dtype.code, view.dtype.bits
    shape = tuple(view.shape_at(i) for i in range(view.ndim))
    nbytes = view.nbytes()
    if view.device.device_type != _c.kDLCPU:
        raise HvdUnsupportedError(
            "hvd's Python binding reads allgather/alltoall/reducescatter results from CPU memory "
            "only; move the tensor to the CPU first")
    if nbytes:
        if lease is None:
            lease = _hvd_fast.take(hid)
        raw = np.asarray(_Borrowed(view.data_address(), nbytes, lease))
    else:
        raw = np.empty(0, dtype=np.uint8)
    if is_torch(like):
        if not nbytes:  # torch cannot view an empty byte array as a wider dtype
            return _torch().empty(shape, dtype=_TORCH_FROM_DL[(code, bits)])
        # Through bytes, so dtypes numpy lacks (bfloat16) work too.
        return _torch().from_numpy(raw).view(_TORCH_FROM_DL[(code, bits)]).reshape(shape)
    return raw.view(_NUMPY_FROM_DL[(code, bits)]).reshape(shape)
