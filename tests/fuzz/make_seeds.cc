// Writes the seed corpus of the fuzz targets: valid encodings of typical
// messages, so the fuzzer starts from inputs that get deep into each decoder
// instead of spending its time guessing magic numbers.
//   make_seeds OUT_DIR   -> OUT_DIR/<target>/<name>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/coordination/protocol.h"
#include "core/rendezvous/kv_protocol.h"

namespace {

namespace rdv = hvd::rendezvous;

std::string g_root;

void Put(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = g_root + "/" + target;
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

hvd::Request MakeRequest(hvd::OpType type, const std::string& name) {
  hvd::Request q;
  q.rank = 1;
  q.type = type;
  q.shape = {4, 3};
  q.name = name;
  return q;
}

void ReportSeeds() {
  Put("report", "empty", hvd::EncodeReport(hvd::Report()));
  hvd::Report l;
  l.epoch = 3;
  l.hits = {0, 5, 9};
  l.invalid = {2};
  l.requests.push_back(MakeRequest(hvd::OpType::kAllreduce, "grad/w0"));
  hvd::Request bc = MakeRequest(hvd::OpType::kBroadcast, "params");
  bc.root = 1;
  bc.dtype = hvd::DataType::kFloat64;
  l.requests.push_back(bc);
  hvd::Request a2a = MakeRequest(hvd::OpType::kAlltoall, "a2a");
  a2a.splits = {1, 3};
  l.requests.push_back(a2a);
  hvd::Request g = MakeRequest(hvd::OpType::kAllreduce, "g0");
  g.group = "group1";
  g.group_size = 2;
  g.prescale = 0.5;
  l.requests.push_back(g);
  Put("report", "mixed", hvd::EncodeReport(l));
  hvd::Report dense;
  for (int32_t s = 0; s < 300; ++s) dense.hits.push_back(s);
  dense.shutdown = true;
  Put("report", "dense_shutdown", hvd::EncodeReport(dense));
}

void DecisionSeeds() {
  hvd::Decision d;
  d.seq = 4;
  hvd::Action run;
  run.kind = hvd::Action::kRun;
  run.slot = 2;
  run.response.names = {"grad/w0"};
  run.response.sizes = {12};
  run.response.shape = {4, 3};
  d.actions.push_back(run);
  hvd::Action err = run;
  err.slot = -1;
  err.response.names = {"bad"};
  err.response.error_code = hvd::Code::kMismatch;
  err.response.error = "shape mismatch on ranks 0, 1";
  d.actions.push_back(err);
  hvd::Action cached;
  cached.kind = hvd::Action::kRunCached;
  cached.slots = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  cached.ranks = {1};
  d.actions.push_back(cached);
  hvd::Action erase;
  erase.kind = hvd::Action::kErase;
  erase.slot = 7;
  d.actions.push_back(erase);
  hvd::Action params;
  params.kind = hvd::Action::kParams;
  params.params.fusion_threshold_bytes = 1 << 20;
  d.actions.push_back(params);
  Put("decision", "mixed", hvd::EncodeDecision(d));
  hvd::Decision sd;
  sd.seq = 9;
  hvd::Action stop;
  stop.kind = hvd::Action::kShutdown;
  stop.ranks = {1};
  hvd::Action lost;
  lost.kind = hvd::Action::kPeerLost;
  lost.ranks = {2};
  lost.error = "control connection to rank 2 lost";
  sd.actions = {stop, lost};
  Put("decision", "shutdown_lost", hvd::EncodeDecision(sd));
}

void KvSeeds() {
  rdv::Message set;
  set.type = rdv::MsgType::kSet;
  set.keys = {"gloo/rank_0"};
  set.value = std::string(
      "\x01\x02\x03\0"
      "addr",
      8);
  rdv::Message get;
  get.type = rdv::MsgType::kGet;
  get.keys = {"gloo/rank_1"};
  get.integer = 30000;
  rdv::Message wait;
  wait.type = rdv::MsgType::kWait;
  wait.keys = {"a", "b", "c"};
  wait.integer = -1;
  rdv::Message add;
  add.type = rdv::MsgType::kAdd;
  add.keys = {"counter"};
  add.integer = 5;
  int i = 0;
  for (const rdv::Message* m : {&set, &get, &wait, &add}) {
    const std::string n = std::to_string(i++);
    Put("kv_message", "msg" + n, rdv::EncodeMessage(*m));
    // kv_frame: mode byte 0 = a stream of frames, 3 = counter | message.
    std::string stream;
    rdv::AppendFrame(
        rdv::SealBody("fuzz-secret", std::string(32, 's'), rdv::Direction::kToServer, 1, *m),
        &stream);
    rdv::AppendFrame(rdv::EncodeMessage(*m), &stream);
    Put("kv_frame", "stream" + n, std::string(1, '\0') + stream);
    Put("kv_frame", "sealed" + n,
        std::string(1, '\3') + std::string("\x07\0\0\0\0\0\0\0", 8) + rdv::EncodeMessage(*m));
  }
  Put("kv_frame", "hello", std::string(1, '\1') + rdv::EncodeHello(std::string(16, 'n')));
  Put("kv_frame", "hex", std::string(1, '\2') + "00ff7Fa9");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  g_root = argv[1];
  ::mkdir(g_root.c_str(), 0755);
  ReportSeeds();
  DecisionSeeds();
  KvSeeds();
  return 0;
}
