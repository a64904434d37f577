#include "core/backends/gloo/gloo_error.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <algorithm>
#include <cctype>

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

}  // namespace gloo_backend
}  // namespace hvd
