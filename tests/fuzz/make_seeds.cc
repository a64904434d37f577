// Writes the seed corpus of the fuzz targets: valid encodings of typical
// messages, so the fuzzer starts from inputs that get deep into each decoder
// instead of spending its time guessing magic numbers.
//   make_seeds OUT_DIR   -> OUT_DIR/<target>/<name>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/coordination/message.h"
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

void RequestSeeds() {
  hvd::RequestList empty;
  Put("request_list", "empty", hvd::EncodeRequestList(empty));
  hvd::RequestList l;
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
  Put("request_list", "mixed", hvd::EncodeRequestList(l));
  hvd::RequestList sd;
  sd.shutdown = true;
  Put("request_list", "shutdown", hvd::EncodeRequestList(sd));
}

void ResponseSeeds() {
  hvd::ResponseList l;
  hvd::Response r;
  r.names = {"grad/w0", "grad/w1"};
  r.sizes = {12, 4, 3, 6, 2, 3};
  r.shape = {4, 3};
  l.responses.push_back(r);
  hvd::Response err;
  err.names = {"bad"};
  err.error_code = hvd::Code::kMismatch;
  err.error = "shape mismatch on ranks 0, 1";
  l.responses.push_back(err);
  hvd::Response ag;
  ag.type = hvd::OpType::kAllgather;
  ag.names = {"ag"};
  ag.sizes = {2, 5};
  ag.joined_ranks = {1};
  ag.last_joined = 1;
  l.responses.push_back(ag);
  Put("response_list", "mixed", hvd::EncodeResponseList(l));
  hvd::ResponseList sd;
  sd.shutdown = true;
  sd.shutdown_ranks = {1};
  Put("response_list", "shutdown", hvd::EncodeResponseList(sd));
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
  RequestSeeds();
  ResponseSeeds();
  KvSeeds();
  return 0;
}
