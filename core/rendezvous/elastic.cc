#include "core/rendezvous/elastic.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

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

// Bumps the worker's heartbeat key until the process ends. Its own store
// connection: the heartbeat must not queue behind a rank's blocking Wait.
class Heartbeat {
 public:
  Heartbeat(std::unique_ptr<KVClient> client, std::string key, double interval)
      : client_(std::move(client)), key_(std::move(key)), interval_(interval) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      int64_t ignored = 0;
      // A failed beat is not fatal: the launcher decides on silence.
      (void)client_->Add(key_, 1, &ignored);
      cv_.wait_for(lock, std::chrono::duration<double>(interval_), [this] { return stop_; });
    }
  }

  std::unique_ptr<KVClient> client_;
  std::string key_;
  double interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

std::unique_ptr<Heartbeat> g_heartbeat;

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
  int64_t ignored = 0;
  if (last >= 0) {
    HVD_RETURN_IF_ERROR(client->Add(ResetKey(last), 1, &ignored));
  } else {
    HVD_RETURN_IF_ERROR(client->Set(ReadyKey(id), "1"));
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
  HVD_RETURN_IF_ERROR(client->Add(JoinedKey(a.round), 1, &ignored));
  std::lock_guard<std::mutex> lock(g_mu);
  g_round = a.round;
  *out = a;
  return Status::OK();
}

Status StartHeartbeat(const RendezvousEndpoint& store, const std::string& worker_id,
                      double liveness_seconds) {
  if (liveness_seconds <= 0) return Status::OK();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_heartbeat) return Status::OK();
  std::unique_ptr<KVClient> client;
  HVD_RETURN_IF_ERROR(KVClient::Connect(store, kConnectSeconds, &client));
  const double interval = std::min(1.0, std::max(0.1, liveness_seconds / 5));
  g_heartbeat = std::make_unique<Heartbeat>(std::move(client), HeartbeatKey(worker_id), interval);
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
