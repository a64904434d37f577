"""libhvd from Python's ctypes, no binding involved: allreduce, allgather
(with hvd_result and with an allocator callback), broadcast and a
completion callback on numpy memory, exact values on every rank.

usage: test_ctypes.py <libhvd.so> <hvd.h>   (under mpirun/hvdrun -np N)
ctypes cannot read C, so the struct layouts below are checked against the
header through cffi's parser (hvd_header.py).
"""
import ctypes as C
import sys
import time

import numpy as np

import hvd_header

HVD_OK, HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MAX = 0, 0, 1, 3
kDLCPU, kDLInt, kDLFloat = 1, 0, 2


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32),
                ("dtype", DLDataType), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


CALLBACK = C.CFUNCTYPE(None, C.c_int64, C.c_int, C.c_void_p)
ALLOCATOR = C.CFUNCTYPE(C.c_void_p, C.c_size_t, C.POINTER(C.c_int64), C.c_int, DLDataType,
                        DLDevice, C.c_void_p)


class OpOptions(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("prescale_factor", C.c_double),
                ("postscale_factor", C.c_double), ("process_set", C.c_int32),
                ("callback", CALLBACK), ("callback_user_data", C.c_void_p),
                ("allocator", ALLOCATOR), ("allocator_user_data", C.c_void_p),
                ("cuda_stream", C.c_void_p)]


def check_layouts(header):
    import cffi
    ffi = cffi.FFI()
    ffi.cdef(hvd_header.cdef(header))
    for ours, theirs in [(DLTensor, "DLTensor"), (OpOptions, "hvd_op_options")]:
        assert C.sizeof(ours) == ffi.sizeof(theirs), theirs
        for name, _ in ours._fields_:
            assert getattr(ours, name).offset == ffi.offsetof(theirs, name), (theirs, name)


def load(path):
    lib = C.CDLL(path)
    lib.hvd_last_error.restype = C.c_char_p
    lib.hvd_allreduce_async.argtypes = [C.c_char_p, C.POINTER(DLTensor), C.POINTER(DLTensor),
                                        C.c_int, C.POINTER(OpOptions), C.POINTER(C.c_int64)]
    lib.hvd_allgather_async.argtypes = [C.c_char_p, C.POINTER(DLTensor), C.POINTER(OpOptions),
                                        C.POINTER(C.c_int64)]
    lib.hvd_broadcast_async.argtypes = [C.c_char_p, C.POINTER(DLTensor), C.c_int,
                                        C.POINTER(OpOptions), C.POINTER(C.c_int64)]
    for fn in (lib.hvd_poll, lib.hvd_release):
        fn.argtypes = [C.c_int64]
    lib.hvd_wait.argtypes = [C.c_int64, C.c_int64]
    lib.hvd_result.argtypes = [C.c_int64, C.POINTER(DLTensor)]
    lib.hvd_op_options_init.argtypes = [C.POINTER(OpOptions)]
    return lib


def tensor(a):
    """A DLTensor over numpy array `a` (kept alive by the caller)."""
    shape = (C.c_int64 * max(a.ndim, 1))(*a.shape)
    code = {"i": kDLInt, "f": kDLFloat}[a.dtype.kind]
    t = DLTensor(a.ctypes.data, DLDevice(kDLCPU, 0), a.ndim, DLDataType(code, a.itemsize * 8, 1),
                 shape, None, 0)
    t._keep = shape
    return t


def ok(lib, status):
    assert status == HVD_OK, "status %d: %s" % (status, lib.hvd_last_error().decode())


def main(libpath, header):
    check_layouts(header)
    lib = load(libpath)
    ok(lib, lib.hvd_init())
    r, n = lib.hvd_rank(), lib.hvd_size()
    handle = C.c_int64()

    # allreduce (Sum, float64) with a completion callback
    x = np.arange(6, dtype=np.float64) * (r + 1)
    out = np.empty_like(x)
    finished = []
    on_done = CALLBACK(lambda h, status, _user: finished.append((h, status)))
    opts = OpOptions()
    lib.hvd_op_options_init(C.byref(opts))
    assert opts.struct_size == C.sizeof(OpOptions) and opts.postscale_factor == 1.0
    opts.callback = on_done
    ok(lib, lib.hvd_allreduce_async(b"ctypes.sum", C.byref(tensor(x)), C.byref(tensor(out)),
                                    HVD_OP_SUM, C.byref(opts), C.byref(handle)))
    ok(lib, lib.hvd_wait(handle, -1))
    deadline = time.time() + 10
    while not finished and time.time() < deadline:
        time.sleep(0.01)
    ok(lib, lib.hvd_release(handle))
    np.testing.assert_array_equal(out, np.arange(6.0) * (n * (n + 1) // 2))
    assert finished == [(handle.value, HVD_OK)], finished

    # allreduce in place (Max, int32), default options
    y = np.array([r, -r, 7], dtype=np.int32)
    ty = tensor(y)
    ok(lib, lib.hvd_allreduce_async(None, C.byref(ty), C.byref(ty), HVD_OP_MAX, None,
                                    C.byref(handle)))
    ok(lib, lib.hvd_wait(handle, -1))
    ok(lib, lib.hvd_release(handle))
    assert y.tolist() == [n - 1, 0, 7]

    # allgather read through hvd_result (hvd-owned until release)
    g = np.full((r + 1, 2), r, dtype=np.int64)
    ok(lib, lib.hvd_allgather_async(b"ctypes.gather", C.byref(tensor(g)), None, C.byref(handle)))
    ok(lib, lib.hvd_wait(handle, -1))
    view = DLTensor()
    ok(lib, lib.hvd_result(handle, C.byref(view)))
    shape = tuple(view.shape[i] for i in range(view.ndim))
    gathered = np.ctypeslib.as_array(C.cast(view.data, C.POINTER(C.c_int64)),
                                     shape=shape).copy()
    ok(lib, lib.hvd_release(handle))
    expect = np.concatenate([np.full((k + 1, 2), k) for k in range(n)])
    np.testing.assert_array_equal(gathered, expect)

    # allgather into memory from an allocator callback (numpy owns it)
    buffers = []

    def allocate(nbytes, _shape, _ndim, _dtype, _device, _user):
        buffers.append(np.empty(max(nbytes, 1), dtype=np.uint8))
        return buffers[-1].ctypes.data
    allocator = ALLOCATOR(allocate)
    opts = OpOptions()
    lib.hvd_op_options_init(C.byref(opts))
    opts.allocator = allocator
    f = np.full(3, r + 0.5, dtype=np.float32)
    ok(lib, lib.hvd_allgather_async(b"ctypes.alloc", C.byref(tensor(f)), C.byref(opts),
                                    C.byref(handle)))
    ok(lib, lib.hvd_wait(handle, -1))
    ok(lib, lib.hvd_release(handle))
    assert len(buffers) == 1
    np.testing.assert_array_equal(buffers[0][:n * 12].view(np.float32),
                                  np.repeat(np.arange(n) + 0.5, 3).astype(np.float32))

    # broadcast from the last rank, in place
    b = np.full(4, r, dtype=np.float32)
    ok(lib, lib.hvd_broadcast_async(b"ctypes.bcast", C.byref(tensor(b)), n - 1, None,
                                    C.byref(handle)))
    ok(lib, lib.hvd_wait(handle, -1))
    ok(lib, lib.hvd_release(handle))
    assert b.tolist() == [n - 1] * 4

    # errors are status codes with a message
    assert lib.hvd_release(C.c_int64(handle.value)) == -2  # released twice
    assert lib.hvd_last_error()

    ok(lib, lib.hvd_shutdown())
    print("rank %d: ctypes OK" % r)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
