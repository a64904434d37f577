// Liveness probes: how a rank learns, when something takes too long or a
// peer is lost, what every other rank of the job is doing. Each process
// runs a small TCP server thread (asleep in poll() until asked) that answers
// one question — "what is your state, and do you hold tensor T of set S?" —
// with one line. A stopped or hung process accepts the connection (the
// kernel does) but never answers; a dead one refuses it. So a survivor can
// tell "stopped", "gone" and "alive, doing X" apart on any backend.
//
// Requests carry the job's token (random, shared over the world
// communicator at init); anything else is dropped unanswered.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/common/status.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

struct ProbeQuestion {
  int32_t set = 0;
  std::string tensor;  // may be empty
};

class ProbeServer {
 public:
  // Returns the line this rank answers with.
  using Answer = std::function<std::string(const ProbeQuestion&)>;

  // Listens on every address of this host (port chosen by the kernel).
  static Status Start(const std::string& token, Answer answer, std::unique_ptr<ProbeServer>* out);
  ~ProbeServer();
  ProbeServer(const ProbeServer&) = delete;
  ProbeServer& operator=(const ProbeServer&) = delete;

  int port() const { return port_; }

  // Use Start.
  ProbeServer(rendezvous::UniqueFd listener, int port, std::string token, Answer answer);

 private:
  void Serve();
  void AnswerOne(int fd);

  rendezvous::UniqueFd listener_;
  rendezvous::UniqueFd stop_;  // eventfd: wakes Serve() to leave
  int port_;
  std::string token_;
  Answer answer_;
  std::thread thread_;
};

struct ProbeResult {
  enum Verdict { kAnswered, kSilent, kGone };
  Verdict verdict = kSilent;
  std::string answer;  // kAnswered: the peer's line; otherwise why
};

// Asks every address ("host:port") at once and waits up to `timeout_s` for
// the answers; results come back in the order of `addresses`.
std::vector<ProbeResult> ProbePeers(const std::vector<std::string>& addresses,
                                    const std::string& token, const ProbeQuestion& question,
                                    double timeout_s);

// A random token for a job (hex).
std::string NewProbeToken();

}  // namespace hvd
