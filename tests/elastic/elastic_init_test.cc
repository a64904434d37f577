// hvd_init in elastic mode takes rank and size from the launcher's round in
// the rendezvous store (not from HVD_RANK/HVD_SIZE), hvd_elastic_hosts_updated
// sees newer rounds, and hvd_shutdown + hvd_init joins the next round. The
// test plays hvdrun's elastic driver: it serves the store and publishes the
// rounds itself.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/rendezvous/elastic_keys.h"
#include "core/rendezvous/kv_client.h"
#include "core/rendezvous/kv_protocol.h"
#include "core/rendezvous/kv_server.h"
#include "hvd/hvd.h"

namespace {

int g_failures = 0;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                           \
    }                                                                         \
  } while (0)

bool Publish(hvd::KVClient* kv, int64_t round, const char* assignment) {
  using namespace hvd::elastic;
  bool ok = true;
  if (assignment) ok = kv->Set(WorkerKey(round, "7"), assignment).ok();
  ok = ok && kv->Set(RoundKey(), std::to_string(round)).ok();
  return ok && kv->Set(PublishedKey(round), "1").ok();
}

}  // namespace

int main() {
  const std::string secret = "elastic-test-secret";
  hvd::rendezvous::KVServer server;
  if (!server.Start("127.0.0.1", 0, secret).ok()) return 2;
  setenv("HVD_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("HVD_RENDEZVOUS_PORT", std::to_string(server.port()).c_str(), 1);
  setenv("HVD_RENDEZVOUS_SECRET", hvd::rendezvous::HexEncode(secret).c_str(), 1);
  setenv("HVD_CONTROLLER", "gloo", 1);
  setenv("HVD_CPU_OPERATIONS", "gloo", 1);
  setenv("HVD_ELASTIC", "1", 1);
  setenv("HVD_WORKER_ID", "7", 1);
  setenv("HVD_ELASTIC_TIMEOUT", "20", 1);
  // Would make a fixed-size init wait for 3 missing ranks: must be ignored.
  setenv("HVD_RANK", "3", 1);
  setenv("HVD_SIZE", "4", 1);
  std::unique_ptr<hvd::KVClient> kv;
  if (!hvd::KVClient::Connect("127.0.0.1", server.port(), secret, 10, &kv).ok()) return 2;

  EXPECT(hvd_elastic_enabled() == 1);
  EXPECT(hvd_elastic_round() == -1);
  EXPECT(Publish(kv.get(), 0, "0 1 0 1 0 1"));
  EXPECT(hvd_init() == HVD_OK);
  EXPECT(hvd_rank() == 0);
  EXPECT(hvd_size() == 1);
  EXPECT(hvd_elastic_round() == 0);
  int updated = -1;
  EXPECT(hvd_elastic_hosts_updated(&updated) == HVD_OK && updated == 0);

  // The launcher publishes round 1 (workers added or lost): noticed, and the
  // next init joins it.
  EXPECT(Publish(kv.get(), 1, "0 1 0 1 0 1"));
  EXPECT(hvd_elastic_hosts_updated(&updated) == HVD_OK && updated == 1);
  EXPECT(hvd_shutdown() == HVD_OK);
  EXPECT(hvd_init() == HVD_OK);
  EXPECT(hvd_elastic_round() == 1);
  EXPECT(hvd_elastic_hosts_updated(&updated) == HVD_OK && updated == 0);

  // A collective works in the round's world.
  float in = 2.5f, out = 0.0f;
  int64_t shape[1] = {1};
  DLTensor tin{};
  tin.data = &in;
  tin.device = {kDLCPU, 0};
  tin.ndim = 1;
  tin.dtype = {kDLFloat, 32, 1};
  tin.shape = shape;
  DLTensor tout = tin;
  tout.data = &out;
  hvd_op_options opts = HVD_OP_OPTIONS_INIT;
  hvd_handle h = 0;
  EXPECT(hvd_allreduce_async("elastic.x", &tin, &tout, HVD_OP_SUM, &opts, &h) == HVD_OK);
  EXPECT(hvd_wait(h, 20000) == HVD_OK);
  EXPECT(hvd_release(h) == HVD_OK);
  EXPECT(out == 2.5f);

  // A round without this worker and no later one (hvdrun removed it): init
  // waits HVD_ELASTIC_TIMEOUT for a round with it, then fails and says so.
  EXPECT(Publish(kv.get(), 2, nullptr));
  setenv("HVD_ELASTIC_TIMEOUT", "0.5", 1);
  EXPECT(hvd_shutdown() == HVD_OK);
  EXPECT(hvd_init() == HVD_ERR_INTERNAL);
  EXPECT(std::strstr(hvd_last_error(), "worker 7 is not part of round 2") != nullptr);
  EXPECT(hvd_elastic_hosts_updated(nullptr) == HVD_ERR_INVALID_ARGUMENT);

  if (g_failures == 0) std::printf("PASS\n");
  return g_failures == 0 ? 0 : 1;
}
