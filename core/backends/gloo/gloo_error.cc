#include "core/backends/gloo/gloo_error.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <algorithm>
#include <cctype>

#include "core/backends/gloo/sigpipe_block.h"

namespace hvd {
namespace gloo_backend {
namespace {

bool Contains(const std::string& haystack, const char* needle) {
  std::string h = haystack;
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
  return h.find(needle) != std::string::npos;
}

const char* Describe(Code code) {
  switch (code) {
    case Code::kTimeout:
      return "timed out waiting for a peer";
    case Code::kPeerLost:
      return "connection to a peer lost";
    default:
      return "internal error";
  }
}

Status Make(Code code, const char* op, const std::string& where, const std::string& what) {
  std::string m = std::string("Gloo ") + op;
  if (!where.empty()) m += " (" + where + ")";
  m += ": ";
  m += Describe(code);
  m += ": " + what;
  return Status(code, std::move(m));
}

}  // namespace

Code ClassifyGlooMessage(const std::string& what, bool io_error) {
  // Gloo reports timeouts as IoException ("Timed out waiting ...ms for recv
  // operation to complete", "Connect timeout"), so the text decides.
  if (Contains(what, "timed out") || Contains(what, "timeout")) return Code::kTimeout;
  if (io_error || Contains(what, "connection closed") || Contains(what, "connection reset") ||
      Contains(what, "broken pipe") || Contains(what, "connection refused") ||
      Contains(what, "read error") || Contains(what, "write error") || Contains(what, "socket")) {
    return Code::kPeerLost;
  }
  return Code::kBackend;
}

Status GlooGuard(const char* op, const std::string& where, const std::function<void()>& fn) {
  ScopedSigpipeBlock no_sigpipe;
  try {
    fn();
    return Status::OK();
  } catch (const StatusError& e) {
    const Status& s = e.status();
    return Status(s.code(), std::string("Gloo ") + op + (where.empty() ? "" : " (" + where + ")") +
                                ": " + s.message());
  } catch (const ::gloo::IoException& e) {
    return Make(ClassifyGlooMessage(e.what(), true), op, where, e.what());
  } catch (const ::gloo::EnforceNotMet& e) {
    return Make(ClassifyGlooMessage(e.what(), false), op, where, e.what());
  } catch (const std::exception& e) {
    return Make(ClassifyGlooMessage(e.what(), false), op, where, e.what());
  } catch (...) {
    return Make(Code::kBackend, op, where, "unknown exception");
  }
}

const PeerAddress* FindPeer(const std::string& what, const std::vector<PeerAddress>& peers) {
  for (const auto& p : peers) {
    if (p.address.empty()) continue;
    for (size_t at = what.find(p.address); at != std::string::npos;
         at = what.find(p.address, at + 1)) {
      const size_t end = at + p.address.size();
      if (end == what.size() || !std::isdigit(static_cast<unsigned char>(what[end]))) return &p;
    }
  }
  return nullptr;
}

Status NamePeer(const Status& s, const std::vector<PeerAddress>& peers) {
  if (s.code() != Code::kPeerLost && s.code() != Code::kTimeout) return s;
  const PeerAddress* p = FindPeer(s.message(), peers);
  if (p == nullptr) return s;
  const std::string who =
      "rank " + std::to_string(p->rank) + " (host " + p->host + ", " + p->address + ")";
  std::string m = s.message();
  const std::string generic =
      s.code() == Code::kPeerLost ? Describe(Code::kPeerLost) : Describe(Code::kTimeout);
  const std::string named = s.code() == Code::kPeerLost ? "connection to " + who + " lost"
                                                        : "timed out waiting for " + who;
  const size_t at = m.find(generic);
  if (at != std::string::npos) {
    m.replace(at, generic.size(), named);
  } else {
    m += " [" + named + "]";
  }
  return Status(s.code(), std::move(m));
}

Status NameMissingRanks(const Status& s, const std::string& prefix, int size) {
  if (s.code() != Code::kTimeout) return s;
  const std::string& m = s.message();
  const std::string key = "'" + prefix + "/";
  std::string ranks;
  int count = 0;
  for (size_t at = m.find(key); at != std::string::npos; at = m.find(key, at + 1)) {
    size_t end = at + key.size();
    while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) ++end;
    if (end == at + key.size() || end >= m.size() || m[end] != '\'') continue;
    ranks += (count++ ? ", " : "") + m.substr(at + key.size(), end - at - key.size());
  }
  if (count == 0) return s;
  return Status(s.code(), m + ": rank" + (count > 1 ? "s " : " ") + ranks + " of " +
                              std::to_string(size) + (count > 1 ? " have" : " has") +
                              " not joined: not started, or not yet in hvd_init");
}

}  // namespace gloo_backend
}  // namespace hvd
