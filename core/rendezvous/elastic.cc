#include "core/rendezvous/elastic.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>

#include "core/rendezvous/elastic_keys.h"
#include "core/rendezvous/kv_client.h"

namespace hvd {
namespace elastic {
namespace {

// Store requests that should answer at once (the server is local to the job).
constexpr double kConnectSeconds = 30.0;

std::mutex g_mu;
int64_t g_round = -1;
// Kept for HostsUpdated, which runs once per commit: reconnecting each time
// would cost a TCP + HMAC handshake.
std::unique_ptr<KVClient> g_client;

Status ReadRound(KVClient* client, int64_t* round) {
  return client->Add(RoundKey(), 0, round);  // adding 0 reads the integer
}

Status ParseAssignment(const std::string& text, Assignment* out) {
  std::istringstream in(text);
  int rank = -1, size = 0;
  if (!(in >> rank >> size) || size < 1 || rank < 0 || rank >= size) {
    return Status::Internal("elastic: malformed assignment '" + text + "' in the store");
  }
  out->rank = rank;
  out->size = size;
  return Status::OK();
}

}  // namespace

Status JoinNextRound(KVClient* client, const std::string& id, double timeout, Assignment* out) {
  if (id.empty()) {
    return Status::Invalid(
        "elastic: HVD_ELASTIC=1 but HVD_WORKER_ID is not set (start with hvdrun)");
  }
  int64_t last = CurrentRound();
  if (last >= 0) {
    int64_t ignored = 0;
    HVD_RETURN_IF_ERROR(client->Add(ResetKey(last), 1, &ignored));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  auto left = [&] {
    return std::max(
        0.0, std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count());
  };
  Assignment a;
  std::string text;
  int64_t wait_for = last + 1;
  while (true) {
    Status s = client->Wait({PublishedKey(wait_for)}, left());
    if (s.code() == Code::kTimeout && wait_for > last + 1) {
      return Status::Internal("elastic: worker " + id + " is not part of round " +
                              std::to_string(wait_for - 1) + " and no later round came within " +
                              std::to_string(timeout) + " s (HVD_ELASTIC_TIMEOUT)");
    }
    if (s.code() == Code::kTimeout) {
      return Status::Timeout("elastic: no new round from hvdrun within " + std::to_string(timeout) +
                             " s (HVD_ELASTIC_TIMEOUT) after round " +
                             std::to_string(wait_for - 1));
    }
    HVD_RETURN_IF_ERROR(s);
    HVD_RETURN_IF_ERROR(ReadRound(client, &a.round));
    s = client->Get(WorkerKey(a.round, id), 0, &text);
    if (s.ok()) break;
    if (s.code() != Code::kTimeout) return s;
    // Not in the newest round: a worker started just before the round that
    // includes it was published. Wait for the next one; a worker hvdrun
    // removed gets SIGTERM long before this times out.
    wait_for = a.round + 1;
  }
  HVD_RETURN_IF_ERROR(ParseAssignment(text, &a));
  std::lock_guard<std::mutex> lock(g_mu);
  g_round = a.round;
  *out = a;
  return Status::OK();
}

int64_t CurrentRound() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_round;
}

Status HostsUpdated(bool enabled, const RendezvousEndpoint& store, bool* updated) {
  *updated = false;
  if (!enabled) return Status::OK();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_round < 0) return Status::NotInitialized();
  if (!g_client) HVD_RETURN_IF_ERROR(KVClient::Connect(store, kConnectSeconds, &g_client));
  int64_t latest = 0;
  Status s = ReadRound(g_client.get(), &latest);
  if (!s.ok()) {
    g_client.reset();  // reconnect next time
    return s;
  }
  *updated = latest > g_round;
  return Status::OK();
}

}  // namespace elastic
}  // namespace hvd
