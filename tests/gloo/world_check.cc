#include "tests/gloo/world_check.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/gloo/gloo_world.h"
#include "core/common/config.h"

namespace hvd {
namespace testing {

#define CHILD_CHECK(cond, msg)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "rank %d: %s failed: %s\n", rank, #cond, (msg).c_str()); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

// One job: world collectives, a split, then shutdown and a second init that
// must meet under fresh keys on the same server.
int RunWorldChecks(int rank, int size) {
  Config config;
  Status cs = Config::FromEnvironment(&config);  // honours HVD_GLOO_TIMEOUT_SECONDS
  CHILD_CHECK(cs.ok(), cs.message());
  CommInitArgs args;
  args.config = &config;
  for (int generation = 0; generation < 2; ++generation) {
    std::unique_ptr<Comm> world;
    Status s = CreateGlooWorld(args, &world);
    CHILD_CHECK(s.ok(), s.message());
    CHILD_CHECK(world->rank() == rank && world->size() == size, std::string("rank/size"));
    int64_t v = rank + 1 + generation;
    s = world->Allreduce({&v, 1, DataType::kInt64, ReduceOp::kSum});
    CHILD_CHECK(s.ok(), s.message());
    const int64_t want = static_cast<int64_t>(size) * (size + 1) / 2 + size * generation;
    CHILD_CHECK(v == want, std::to_string(v));
    std::vector<std::string> all;
    s = AllgatherBytes(*world, std::string(static_cast<size_t>(rank), 'x'), &all);
    CHILD_CHECK(s.ok() && all.size() == static_cast<size_t>(size), s.message());
    for (int r = 0; r < size; ++r) CHILD_CHECK(all[r].size() == static_cast<size_t>(r), all[r]);
    // Ranks >= 1 form a process set; rank 0 sits it out.
    if (rank >= 1) {
      std::vector<int> members;
      for (int r = 1; r < size; ++r) members.push_back(r);
      std::unique_ptr<Comm> sub;
      s = world->Split(members, "tail", &sub);
      CHILD_CHECK(s.ok(), s.message());
      int32_t w = 1;
      s = sub->Allreduce({&w, 1, DataType::kInt32, ReduceOp::kSum});
      CHILD_CHECK(s.ok() && w == size - 1, s.message());
    }
    s = world->Barrier();
    CHILD_CHECK(s.ok(), s.message());
  }
  return 0;
}

}  // namespace testing
}  // namespace hvd
