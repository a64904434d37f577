// HugePages (core/dataplane/decorators/huge_pages.h) against what the
// kernel says in /proc/self/smaps: yes for memory advised and touched in
// huge pages, for touching spans merged and for a span within one huge
// page, and where a head in small pages is within `loose`; no past
// `loose`, for the heap's 4 KiB pages, for advised memory not yet touched,
// and where one of several spans is in small pages.
#include "core/dataplane/decorators/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/common/huge_buffer.h"

namespace hvd {
namespace {

using testing::HugeBuffer;
using Span = HugePages::Span;
constexpr int64_t kPage = HugeBuffer::kHugePage;

uint64_t Addr(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

TEST(HugePages, YesOnlyWhereTheKernelMappedHugePages) {
  if (!testing::KernelScansPageMaps()) GTEST_SKIP() << "no PAGEMAP_SCAN before Linux 6.7";
  const HugePages pages;
  if (pages.page_bytes() != kPage) {  // HugeBuffer's spans are cut for 2 MiB pages
    GTEST_SKIP() << "this kernel's huge pages are " << pages.page_bytes()
                 << " bytes; the test is written for 2 MiB ones (x86-64)";
  }
  HugeBuffer huge(4 * kPage);
  if (huge.huge_bytes() < 4 * kPage) {
    GTEST_SKIP() << "the kernel gave no huge pages here (transparent huge pages \"never\", or "
                    "memory short): smaps says "
                 << huge.huge_bytes() << " bytes";
  }
  const uint64_t at = Addr(huge.data());
  EXPECT_TRUE(pages.Hold({{at, 4 * kPage}}, 0));
  // Touching spans, out of order, make one; a span within one huge page.
  EXPECT_TRUE(pages.Hold({{at + 3 * kPage - 5, kPage + 5}, {at, 3 * kPage - 5}}, 0));
  EXPECT_TRUE(pages.Hold({{at + kPage + 64, 4096}}, 0));
  EXPECT_FALSE(pages.Hold({}, kPage));
  // As a numpy array can lie: its head in small pages, within `loose` only.
  const HugeBuffer head(4 * kPage, 0, true, /*small=*/kPage);
  ASSERT_EQ(testing::AnonHugeBytes(head.data(), kPage), 0);
  ASSERT_GE(head.huge_bytes(), 3 * kPage);
  const Span numpy{Addr(head.data()) + 64, 4 * kPage - 64};
  EXPECT_TRUE(pages.Hold({numpy}, kPage));
  EXPECT_FALSE(pages.Hold({numpy}, kPage - 8192));
  EXPECT_TRUE(pages.Hold({{Addr(head.data()) + kPage, 3 * kPage}}, 0));

  std::vector<uint8_t> heap(static_cast<size_t>(4 * kPage), 1);
  if (testing::AnonHugeBytes(heap.data(), heap.size()) == 0) {  // not where huge pages are "always"
    EXPECT_FALSE(pages.Hold({{Addr(heap.data()), 4 * kPage}}, kPage));
    EXPECT_FALSE(pages.Hold({{at, 4 * kPage}, {Addr(heap.data()), 4 * kPage}}, 2 * kPage));
  }
  const HugeBuffer untouched(4 * kPage, 0, /*touch=*/false);
  EXPECT_FALSE(pages.Hold({{Addr(untouched.data()), 4 * kPage}}, 0));
}

}  // namespace
}  // namespace hvd
