// TCP implementation of hvd::KVClient (declared in kv_client.h) speaking the
// authenticated protocol of kv_protocol.h to hvdrun's KVServer.
#include "core/rendezvous/kv_client.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/rendezvous/kv_protocol.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

namespace {

using rendezvous::Deadline;
using rendezvous::Direction;
using rendezvous::Message;
using rendezvous::MsgType;
using rendezvous::UniqueFd;

// Slack on top of a request's own timeout before the client stops waiting
// for the server's answer: the server answers timeouts itself, this only
// catches a server that died or a network that dropped the connection.
constexpr double kReplyGraceSeconds = 30.0;
// Bound for requests that do not wait (set, add).
constexpr double kIoTimeoutSeconds = 60.0;

Status ReadFrame(int fd, Deadline deadline, std::string* body) {
  unsigned char len_bytes[4];
  HVD_RETURN_IF_ERROR(rendezvous::RecvAll(fd, len_bytes, 4, deadline));
  uint32_t len = (uint32_t{len_bytes[0]} << 24) | (uint32_t{len_bytes[1]} << 16) |
                 (uint32_t{len_bytes[2]} << 8) | len_bytes[3];
  if (len == 0 || len > rendezvous::kMaxFrameBytes) {
    return Status::Backend("rendezvous server sent a frame of invalid size " + std::to_string(len));
  }
  body->assign(len, '\0');
  return rendezvous::RecvAll(fd, &(*body)[0], len, deadline);
}

int64_t TimeoutMs(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return -1;
  return static_cast<int64_t>(std::min(seconds, 86400.0 * 365) * 1e3);
}

class TcpKVClient final : public KVClient {
 public:
  TcpKVClient(UniqueFd fd, std::string where, std::string secret, std::string session)
      : fd_(std::move(fd)),
        where_(std::move(where)),
        secret_(std::move(secret)),
        session_(std::move(session)) {}

  Status Set(const std::string& key, const std::string& value) override {
    Message req;
    req.type = MsgType::kSet;
    req.keys = {key};
    req.value = value;
    Message reply;
    HVD_RETURN_IF_ERROR(Call(req, kIoTimeoutSeconds, &reply));
    return Expect(reply, MsgType::kOk, "set", key);
  }

  Status Get(const std::string& key, double timeout_seconds, std::string* value) override {
    Message req;
    req.type = MsgType::kGet;
    req.keys = {key};
    req.integer = TimeoutMs(timeout_seconds);
    Message reply;
    HVD_RETURN_IF_ERROR(Call(req, WaitBound(timeout_seconds), &reply));
    if (reply.type == MsgType::kTimeout) {
      return Status::Timeout("rendezvous: timed out after " + Seconds(timeout_seconds) +
                             " waiting for key '" + key + "' at " + where_);
    }
    HVD_RETURN_IF_ERROR(Expect(reply, MsgType::kValue, "get", key));
    *value = std::move(reply.value);
    return Status::OK();
  }

  Status Add(const std::string& key, int64_t delta, int64_t* result) override {
    Message req;
    req.type = MsgType::kAdd;
    req.keys = {key};
    req.integer = delta;
    Message reply;
    HVD_RETURN_IF_ERROR(Call(req, kIoTimeoutSeconds, &reply));
    HVD_RETURN_IF_ERROR(Expect(reply, MsgType::kInt, "add", key));
    if (result != nullptr) *result = reply.integer;
    return Status::OK();
  }

  Status Wait(const std::vector<std::string>& keys, double timeout_seconds) override {
    if (keys.empty()) return Status::OK();
    Message req;
    req.type = MsgType::kWait;
    req.keys = keys;
    req.integer = TimeoutMs(timeout_seconds);
    Message reply;
    HVD_RETURN_IF_ERROR(Call(req, WaitBound(timeout_seconds), &reply));
    if (reply.type == MsgType::kTimeout) {
      std::string missing;
      for (const auto& k : reply.keys) missing += (missing.empty() ? "'" : ", '") + k + "'";
      return Status::Timeout("rendezvous: timed out after " + Seconds(timeout_seconds) +
                             " waiting for key(s) " + missing + " at " + where_);
    }
    return Expect(reply, MsgType::kOk, "wait", keys[0]);
  }

 private:
  static double WaitBound(double timeout_seconds) {
    return timeout_seconds < 0 || !std::isfinite(timeout_seconds)
               ? -1.0
               : timeout_seconds + kReplyGraceSeconds;
  }

  static std::string Seconds(double s) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g s", s);
    return buf;
  }

  Status Expect(const Message& reply, MsgType want, const char* op, const std::string& key) {
    if (reply.type == want) return Status::OK();
    if (reply.type == MsgType::kError) {
      return Status::Backend("rendezvous " + std::string(op) + " '" + key + "': " + reply.value);
    }
    return Status::Backend("rendezvous " + std::string(op) + " '" + key + "': unexpected reply '" +
                           rendezvous::MsgTypeName(reply.type) + "'");
  }

  // One request/reply round trip. Thread-safe: the counter and the stream
  // must stay in step, so calls are serialised.
  Status Call(const Message& req, double timeout_seconds, Message* reply) {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) {
      return Status::PeerLost("rendezvous connection to " + where_ + " was lost earlier");
    }
    uint64_t counter = ++counter_;
    std::string frame;
    rendezvous::AppendFrame(
        rendezvous::SealBody(secret_, session_, Direction::kToServer, counter, req), &frame);
    Deadline deadline = Deadline::After(timeout_seconds);
    Status s = rendezvous::SendAll(fd_.get(), frame.data(), frame.size(), deadline);
    std::string body;
    if (s.ok()) s = ReadFrame(fd_.get(), deadline, &body);
    if (s.ok()) {
      s = rendezvous::OpenBody(secret_, session_, Direction::kToClient, counter, body, reply);
    }
    if (!s.ok()) {
      // The stream may be mid-frame now; nothing later could be trusted.
      broken_ = true;
      fd_.Reset();
      return Status(s.code() == Code::kTimeout ? Code::kTimeout : Code::kPeerLost,
                    "rendezvous server " + where_ + ": " + s.message());
    }
    return Status::OK();
  }

  std::mutex mu_;
  UniqueFd fd_;
  std::string where_;
  std::string secret_;
  std::string session_;
  uint64_t counter_ = 0;
  bool broken_ = false;
};

}  // namespace

Status KVClient::Connect(const std::string& host, int port, const std::string& secret,
                         double timeout_seconds, std::unique_ptr<KVClient>* out) {
  if (out == nullptr) return Status::Invalid("KVClient::Connect: out is null");
  std::string where = host + ":" + std::to_string(port);
  Deadline deadline = Deadline::After(timeout_seconds);
  UniqueFd fd;
  HVD_RETURN_IF_ERROR(rendezvous::ConnectTcp(host, port, deadline, &fd));

  std::string body;
  Status s = ReadFrame(fd.get(), deadline, &body);
  if (!s.ok()) return Status(s.code(), "rendezvous server " + where + ": no hello: " + s.message());
  std::string server_nonce;
  s = rendezvous::DecodeHello(body, &server_nonce);
  if (!s.ok()) return Status(s.code(), "rendezvous server " + where + ": " + s.message());

  Message auth;
  auth.type = MsgType::kAuth;
  HVD_RETURN_IF_ERROR(rendezvous::RandomBytes(rendezvous::kNonceBytes, &auth.value));
  std::string session = server_nonce + auth.value;
  std::string frame;
  rendezvous::AppendFrame(rendezvous::SealBody(secret, session, Direction::kToServer, 0, auth),
                          &frame);
  s = rendezvous::SendAll(fd.get(), frame.data(), frame.size(), deadline);
  if (s.ok()) s = ReadFrame(fd.get(), deadline, &body);
  if (!s.ok()) {
    if (s.code() == Code::kPeerLost) {
      return Status::Invalid("rendezvous server " + where +
                             " refused authentication (wrong or missing HVD_RENDEZVOUS_SECRET)");
    }
    return Status(s.code(), "rendezvous server " + where + ": " + s.message());
  }
  Message ok;
  s = rendezvous::OpenBody(secret, session, Direction::kToClient, 0, body, &ok);
  if (!s.ok() || ok.type != MsgType::kAuthOk) {
    // The server could not prove it knows the secret: not our job's server.
    return Status::Invalid("rendezvous server " + where + " failed to authenticate itself: " +
                           (s.ok() ? std::string("unexpected reply") : s.message()));
  }
  *out = std::make_unique<TcpKVClient>(std::move(fd), where, secret, session);
  return Status::OK();
}

Status KVClient::Connect(const RendezvousEndpoint& store, double timeout_seconds,
                         std::unique_ptr<KVClient>* out) {
  if (store.addr.empty() || store.port.empty()) {
    return Status::Invalid(
        "HVD_RENDEZVOUS_ADDR and HVD_RENDEZVOUS_PORT are not set: start the job with hvdrun (or "
        "set them to a running rendezvous server)");
  }
  if (store.secret_hex.empty()) {
    return Status::Invalid(
        "HVD_RENDEZVOUS_SECRET is not set: the rendezvous server refuses "
        "unauthenticated clients");
  }
  char* end = nullptr;
  long port_num = std::strtol(store.port.c_str(), &end, 10);
  if (*end != '\0' || port_num <= 0 || port_num > 65535) {
    return Status::Invalid("HVD_RENDEZVOUS_PORT='" + store.port + "' is not a port number");
  }
  std::string secret;
  Status s = rendezvous::HexDecode(store.secret_hex, &secret);
  if (!s.ok()) return Status::Invalid("HVD_RENDEZVOUS_SECRET: " + s.message());
  return Connect(store.addr, static_cast<int>(port_num), secret, timeout_seconds, out);
}

Status KVClient::ConnectFromEnvironment(double timeout_seconds, std::unique_ptr<KVClient>* out) {
  return Connect(RendezvousFromEnvironment(), timeout_seconds, out);
}

}  // namespace hvd
