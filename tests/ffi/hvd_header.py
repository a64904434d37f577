"""hvd.h as a cffi cdef: the generator the build uses (cmake/hvd_cdef.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "cmake"))
from hvd_cdef import cdef, function_names  # noqa: E402,F401
