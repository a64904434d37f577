#include "core/coordination/stall_inspector.h"

#include <algorithm>

#include "core/common/logging.h"
#include "core/coordination/response_rules.h"

namespace hvd {
namespace {

std::string Seconds(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

StallInspector::StallInspector(const Config& config, int32_t set_id)
    : config_(config), set_id_(set_id), next_(Clock::now()) {}

bool StallInspector::Due(Clock::time_point now) {
  if (now < next_) return false;
  // The shortest limit in force sets the pace: a few looks per period.
  double limit = config_.op_timeout_seconds > 0 ? config_.op_timeout_seconds : 3600.0;
  if (config_.stall_check_seconds > 0 && !config_.stall_check_disabled) {
    limit = std::min(limit, config_.stall_check_seconds);
  }
  if (config_.stall_shutdown_seconds > 0) limit = std::min(limit, config_.stall_shutdown_seconds);
  now_ = now;
  next_ = now + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(std::min(1.0, limit / 4)));
  return true;
}

bool StallInspector::Inspect(const std::string& name, OpType type, Clock::time_point since,
                             const std::vector<int>& missing, bool* warned, std::string* error,
                             const std::function<std::string()>& detail) {
  const double age = std::chrono::duration<double>(now_ - since).count();
  const std::string line = "'" + name + "' (" + OpTypeName(type) + ", waiting " +
                           std::to_string(static_cast<int>(age)) + " s for ranks " +
                           RankList(missing) + ")";
  if (config_.stall_shutdown_seconds > 0 && age >= config_.stall_shutdown_seconds) {
    *error = "stalled: tensor " + line +
             " exceeded HVD_STALL_SHUTDOWN_TIME_SECONDS=" + Seconds(config_.stall_shutdown_seconds);
  } else if (config_.op_timeout_seconds > 0 && age >= config_.op_timeout_seconds) {
    *error = std::string(OpTypeName(type)) + " of tensor '" + name + "' timed out after " +
             std::to_string(static_cast<int>(age)) +
             " s (HVD_OP_TIMEOUT_SECONDS=" + Seconds(config_.op_timeout_seconds) + "): rank" +
             (missing.size() > 1 ? "s " : " ") + RankList(missing) +
             (missing.size() > 1 ? " have" : " has") + " not submitted it";
    const std::string more = detail ? detail() : std::string();
    if (!more.empty()) *error += "; " + more;
  }
  if (!error->empty()) {
    HVD_LOG(kError) << *error;
    return true;
  }
  const bool checking = config_.stall_check_seconds > 0 && !config_.stall_check_disabled;
  if (checking && !*warned && age >= config_.stall_check_seconds) {
    report_ += (report_.empty() ? "" : ", ") + line;
    *warned = true;
  }
  return false;
}

void StallInspector::Flush() {
  if (report_.empty()) return;
  HVD_LOG(kWarning) << "Stall detected in process set " << set_id_
                    << ": some ranks submitted tensors others have not for more than "
                    << Seconds(config_.stall_check_seconds)
                    << " s (HVD_STALL_CHECK_TIME_SECONDS): " << report_
                    << ". This usually means ranks submit different tensors or one rank "
                       "stopped calling hvd.";
  report_.clear();
}

}  // namespace hvd
