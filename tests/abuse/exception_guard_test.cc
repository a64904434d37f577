// The C ABI's exception guard: an allocation failure inside an hvd_*
// function comes back as an error code with a message naming the function,
// never as an exception thrown across the C boundary (which would terminate
// a C, Java or Python caller). This program replaces the global operator
// new, which libhvd's allocations also go through, so that the next
// allocation on the calling thread throws std::bad_alloc when armed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "hvd/hvd.h"

namespace {

thread_local int t_fail_in = -1;  // 0: the next allocation on this thread throws

int g_failures = 0;

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                         \
    }                                                                       \
  } while (0)

bool LastErrorHas(const char* a, const char* b) {
  const char* e = hvd_last_error();
  return std::strstr(e, a) != nullptr && std::strstr(e, b) != nullptr;
}

// Calls fn with the next allocation armed to fail.
template <typename F>
auto WithFailingAllocation(F fn) {
  t_fail_in = 0;
  auto r = fn();
  t_fail_in = -1;
  return r;
}

}  // namespace

void* operator new(std::size_t n) {
  if (t_fail_in >= 0 && t_fail_in-- == 0) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

int main() {
  // Before init: the error message's own allocation fails.
  EXPECT(WithFailingAllocation([] { return hvd_barrier(0); }) == HVD_ERR_INTERNAL);
  EXPECT(LastErrorHas("hvd_barrier", "out of memory"));
  EXPECT(hvd_barrier(0) == HVD_ERR_NOT_INITIALIZED);  // and hvd is none the worse
  // A query returns its error value.
  EXPECT(WithFailingAllocation([] { return hvd_process_set_rank(0); }) == -1);
  EXPECT(LastErrorHas("hvd_process_set_rank", "out of memory"));

  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  DLTensor tin{};
  tin.data = in;
  tin.device = {kDLCPU, 0};
  tin.ndim = 1;
  tin.dtype = {kDLFloat, 32, 1};
  tin.shape = shape;
  DLTensor tout = tin;
  tout.data = out;
  hvd_handle h = 0;
  // Submitting copies the shape: that allocation fails, nothing is queued.
  EXPECT(WithFailingAllocation([&] {
           return hvd_allreduce_async("guard.x", &tin, &tout, HVD_OP_SUM, nullptr, &h);
         }) == HVD_ERR_INTERNAL);
  EXPECT(LastErrorHas("hvd_allreduce_async", "out of memory"));
  // The same tensor name then works, with the exact result.
  EXPECT(hvd_allreduce_async("guard.x", &tin, &tout, HVD_OP_SUM, nullptr, &h) == HVD_OK);
  EXPECT(hvd_wait(h, 60000) == HVD_OK);
  EXPECT(hvd_release(h) == HVD_OK);
  const int n = hvd_size();
  EXPECT(out[0] == 1.0f * n && out[3] == 4.0f * n);
  EXPECT(hvd_shutdown() == HVD_OK);

  if (g_failures == 0) std::printf("PASS\n");
  return g_failures == 0 ? 0 : 1;
}
