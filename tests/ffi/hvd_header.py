"""The declarations of hvd.h as a cffi cdef, extracted from the header text
so they cannot drift from it.

cffi's cdef accepts plain C declarations only, so the extraction drops
comments, preprocessor lines (and whatever `#ifdef __cplusplus` guards) and
the HVD_API visibility macro, and puts the DLPack structs hvd.h uses in
front (the layout of dlpack.h v0.6+).
"""
import re

DLPACK_CDEF = """
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 } DLDeviceType;
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
    return "\n".join(kept).replace("HVD_API", "")


def cdef(header_path):
    with open(header_path) as f:
        return DLPACK_CDEF + declarations(f.read())


def function_names(header_path):
    """Every hvd_* function hvd.h declares."""
    with open(header_path) as f:
        return sorted(set(re.findall(r"HVD_API[^;(]*?\b(hvd_\w+)\s*\(", f.read())))
