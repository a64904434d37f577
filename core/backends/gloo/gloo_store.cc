#include "core/backends/gloo/gloo_store.h"

#include <utility>

#include "core/backends/gloo/gloo_error.h"

namespace hvd {
namespace gloo_backend {
namespace {

double Seconds(std::chrono::milliseconds ms) {
  return static_cast<double>(ms.count()) / 1000.0;
}

// Gloo expects exceptions from a Store; StatusError carries the KV client's
// code (kTimeout, kPeerLost...) through Gloo back to GlooGuard.
void ThrowIfError(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}

}  // namespace

KVStore::KVStore(std::unique_ptr<KVClient> client, std::chrono::milliseconds timeout)
    : client_(std::move(client)), timeout_(timeout) {}

void KVStore::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard<std::mutex> lock(mu_);
  ThrowIfError(client_->Set(key, std::string(data.begin(), data.end())));
}

std::vector<char> KVStore::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string value;
  ThrowIfError(client_->Get(key, Seconds(timeout_), &value));
  return std::vector<char>(value.begin(), value.end());
}

void KVStore::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void KVStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  // Gloo passes kNoTimeout (0) to mean "no limit"; hvd never waits forever.
  const auto t = timeout.count() > 0 ? timeout : timeout_;
  ThrowIfError(client_->Wait(keys, Seconds(t)));
}

Status KVStore::Add(const std::string& key, int64_t delta, int64_t* result) {
  std::lock_guard<std::mutex> lock(mu_);
  return client_->Add(key, delta, result);
}

}  // namespace gloo_backend
}  // namespace hvd
