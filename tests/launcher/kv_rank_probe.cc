// A rank program for the launcher tests: prints the HVD_* variables hvdrun
// set, then proves the rendezvous store is reachable and authenticated from
// where the rank runs by doing an all-gather of host names through it.
// Exit codes: 0 ok, 1 bad environment, 2 rendezvous failure.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/rendezvous/kv_client.h"

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int Fail(const char* what, const hvd::Status& s) {
  std::fprintf(stderr, "kv_rank_probe: %s: %s\n", what, s.message().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool exchange = !(argc > 1 && std::string(argv[1]) == "--env-only");
  std::printf("rank=%s size=%s local_rank=%s local_size=%s cross_rank=%s cross_size=%s host=%s\n",
              Env("HVD_RANK"), Env("HVD_SIZE"), Env("HVD_LOCAL_RANK"), Env("HVD_LOCAL_SIZE"),
              Env("HVD_CROSS_RANK"), Env("HVD_CROSS_SIZE"), Env("HVD_HOSTNAME"));
  std::fflush(stdout);
  int size = std::atoi(Env("HVD_SIZE"));
  std::string rank = Env("HVD_RANK");
  if (size <= 0 || rank.empty()) return 1;
  if (!exchange) return 0;

  std::unique_ptr<hvd::KVClient> kv;
  hvd::Status s = hvd::KVClient::ConnectFromEnvironment(20.0, &kv);
  if (!s.ok()) return Fail("connect", s);
  s = kv->Set("host/" + rank, Env("HVD_HOSTNAME"));
  if (!s.ok()) return Fail("set", s);
  int64_t arrived = 0;
  s = kv->Add("arrived", 1, &arrived);
  if (!s.ok()) return Fail("add", s);
  std::string hosts;
  for (int r = 0; r < size; ++r) {
    std::string v;
    s = kv->Get("host/" + std::to_string(r), 20.0, &v);
    if (!s.ok()) return Fail("get", s);
    hosts += (r ? "," : "") + v;
  }
  std::printf("gathered=%s\n", hosts.c_str());
  return 0;
}
