// What the soak watches for leaks, read from /proc/self.
#pragma once

#include <cstdint>

namespace soak {

struct ProcStats {
  int64_t rss_kib = -1;
  // VmRSS split as the kernel counts it: private memory (a leak grows it),
  // file-backed pages (code, mapped libraries) and shared memory (Open MPI's
  // shared-memory transport segments, touched page by page as they are used).
  int64_t anon_kib = -1;
  int64_t file_kib = -1;
  int64_t shmem_kib = -1;
  int64_t fds = -1;
  int64_t threads = -1;
  // malloc'd bytes in use (mallinfo2): tells a leak from allocator caching
  // when RSS grows.
  int64_t heap_kib = -1;
};

ProcStats ReadProcStats();

}  // namespace soak
