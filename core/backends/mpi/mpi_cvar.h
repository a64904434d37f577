// Reading one of Open MPI's control variables (MCA parameters) through the
// MPI tool interface, after MPI_Init: the values a job really runs with,
// whatever set them. Header-only, so tests that link only libhvd's C API
// can read the same values.
#pragma once

#include <mpi.h>

#include <cstring>

namespace hvd {

// The integer control variable `name`, or -1 where this MPI has none (not
// Open MPI, or the component not opened).
inline long long ReadMpiCvar(const char* name) {
  int provided = 0, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return -1;
  MPI_T_cvar_get_num(&count);
  long long value = -1;
  for (int i = 0; i < count && value < 0; ++i) {
    char n[256], desc[256];
    int nlen = sizeof n, dlen = sizeof desc, verbosity = 0, bind = 0, scope = 0, elements = 0;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(i, n, &nlen, &verbosity, &dt, &en, desc, &dlen, &bind, &scope) !=
            MPI_SUCCESS ||
        std::strcmp(n, name) != 0) {
      continue;
    }
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(i, nullptr, &h, &elements) != MPI_SUCCESS) continue;
    unsigned char buf[32] = {0};  // room for any integer type
    if (elements == 1 && MPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
      if (dt == MPI_UNSIGNED || dt == MPI_INT) {
        unsigned v = 0;
        std::memcpy(&v, buf, sizeof(v));
        value = v;
      } else if (dt == MPI_UNSIGNED_LONG || dt == MPI_LONG || dt == MPI_UNSIGNED_LONG_LONG ||
                 dt == MPI_LONG_LONG) {
        unsigned long long v = 0;
        std::memcpy(&v, buf, sizeof(v));
        value = static_cast<long long>(v);
      }
    }
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return value;
}

}  // namespace hvd
