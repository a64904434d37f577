"""libhvd's C declarations for cffi (ABI mode), generated from hvd.h when
hvd was built (the same text as share/hvd/hvd.cdef):

    import cffi, hvd, hvd.ffi
    ffi = cffi.FFI()
    ffi.cdef(hvd.ffi.cdef())
    lib = ffi.dlopen(hvd.library_path())
"""
import os


def cdef():
    """hvd.h's declarations, with DLPack's structs in front, as cffi accepts them."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hvd.cdef")) as f:
        return f.read()
