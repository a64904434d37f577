#include "bench/soak/proc_stats.h"

#include <dirent.h>
#include <malloc.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace soak {

ProcStats ReadProcStats() {
  // Free memory that malloc keeps cached would otherwise count as growth:
  // return it first, so RSS shows what is live (and fragmented).
  malloc_trim(0);
  ProcStats p;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) p.rss_kib = std::atoll(line.c_str() + 6);
    if (line.rfind("RssAnon:", 0) == 0) p.anon_kib = std::atoll(line.c_str() + 8);
    if (line.rfind("RssFile:", 0) == 0) p.file_kib = std::atoll(line.c_str() + 8);
    if (line.rfind("RssShmem:", 0) == 0) p.shmem_kib = std::atoll(line.c_str() + 9);
    if (line.rfind("Threads:", 0) == 0) p.threads = std::atoll(line.c_str() + 8);
  }
  if (DIR* d = ::opendir("/proc/self/fd")) {
    p.fds = 0;
    while (dirent* e = ::readdir(d)) p.fds += e->d_name[0] != '.';
    --p.fds;  // the directory stream itself
    ::closedir(d);
  }
  const struct mallinfo2 mi = mallinfo2();
  p.heap_kib = static_cast<int64_t>((mi.uordblks + mi.hblkhd) / 1024);
  return p;
}

}  // namespace soak
