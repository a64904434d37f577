// Client of the rendezvous key-value store that hvdrun serves. Every message
// carries an HMAC over the job's secret; the server refuses anything else.
// Used by the Gloo backend to build its contexts and by elastic mode.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/common/launch_env.h"
#include "core/common/status.h"

namespace hvd {

class KVClient {
 public:
  virtual ~KVClient() = default;

  // Connects to host:port; `secret` is the job's shared secret (raw bytes).
  static Status Connect(const std::string& host, int port, const std::string& secret,
                        double timeout_seconds, std::unique_ptr<KVClient>* out);
  // Connects to the store the launcher named (HVD_RENDEZVOUS_ADDR / _PORT /
  // _SECRET, read by launch_env.h); a missing or malformed part is an error
  // naming the variable.
  static Status Connect(const RendezvousEndpoint& store, double timeout_seconds,
                        std::unique_ptr<KVClient>* out);
  // The same with the endpoint read from this process's environment now.
  static Status ConnectFromEnvironment(double timeout_seconds, std::unique_ptr<KVClient>* out);

  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // Blocks until `key` exists (or timeout: Code::kTimeout naming the key).
  virtual Status Get(const std::string& key, double timeout_seconds, std::string* value) = 0;
  // Atomically adds `delta` to the integer stored at key (0 if absent).
  virtual Status Add(const std::string& key, int64_t delta, int64_t* result) = 0;
  virtual Status Wait(const std::vector<std::string>& keys, double timeout_seconds) = 0;
};

}  // namespace hvd
