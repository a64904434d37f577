// Whether memory of this process lies in huge pages (transparent or
// hugetlbfs), asked of the kernel's page tables through /proc/self/pagemap
// (the PAGEMAP_SCAN ioctl, Linux 6.7): a page-table walk, microseconds,
// that stops once it has found small pages enough to say no.
//
// Why it matters here: a kernel copy from another process
// (process_vm_readv) pins each page it reads, one pin per 2 MiB on huge
// pages and one per 4 KiB otherwise, so the direct allreduce
// (shm_direct.cc) is worth trying only on huge pages.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rendezvous/socket_util.h"

namespace hvd {

class HugePages {
 public:
  struct Span {
    uint64_t addr;
    int64_t bytes;
  };
  // Opens /proc/self/pagemap; where it cannot, or the kernel has no
  // PAGEMAP_SCAN, every answer is no.
  HugePages();

  // Whether the spans lie in huge pages: every page they touch is huge but
  // for at most `loose` bytes of small pages (numpy's arrays are not aligned
  // to huge pages: a head and a tail may lie in small ones). Spans may
  // overlap or touch; they are merged. No where the kernel cannot tell.
  bool Hold(std::vector<Span> spans, int64_t loose) const;

  // The huge page's size (2 MiB on x86-64; hpage_pmd_size).
  int64_t page_bytes() const { return page_bytes_; }

 private:
  // The bytes of small pages (not huge, or not present) among the pages
  // that [from, to) touches, counted until they pass `limit`; -1 where the
  // kernel cannot tell.
  int64_t SmallBytes(uint64_t from, uint64_t to, int64_t limit) const;

  rendezvous::UniqueFd pagemap_;
  int64_t page_bytes_;
};

}  // namespace hvd
