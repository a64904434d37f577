#include "core/common/slurm_hostlist.h"

#include <cstdlib>

namespace hvd {
namespace {

constexpr size_t kMaxNames = 1u << 20;

bool ParseNumber(const std::string& s, long* out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) {
    return false;
  }
  *out = std::strtol(s.c_str(), nullptr, 10);
  return true;
}

// Splits at commas outside brackets.
std::vector<std::string> SplitTop(const std::string& text) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// "07-10" or "7" inside brackets, appended as prefix+N+suffix.
Status ExpandRange(const std::string& range, const std::string& prefix, const std::string& suffix,
                   const std::string& whole, std::vector<std::string>* out) {
  const size_t dash = range.find('-');
  const std::string lo_text = range.substr(0, dash);
  const std::string hi_text = dash == std::string::npos ? lo_text : range.substr(dash + 1);
  long lo = 0, hi = 0;
  if (!ParseNumber(lo_text, &lo) || !ParseNumber(hi_text, &hi) || hi < lo) {
    return Status::Invalid("invalid range '" + range + "' in Slurm host list '" + whole + "'");
  }
  if (out->size() + static_cast<size_t>(hi - lo + 1) > kMaxNames) {
    return Status::Invalid("Slurm host list '" + whole + "' names too many hosts");
  }
  for (long v = lo; v <= hi; ++v) {
    std::string n = std::to_string(v);
    if (n.size() < lo_text.size()) n.insert(0, lo_text.size() - n.size(), '0');
    out->push_back(prefix + n + suffix);
  }
  return Status::OK();
}

}  // namespace

Status ExpandSlurmHostlist(const std::string& text, std::vector<std::string>* out) {
  std::vector<std::string> names;
  for (const std::string& part : SplitTop(text)) {
    const size_t open = part.find('[');
    if (open == std::string::npos) {
      if (part.empty() || part.find(']') != std::string::npos) {
        return Status::Invalid("invalid entry '" + part + "' in Slurm host list '" + text + "'");
      }
      names.push_back(part);
      continue;
    }
    const size_t close = part.find(']', open);
    if (open == 0 || close == std::string::npos ||
        part.find_first_of("[]", close + 1) != std::string::npos) {
      return Status::Invalid("invalid entry '" + part + "' in Slurm host list '" + text + "'");
    }
    const std::string prefix = part.substr(0, open), suffix = part.substr(close + 1);
    for (const std::string& range : SplitTop(part.substr(open + 1, close - open - 1))) {
      HVD_RETURN_IF_ERROR(ExpandRange(range, prefix, suffix, text, &names));
    }
  }
  *out = std::move(names);
  return Status::OK();
}

Status ExpandSlurmTaskCounts(const std::string& text, std::vector<int>* out) {
  std::vector<int> counts;
  for (const std::string& part : SplitTop(text)) {
    const size_t paren = part.find("(x");
    long n = 0, times = 1;
    const bool ok = paren == std::string::npos
                        ? ParseNumber(part, &n)
                        : ParseNumber(part.substr(0, paren), &n) && part.back() == ')' &&
                              ParseNumber(part.substr(paren + 2, part.size() - paren - 3), &times);
    if (!ok || n < 1 || times < 1 || counts.size() + static_cast<size_t>(times) > kMaxNames) {
      return Status::Invalid("invalid entry '" + part + "' in Slurm task counts '" + text + "'");
    }
    counts.insert(counts.end(), static_cast<size_t>(times), static_cast<int>(n));
  }
  *out = std::move(counts);
  return Status::OK();
}

}  // namespace hvd
