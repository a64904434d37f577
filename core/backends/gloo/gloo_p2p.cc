// Point-to-point messages over Gloo's unbound buffers. Gloo's waits block
// (and a timed-out wait breaks the context), so each posted message gets a
// small thread that waits for it; Test() only reads that thread's verdict.
//
// Wire: every message is an 8-byte header (the payload's size) on slot
// (kHeaderPrefix, stream), then the payload on (kDataPrefix, stream). The
// receiver posts the header receive at once, in the caller's order, and the
// payload receive only once the header told it the size: a payload larger
// than the buffer is drained into scratch memory and reported, never
// written past the caller's buffer. Payload receives of one (peer, stream)
// are posted in message order (a ticket per message), so concurrent
// receives on one stream match the sender's messages in order.
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "core/backends/gloo/gloo_comm.h"
#include "core/backends/gloo/gloo_error.h"
#include "core/common/host_buffer.h"

namespace hvd {
namespace gloo_backend {

constexpr uint8_t kHeaderPrefix = 0x7a;
constexpr uint8_t kDataPrefix = 0x7b;

// What all messages of one GlooComm share: the order of payload receives.
struct P2PState {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::pair<int, int64_t>, uint64_t> next_ticket;  // (peer, stream)
  std::map<std::pair<int, int64_t>, uint64_t> turn;
  std::mutex send_mu;  // a message's header and payload leave together
};

namespace {

void* Mutable(const void* p) {
  static char dummy = 0;
  return p != nullptr ? const_cast<void*>(p) : &dummy;
}

class GlooP2PRequest : public P2PRequest {
 public:
  GlooP2PRequest(std::shared_ptr<gloo::Context> context, std::shared_ptr<P2PState> state,
                 std::vector<PeerAddress> peers, std::chrono::milliseconds timeout, int rank,
                 int size, int peer, int64_t stream)
      : context_(std::move(context)),
        state_(std::move(state)),
        peers_(std::move(peers)),
        timeout_(timeout),
        rank_(rank),
        size_(size),
        peer_(peer),
        stream_(stream) {}

  ~GlooP2PRequest() override {
    Abort();
    if (thread_.joinable()) thread_.join();
  }

  bool Test(Status* status) override {
    if (!done_.load(std::memory_order_acquire)) return false;
    *status = result_;
    return true;
  }

  void Abort() override {
    {
      std::lock_guard<std::mutex> lock(buf_mu_);
      if (aborted_ || done_.load()) return;
      aborted_ = true;
      if (header_) {
        header_->abortWaitRecv();
        header_->abortWaitSend();
      }
      if (data_) {
        data_->abortWaitRecv();
        data_->abortWaitSend();
      }
    }
    state_->cv.notify_all();
  }

  // Caller's thread: posts both parts, then a thread waits for them.
  Status StartSend(const void* buf, int64_t bytes) {
    uint64_t size = static_cast<uint64_t>(bytes);
    std::memcpy(header_bytes_, &size, sizeof(size));
    Status s = Guard("send", [&] {
      std::lock_guard<std::mutex> lock(state_->send_mu);
      std::lock_guard<std::mutex> bl(buf_mu_);
      header_ = context_->createUnboundBuffer(header_bytes_, sizeof(header_bytes_));
      header_->send(peer_, gloo::Slot::build(kHeaderPrefix, static_cast<uint32_t>(stream_)));
      if (bytes > 0) {
        data_ = context_->createUnboundBuffer(Mutable(buf), static_cast<size_t>(bytes));
        data_->send(peer_, gloo::Slot::build(kDataPrefix, static_cast<uint32_t>(stream_)));
      }
    });
    if (!s.ok()) return s;
    thread_ = std::thread([this, bytes] {
      Finish(Guard("send", [&] {
        if (!header_->waitSend(timeout_)) Aborted();
        if (bytes > 0 && !data_->waitSend(timeout_)) Aborted();
      }));
    });
    return Status::OK();
  }

  // Caller's thread: takes the message's ticket and posts the header
  // receive; the thread posts the payload receive in ticket order.
  Status StartRecv(void* buf, int64_t bytes) {
    const auto key = std::make_pair(peer_, stream_);
    uint64_t ticket = 0;
    Status s = Guard("recv", [&] {
      std::lock_guard<std::mutex> lock(state_->mu);
      std::lock_guard<std::mutex> bl(buf_mu_);
      header_ = context_->createUnboundBuffer(header_bytes_, sizeof(header_bytes_));
      header_->recv(peer_, gloo::Slot::build(kHeaderPrefix, static_cast<uint32_t>(stream_)));
      ticket = state_->next_ticket[key]++;
    });
    if (!s.ok()) return s;
    thread_ = std::thread([this, buf, bytes, key, ticket] {
      uint64_t incoming = 0;
      bool posted = false;
      Status st = Guard("recv", [&] {
        if (!header_->waitRecv(timeout_)) Aborted();
        std::memcpy(&incoming, header_bytes_, sizeof(incoming));
        std::unique_lock<std::mutex> lock(state_->mu);
        state_->cv.wait(lock, [&] { return state_->turn[key] == ticket || IsAborted(); });
        if (IsAborted()) Aborted();
        void* into = buf;
        if (incoming != static_cast<uint64_t>(bytes)) {
          scratch_ = HostBuffer(static_cast<size_t>(incoming));
          into = scratch_.data();
        }
        if (incoming > 0) {
          std::lock_guard<std::mutex> bl(buf_mu_);
          data_ = context_->createUnboundBuffer(Mutable(into), static_cast<size_t>(incoming));
          data_->recv(peer_, gloo::Slot::build(kDataPrefix, static_cast<uint32_t>(stream_)));
        }
        ++state_->turn[key];
        posted = true;
        lock.unlock();
        state_->cv.notify_all();
        if (incoming > 0 && !data_->waitRecv(timeout_)) Aborted();
      });
      if (!posted) {
        // Later messages of this stream must not wait for this one forever.
        std::lock_guard<std::mutex> lock(state_->mu);
        if (state_->turn[key] == ticket) ++state_->turn[key];
        state_->cv.notify_all();
      }
      if (st.ok() && incoming != static_cast<uint64_t>(bytes)) {
        st = Status(Code::kMismatch, "the message from rank " + std::to_string(peer_) + " has " +
                                         std::to_string(incoming) + " bytes, the receive buffer " +
                                         std::to_string(bytes));
      }
      Finish(std::move(st));
    });
    return Status::OK();
  }

 private:
  [[noreturn]] static void Aborted() { throw std::runtime_error("aborted"); }
  bool IsAborted() {
    std::lock_guard<std::mutex> bl(buf_mu_);
    return aborted_;
  }

  Status Guard(const char* op, const std::function<void()>& fn) {
    return NamePeer(GlooGuard(op,
                              "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                  ", peer " + std::to_string(peer_),
                              fn),
                    peers_);
  }

  void Finish(Status s) {
    result_ = std::move(s);
    done_.store(true, std::memory_order_release);
  }

  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<P2PState> state_;
  std::vector<PeerAddress> peers_;
  std::chrono::milliseconds timeout_;
  int rank_, size_, peer_;
  int64_t stream_;
  alignas(8) char header_bytes_[8] = {};
  std::mutex buf_mu_;  // header_/data_ against Abort
  std::unique_ptr<gloo::transport::UnboundBuffer> header_, data_;
  HostBuffer scratch_;  // a payload whose size is not the buffer's
  bool aborted_ = false;
  std::atomic<bool> done_{false};
  Status result_;
  std::thread thread_;  // last: joined before the rest goes
};

}  // namespace
}  // namespace gloo_backend

Status GlooComm::StartP2P(bool recv, void* buf, int64_t bytes, int peer, int64_t stream,
                          std::unique_ptr<P2PRequest>* out) {
  const char* what = recv ? "Gloo recv" : "Gloo send";
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return Status::Invalid(std::string(what) + ": peer " + std::to_string(peer) +
                           " is not another rank of " + std::to_string(size_));
  }
  if (!broken_.ok()) {
    return Status(
        broken_.code(),
        std::string(what) + ": communicator unusable after an earlier error: " + broken_.message());
  }
  std::call_once(p2p_once_, [this] { p2p_ = std::make_shared<gloo_backend::P2PState>(); });
  auto r = std::make_unique<gloo_backend::GlooP2PRequest>(
      context_, p2p_, peers_, shared_->op_timeout, rank_, size_, peer, stream);
  HVD_RETURN_IF_ERROR(recv ? r->StartRecv(buf, bytes) : r->StartSend(buf, bytes));
  *out = std::move(r);
  return Status::OK();
}

Status GlooComm::Isend(const void* buf, int64_t bytes, int peer, int64_t stream,
                       std::unique_ptr<P2PRequest>* out) {
  return StartP2P(false, const_cast<void*>(buf), bytes, peer, stream, out);
}

Status GlooComm::Irecv(void* buf, int64_t bytes, int peer, int64_t stream,
                       std::unique_ptr<P2PRequest>* out) {
  return StartP2P(true, buf, bytes, peer, stream, out);
}

}  // namespace hvd
