#include "tools/hvd_bench/gloo_raw.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/socket_util.h"
#include "tools/hvd_bench/fail.h"

namespace hvdbench {
namespace {

// hvd::KVClient seen as a gloo::rendezvous::Store (Gloo wants exceptions).
class KVStore : public gloo::rendezvous::Store {
 public:
  KVStore(std::unique_ptr<hvd::KVClient> client, double timeout_seconds)
      : client_(std::move(client)), timeout_(timeout_seconds) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Throw(client_->Set(key, std::string(data.begin(), data.end())));
  }
  std::vector<char> get(const std::string& key) override {
    std::string v;
    Throw(client_->Get(key, timeout_, &v));
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override { Throw(client_->Wait(keys, timeout_)); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    Throw(client_->Wait(keys, t.count() > 0 ? t.count() / 1000.0 : timeout_));
  }
  hvd::Status Add(const std::string& key, int64_t delta, int64_t* result) {
    return client_->Add(key, delta, result);
  }

 private:
  static void Throw(const hvd::Status& s) {
    if (!s.ok()) throw std::runtime_error("rendezvous store: " + s.message());
  }
  std::unique_ptr<hvd::KVClient> client_;
  double timeout_;
};

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

bool EnvInt(const char* name, int* out) {
  const char* v = Env(name);
  if (v == nullptr) return false;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1000000000L) return false;
  *out = static_cast<int>(x);
  return true;
}

class RawGloo : public RawComm {
 public:
  RawGloo(std::shared_ptr<gloo::Context> ctx, std::chrono::milliseconds timeout)
      : ctx_(std::move(ctx)), timeout_(timeout) {}

  Backend backend() const override { return Backend::kGloo; }
  int rank() const override { return ctx_->rank; }
  int size() const override { return ctx_->size; }
  void AllreduceSum(const float* in, float* out, int64_t count) override {
    try {
      gloo::AllreduceOptions opts(ctx_);
      opts.setInput(const_cast<float*>(in), static_cast<size_t>(count));
      opts.setOutput(out, static_cast<size_t>(count));
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    } catch (const std::exception& e) {
      Die(std::string("raw gloo::allreduce: ") + e.what());
    }
  }
  void Barrier() override {
    try {
      gloo::BarrierOptions opts(ctx_);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    } catch (const std::exception& e) {
      Die(std::string("raw gloo::barrier: ") + e.what());
    }
  }
  // Its own context, device and sockets: nothing shared with hvd's.
  bool UsableBesideHvd(std::string*) const override { return true; }

 private:
  std::shared_ptr<gloo::Context> ctx_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::unique_ptr<RawComm> CreateRawGloo(double timeout_seconds, std::string* why) {
  if (Env("HVD_RENDEZVOUS_ADDR") == nullptr) {
    *why = "HVD_RENDEZVOUS_ADDR is not set (not started by hvdrun)";
    return nullptr;
  }
  int rank = 0, size = 0;
  if (!EnvInt("HVD_RANK", &rank) || !EnvInt("HVD_SIZE", &size) || size < 1 || rank >= size) {
    *why = "HVD_RANK/HVD_SIZE are not set to a rank and a size (not started by hvdrun)";
    return nullptr;
  }
  std::unique_ptr<hvd::KVClient> client;
  hvd::Status s = hvd::KVClient::ConnectFromEnvironment(timeout_seconds, &client);
  if (!s.ok()) {
    *why = "cannot reach the rendezvous store: " + s.message();
    return nullptr;
  }
  auto store = std::make_shared<KVStore>(std::move(client), timeout_seconds);
  // A fresh prefix per use within one job: every rank adds 1, so
  // (count-1)/size is the same generation on every rank.
  int64_t count = 0;
  s = store->Add("hvd_bench/raw_gloo/count", 1, &count);
  if (!s.ok()) {
    *why = "rendezvous store: " + s.message();
    return nullptr;
  }
  const std::string prefix = "hvd_bench/raw_gloo/gen" + std::to_string((count - 1) / size);

  gloo::transport::tcp::attr attr;
  if (const char* iface = Env("HVD_GLOO_IFACE")) {
    attr.iface = iface;
  } else if (const char* host = Env("HVD_GLOO_HOSTNAME")) {
    attr.hostname = host;
  } else {
    const char* port = Env("HVD_RENDEZVOUS_PORT");
    if (!hvd::rendezvous::LocalAddressTowards(Env("HVD_RENDEZVOUS_ADDR"), port ? port : "0",
                                              &attr.hostname)
             .ok()) {
      *why = "no local address routes to HVD_RENDEZVOUS_ADDR";
      return nullptr;
    }
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  try {
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(timeout);
    gloo::rendezvous::PrefixStore pstore(prefix, *store);
    ctx->connectFullMesh(pstore, device);
    return std::make_unique<RawGloo>(std::move(ctx), timeout);
  } catch (const std::exception& e) {
    *why = std::string("Gloo: ") + e.what();
    return nullptr;
  }
}

}  // namespace hvdbench
