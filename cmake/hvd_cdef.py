"""The declarations of hvd.h as a cffi cdef, extracted from the header text
so they cannot drift from it. The build writes them to hvd.cdef (installed as
share/hvd/hvd.cdef and inside the Python package, see docs/ffi.md):

    python3 hvd_cdef.py capi/include/hvd/hvd.h <build>/share/hvd/hvd.cdef

cffi's cdef accepts plain C declarations only, so the extraction drops
comments, preprocessor lines (and whatever `#ifdef __cplusplus` guards) and
the HVD_API visibility macro, and puts the DLPack structs hvd.h uses in
front (the layout of dlpack.h v0.6+).
"""
import re
import sys

DLPACK_CDEF = """
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 } DLDeviceType;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 } DLDataTypeCode;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
"""


def declarations(header_text):
    """hvd.h without comments, preprocessor directives and C++ guards."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    kept, skip_depth, continued = [], 0, False
    for line in text.splitlines():
        stripped = line.strip()
        if continued:  # body of a multi-line macro (the *_INIT ones)
            continued = stripped.endswith("\\")
            continue
        if stripped.startswith("#"):
            continued = stripped.endswith("\\")
            directive = stripped[1:].strip()
            if skip_depth:
                if directive.startswith("if"):
                    skip_depth += 1
                elif directive.startswith("endif"):
                    skip_depth -= 1
            elif directive.startswith("ifdef __cplusplus"):
                skip_depth = 1
            continue
        if skip_depth:
            continue
        kept.append(line)
    text = "\n".join(line.rstrip() for line in kept).replace("HVD_API ", "").replace("HVD_API", "")
    return re.sub(r"\n{3,}", "\n\n", text)


def cdef(header_path):
    with open(header_path) as f:
        return DLPACK_CDEF + declarations(f.read())


def function_names(header_path):
    """Every hvd_* function hvd.h declares."""
    with open(header_path) as f:
        return sorted(set(re.findall(r"HVD_API[^;(]*?\b(hvd_\w+)\s*\(", f.read())))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: hvd_cdef.py HVD_H OUT")
    with open(sys.argv[2], "w") as out:
        out.write("/* cffi declarations of libhvd, generated from hvd.h: ffi.cdef(open(path).read()) */\n")
        out.write(cdef(sys.argv[1]))
