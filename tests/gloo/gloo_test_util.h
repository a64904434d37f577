// Builds N GlooComms in one process (threads as ranks) over Gloo's in-memory
// HashStore and loopback TCP, so the backend is testable without hvdrun.
#pragma once

#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backends/gloo/gloo_comm.h"

namespace hvd {
namespace testing {

using Comms = std::vector<std::unique_ptr<GlooComm>>;

inline std::shared_ptr<GlooShared> MakeShared(std::shared_ptr<gloo::rendezvous::Store> store,
                                              std::chrono::milliseconds timeout) {
  auto shared = std::make_shared<GlooShared>();
  ::gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // loopback only
  shared->device = ::gloo::transport::tcp::CreateDevice(attr);
  shared->store = std::move(store);
  shared->timeout = timeout;
  shared->op_timeout = timeout;
  return shared;
}

// Runs fn(rank) on `n` threads and joins them.
inline void ForEachRank(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

inline Comms MakeComms(int n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  static std::atomic<int> counter{0};
  const std::string prefix = "test" + std::to_string(counter++);
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  Comms comms(n);
  ForEachRank(n, [&](int r) {
    Status s = GlooComm::Create(MakeShared(store, timeout), prefix, r, n, &comms[r]);
    EXPECT_TRUE(s.ok()) << s.message();
  });
  return comms;
}

// Runs fn(comm) on every rank's comm in parallel.
inline void RunAll(Comms& comms, const std::function<void(GlooComm&)>& fn) {
  ForEachRank(static_cast<int>(comms.size()), [&](int r) { fn(*comms[r]); });
}

}  // namespace testing
}  // namespace hvd
