#include "core/dataplane/decorators/huge_pages.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

namespace hvd {
namespace {

// The PAGEMAP_SCAN ABI (include/uapi/linux/fs.h, Linux 6.7), for headers
// older than the running kernel.
struct PageRegion {
  uint64_t start, end, categories;
};
struct PmScanArg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
  uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr uint64_t kPageIsHuge = 1 << 6;

int64_t HugePageBytes() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  int64_t bytes = 0;
  return f >> bytes && bytes > 0 ? bytes : int64_t{2} << 20;
}

}  // namespace

HugePages::HugePages()
    : pagemap_(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)), page_bytes_(HugePageBytes()) {}

int64_t HugePages::SmallBytes(uint64_t from, uint64_t to, int64_t limit) const {
  static const auto kSmall = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));  // the scan's unit
  from = from / kSmall * kSmall;
  to = (to + kSmall - 1) / kSmall * kSmall;
  PageRegion found[8];
  int64_t bytes = 0;
  while (from < to && bytes <= limit) {
    PmScanArg arg{};
    arg.size = sizeof arg;
    arg.start = from;
    arg.end = to;
    arg.vec = reinterpret_cast<uint64_t>(found);
    arg.vec_len = 8;
    arg.max_pages = static_cast<uint64_t>((limit - bytes) / kSmall + 1);  // one past: enough
    arg.category_inverted = kPageIsHuge;  // the pages that are not huge
    arg.category_mask = kPageIsHuge;
    arg.return_mask = kPageIsHuge;
    const long n = ::ioctl(pagemap_.get(), kPagemapScan, &arg);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || arg.walk_end <= from) return -1;  // no PAGEMAP_SCAN (Linux 6.7)
    for (long i = 0; i < n; ++i) bytes += static_cast<int64_t>(found[i].end - found[i].start);
    from = arg.walk_end;
  }
  return bytes;
}

bool HugePages::Hold(std::vector<Span> spans, int64_t loose) const {
  if (!pagemap_.valid() || spans.empty()) return false;
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.addr < b.addr; });
  const auto page = static_cast<uint64_t>(page_bytes_);
  // Merged spans; first, at little cost, each one's whole huge pages (a
  // buffer in small pages says so at its first page), then the rest.
  std::vector<std::pair<uint64_t, uint64_t>> rest;
  for (size_t i = 0; i < spans.size();) {
    const uint64_t from = spans[i].addr;
    uint64_t to = from + static_cast<uint64_t>(spans[i].bytes);
    for (++i; i < spans.size() && spans[i].addr <= to; ++i) {
      to = std::max(to, spans[i].addr + static_cast<uint64_t>(spans[i].bytes));
    }
    const uint64_t a = (from + page - 1) / page * page, b = to / page * page;
    if (b <= a) {
      rest.emplace_back(from, to);
      continue;
    }
    if (SmallBytes(a, b, 0) != 0) return false;
    if (a > from) rest.emplace_back(from, a);
    if (to > b) rest.emplace_back(b, to);
  }
  // The small pages of the rest (a head or tail may lie in a huge page too).
  int64_t small = 0;
  for (const auto& [from, to] : rest) {
    const int64_t more = SmallBytes(from, to, loose - small);
    if (more < 0) return false;
    small += more;
    if (small > loose) return false;
  }
  return true;
}

}  // namespace hvd
