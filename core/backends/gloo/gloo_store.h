// Adapter: hvd's rendezvous KV client seen as a gloo::rendezvous::Store, so
// Gloo's connectFullMesh can exchange addresses through hvdrun's server.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/rendezvous/kv_client.h"

namespace hvd {
namespace gloo_backend {

class KVStore : public ::gloo::rendezvous::Store {
 public:
  KVStore(std::unique_ptr<KVClient> client, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Direct access for hvd's own bookkeeping (the init generation counter).
  Status Add(const std::string& key, int64_t delta, int64_t* result);

 private:
  std::unique_ptr<KVClient> client_;
  std::chrono::milliseconds timeout_;
  // Split may run on a different thread than the one that built the world.
  std::mutex mu_;
};

}  // namespace gloo_backend
}  // namespace hvd
