"""libhvd from cffi in ABI mode (no compiler): the cdef comes from hvd.h
itself (hvd_header.py). allreduce, allgather and broadcast on numpy memory,
exact values on every rank.

usage: test_cffi.py <libhvd.so> <hvd.h>   (under mpirun/hvdrun -np N)
"""
import sys

import cffi
import numpy as np

import hvd_header


def main(libpath, header):
    ffi = cffi.FFI()
    ffi.cdef(hvd_header.cdef(header))
    lib = ffi.dlopen(libpath)
    # Every function the header declares resolves in the library.
    for name in hvd_header.function_names(header):
        getattr(lib, name)

    def ok(status):
        assert status == lib.HVD_OK, "%d: %s" % (status, ffi.string(lib.hvd_last_error()).decode())

    def tensor(a, keep):
        """A DLTensor over numpy array `a`; `keep` holds the cffi memory."""
        t = ffi.new("DLTensor*")
        shape = ffi.new("int64_t[]", list(a.shape) or [0])
        keep.append(shape)
        t.data = ffi.cast("void*", a.ctypes.data)
        t.device.device_type = lib.kDLCPU
        t.ndim = a.ndim
        t.dtype.code = {"i": 0, "u": 1, "f": 2}[a.dtype.kind]
        t.dtype.bits = a.itemsize * 8
        t.dtype.lanes = 1
        t.shape = shape
        t.strides = ffi.NULL
        return t

    def run(submit):
        handle = ffi.new("hvd_handle*")
        ok(submit(handle))
        ok(lib.hvd_wait(handle[0], -1))
        return handle[0]

    ok(lib.hvd_init())
    r, n = lib.hvd_rank(), lib.hvd_size()
    keep = []
    assert ffi.string(lib.hvd_version()).decode().count(".") == 2

    # allreduce: Average of float32 with pre/postscale through the options
    x = np.full(5, r + 1, dtype=np.float32)
    out = np.empty_like(x)
    opts = ffi.new("hvd_op_options*")
    lib.hvd_op_options_init(opts)
    opts.prescale_factor = 2.0
    opts.postscale_factor = 3.0
    h = run(lambda hp: lib.hvd_allreduce_async(b"cffi.avg", tensor(x, keep), tensor(out, keep),
                                               lib.HVD_OP_AVERAGE, opts, hp))
    ok(lib.hvd_release(h))
    np.testing.assert_array_equal(out, np.full(5, (n + 1) / 2 * 6, dtype=np.float32))

    # allgather of uneven uint8 rows, read with hvd_result
    g = np.full((r + 2,), r, dtype=np.uint8)
    h = run(lambda hp: lib.hvd_allgather_async(ffi.NULL, tensor(g, keep), ffi.NULL, hp))
    view = ffi.new("DLTensor*")
    ok(lib.hvd_result(h, view))
    count = view.shape[0]
    gathered = np.frombuffer(ffi.buffer(view.data, count), dtype=np.uint8).copy()
    ok(lib.hvd_release(h))
    assert gathered.tolist() == [k for k in range(n) for _ in range(k + 2)]

    # broadcast int64 from rank 0, in place
    b = np.arange(3, dtype=np.int64) + 10 * r
    h = run(lambda hp: lib.hvd_broadcast_async(b"cffi.bcast", tensor(b, keep), 0, ffi.NULL, hp))
    ok(lib.hvd_release(h))
    assert b.tolist() == [0, 1, 2]

    # a bad argument is a status code plus a message, not a crash
    bad = lib.hvd_allreduce_async(b"cffi.bad", ffi.NULL, ffi.NULL, lib.HVD_OP_SUM, ffi.NULL,
                                  ffi.new("hvd_handle*"))
    assert bad == lib.HVD_ERR_INVALID_ARGUMENT
    assert ffi.string(lib.hvd_last_error())

    ok(lib.hvd_shutdown())
    print("rank %d: cffi OK" % r)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
