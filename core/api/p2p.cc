// Point-to-point messages: a handle, then the runtime's p2p engine. They
// bypass the collectives' queue and negotiation entirely.
#include <string>

#include "core/api/api.h"
#include "core/backends/p2p_request.h"
#include "core/common/block_pool.h"
#include "core/runtime/handle_table.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {

Status PostP2P(const char* caller, std::vector<P2PMessage> messages, const P2POptions& o,
               int64_t* handle) {
  if (o.process_set < 0 || o.process_set > kMaxP2PSet) {
    return Status::Invalid("process set id " + std::to_string(o.process_set) + " is outside 0.." +
                           std::to_string(kMaxP2PSet));
  }
  std::vector<P2POp> ops(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    ops[i].recv = messages[i].recv;
    ops[i].buf = messages[i].data;
    ops[i].bytes = messages[i].bytes;
    ops[i].set_peer = messages[i].peer;
    ops[i].tag = messages[i].tag;
  }
  auto state = std::allocate_shared<HandleState>(PoolAllocator<HandleState>(),
                                                 static_cast<int>(ops.size()), o.callback);
  const int64_t id = HandleTable::Global().Add(state);
  state->set_id(id);
  Status s = Runtime::Get().SubmitP2P(caller, o.process_set, std::move(ops), state);
  if (!s.ok()) {
    HandleTable::Global().Release(id);
    *handle = 0;
    return s;
  }
  *handle = id;
  return Status::OK();
}

}  // namespace api
}  // namespace hvd
