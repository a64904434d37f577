// The rendezvous-store keys of elastic mode, shared by hvdrun's elastic
// driver (which writes them) and the workers' hvd_init (which reads them).
// Header-only so the launcher, which does not link the core, can use it.
//
//   elastic/round                     latest published round n (integer)
//   elastic/<n>/worker/<id>           "rank size local_rank local_size cross_rank cross_size"
//   elastic/<n>/published             set once every assignment of round n is written
//   elastic/<n>/reset                 counter: workers of round n that asked for a new round
//   elastic/<n>/joined                counter: workers that read their place in round n
//   elastic/ready/<id>                set by a worker waiting for its first round: the
//                                     launcher adds a replacement only once it is ready
//   elastic/heartbeat/<id>            a counter the worker bumps every heartbeat
#pragma once

#include <cstdint>
#include <string>

namespace hvd {
namespace elastic {

inline std::string RoundKey() {
  return "elastic/round";
}
inline std::string RoundPrefix(int64_t round) {
  return "elastic/" + std::to_string(round) + "/";
}
inline std::string WorkerKey(int64_t round, const std::string& worker_id) {
  return RoundPrefix(round) + "worker/" + worker_id;
}
inline std::string PublishedKey(int64_t round) {
  return RoundPrefix(round) + "published";
}
inline std::string ResetKey(int64_t round) {
  return RoundPrefix(round) + "reset";
}

inline std::string JoinedKey(int64_t round) {
  return RoundPrefix(round) + "joined";
}
inline std::string ReadyKey(const std::string& worker_id) {
  return "elastic/ready/" + worker_id;
}
inline std::string HeartbeatKey(const std::string& worker_id) {
  return "elastic/heartbeat/" + worker_id;
}

}  // namespace elastic
}  // namespace hvd
