// The runtime's side of point-to-point messages: the p2p engine's Comm,
// made at init, and the mapping of a set's ranks to the world's.
#include <utility>

#include "core/common/logging.h"
#include "core/runtime/runtime.h"

namespace hvd {

void Runtime::StartP2P(ProcessSet& world) {
  p2p_.reset();
  p2p_unavailable_ = Status::OK();
  if (!config_.p2p) {
    p2p_unavailable_ = Status::Unsupported("they were turned off (HVD_P2P=0)");
    return;
  }
  if (world.size() < 2) {
    p2p_unavailable_ = Status::Invalid("the job has one rank: there is no peer to message");
    return;
  }
  // A Comm of its own: messages never interleave with the set loop's
  // collectives, and the engine's thread may use it at any time.
  std::unique_ptr<Comm> comm;
  Status s = world.controller_comm->Split(world.ranks, "p2p", &comm);
  if (!s.ok()) {
    HVD_LOG(kWarning) << "point-to-point messages are unavailable: " << s.message();
    p2p_unavailable_ = s;
    return;
  }
  std::vector<std::string> names;
  for (int r = 0; r < topo_.size; ++r) {
    names.push_back("rank " + std::to_string(r) + " (host " + hosts_[static_cast<size_t>(r)] + ")");
  }
  p2p_ = std::make_unique<P2PEngine>(
      std::move(comm), std::move(names), config_.op_timeout_seconds, [this](int rank) {
        if (!liveness_) return std::string();
        return liveness_->Describe(liveness_->Ask({rank}, {0, ""}, 1.0));
      });
}

Status Runtime::SubmitP2P(const char* fn, int32_t set, std::vector<P2POp> ops,
                          const std::shared_ptr<HandleState>& state) {
  if (!running_) return Status::NotInitialized();
  {
    std::lock_guard<std::mutex> sl(sets_mu_);
    ProcessSet* ps = nullptr;
    HVD_RETURN_IF_ERROR(FindMemberSet(set, &ps));
    for (P2POp& op : ops) {
      if (op.set_peer < 0 || op.set_peer >= ps->size() || op.set_peer == ps->rank()) {
        return Status::Invalid("peer " + std::to_string(op.set_peer) +
                               " is not another rank of process set " + std::to_string(set) +
                               " (size " + std::to_string(ps->size()) + ", this rank " +
                               std::to_string(ps->rank()) + ")");
      }
      op.set = set;
      op.peer = ps->ranks[static_cast<size_t>(op.set_peer)];
    }
  }
  if (!p2p_) {
    return Status(
        p2p_unavailable_.code() == Code::kOk ? Code::kUnsupported : p2p_unavailable_.code(),
        "point-to-point messages are unavailable: " + p2p_unavailable_.message());
  }
  return p2p_->Submit(fn, ops, state);
}

}  // namespace hvd
