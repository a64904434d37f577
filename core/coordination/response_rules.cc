#include "core/coordination/response_rules.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace hvd {
namespace {

int64_t RowElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// If the requests disagree on value(q), describes who has what:
// "rank 0: [4]; ranks 1, 2: [5]".
bool Disagree(const std::vector<Request>& qs,
              const std::function<std::string(const Request&)>& value, std::string* detail) {
  std::vector<std::pair<int, std::string>> rank_values;
  for (const auto& q : qs) rank_values.emplace_back(q.rank, value(q));
  const auto groups = GroupRanksByValue(rank_values);
  if (groups.size() <= 1) return false;
  detail->clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    if (i) *detail += "; ";
    *detail += (groups[i].second.size() == 1 ? "rank " : "ranks ") + RankList(groups[i].second) +
               ": " + groups[i].first;
  }
  return true;
}

std::string Num(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string ShapeKey(const Request& q) {
  const bool rows_only = q.type == OpType::kAllgather || q.type == OpType::kAlltoall;
  if (!rows_only) return ShapeString(q.shape);
  if (q.shape.empty()) return "scalar";
  std::vector<int64_t> rest(q.shape.begin() + 1, q.shape.end());
  return "[*" + (rest.empty() ? std::string() : ", " + ShapeString(rest).substr(1));
}

// One rule: the property every rank must agree on, and how to name it.
struct Rule {
  std::function<bool(const Request&)> applies;
  std::function<std::string(const Request&)> value;
  std::string what;  // "Mismatched <what> for tensor 'x'"
};

std::vector<Rule> Rules(const std::string& op) {
  auto always = [](const Request&) { return true; };
  auto reduces = [](const Request& q) {
    return q.type == OpType::kAllreduce || q.type == OpType::kReducescatter;
  };
  const bool rows_only = op == "allgather" || op == "alltoall";
  return {
      {always, [](const Request& q) { return std::string(OpTypeName(q.type)); }, "operations"},
      {always, [](const Request& q) { return std::string(DataTypeName(q.dtype)); }, op + " dtypes"},
      {always, [](const Request& q) { return DeviceName(q.device).substr(0, 3); }, op + " devices"},
      {reduces, [](const Request& q) { return std::string(ReduceOpName(q.reduce_op)); },
       op + " reduce ops"},
      {always, [](const Request& q) { return Num(q.prescale) + "/" + Num(q.postscale); },
       op + " prescale/postscale factors"},
      {[](const Request& q) { return q.type == OpType::kBroadcast; },
       [](const Request& q) { return std::to_string(q.root); }, "broadcast root ranks"},
      {always, [](const Request& q) { return q.group + "/" + std::to_string(q.group_size); },
       "groups"},
      {always, ShapeKey, op + " tensor shapes" + (rows_only ? " (beyond dimension 0)" : "")},
      {[](const Request& q) {
         return q.type == OpType::kAddProcessSet || q.type == OpType::kRemoveProcessSet;
       },
       [](const Request& q) {
         return ShapeString(std::vector<int64_t>(q.set_ranks.begin(), q.set_ranks.end()));
       },
       "process set ranks"},
  };
}

bool SameScale(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

// True when q agrees with ref on every property the rules compare, by
// exact typed comparison: the common case, decided without formatting a
// string per rule and request (which cost about 1 us per tensor). False
// only means the rules must look (their formatted values may still agree).
bool AgreesExactly(const Request& ref, const Request& q) {
  const bool rows_only = ref.type == OpType::kAllgather || ref.type == OpType::kAlltoall;
  const bool same_shape =
      rows_only ? q.shape.empty() == ref.shape.empty() &&
                      (q.shape.empty() || std::equal(q.shape.begin() + 1, q.shape.end(),
                                                     ref.shape.begin() + 1, ref.shape.end()))
                : q.shape == ref.shape;
  return q.type == ref.type && q.dtype == ref.dtype && q.device.kind == ref.device.kind &&
         q.reduce_op == ref.reduce_op && SameScale(q.prescale, ref.prescale) &&
         SameScale(q.postscale, ref.postscale) && q.root == ref.root && q.group == ref.group &&
         q.group_size == ref.group_size && same_shape && q.set_ranks == ref.set_ranks;
}

void FillSizes(const std::vector<Request>& qs, int size, Response* r) {
  const Request& ref = qs.front();
  switch (ref.type) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kReducescatter:
      r->sizes = {ref.NumElements()};
      break;
    case OpType::kAllgather:
      r->sizes.assign(1 + static_cast<size_t>(size), 0);
      r->sizes[0] = RowElements(ref.shape);
      for (const auto& q : qs) r->sizes[1 + q.rank] = q.shape.empty() ? 1 : q.shape[0];
      break;
    case OpType::kAlltoall:
      r->sizes.assign(1 + static_cast<size_t>(size) * size, 0);
      r->sizes[0] = RowElements(ref.shape);
      for (const auto& q : qs) {
        for (int d = 0; d < size; ++d) {
          const int64_t rows = q.splits.empty() ? (q.shape.empty() ? 0 : q.shape[0] / size)
                                                : q.splits[static_cast<size_t>(d)];
          r->sizes[1 + static_cast<size_t>(q.rank) * size + d] = rows;
        }
      }
      break;
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet:
      r->set_ranks = ref.set_ranks;
      break;
    default:
      break;
  }
}

}  // namespace

std::string RankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::vector<std::pair<std::string, std::vector<int>>> GroupRanksByValue(
    const std::vector<std::pair<int, std::string>>& rank_values) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& rv : rank_values) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == rv.second; });
    if (it == groups.end()) {
      groups.push_back({rv.second, {rv.first}});
    } else {
      it->second.push_back(rv.first);
    }
  }
  return groups;
}

Response DecideResponse(const std::string& name, std::vector<Request> qs,
                        const std::set<int32_t>& joined, int set_size) {
  std::sort(qs.begin(), qs.end(),
            [](const Request& a, const Request& b) { return a.rank < b.rank; });
  const Request& ref = qs.front();
  Response r;
  r.type = ref.type;
  r.names = {name};
  r.dtype = ref.dtype;
  r.reduce_op = ref.reduce_op;
  r.device = ref.device;
  r.root = ref.root;
  r.prescale = ref.prescale;
  r.postscale = ref.postscale;
  r.shape = ref.shape;

  const std::string op = OpTypeName(ref.type);
  const bool agree = std::all_of(qs.begin() + 1, qs.end(),
                                 [&ref](const Request& q) { return AgreesExactly(ref, q); });
  std::string detail;
  for (const Rule& rule : agree ? std::vector<Rule>() : Rules(op)) {
    if (rule.applies(ref) && Disagree(qs, rule.value, &detail)) {
      r.error_code = Code::kMismatch;
      r.error = "Mismatched " + rule.what + " for tensor '" + name + "': " + detail;
      return r;
    }
  }
  if (RefusedWhileJoined(ref.type, joined)) {
    r.error_code = Code::kInvalidArgument;
    r.error = op + " of tensor '" + name + "' cannot run while ranks " +
              RankList(std::vector<int>(joined.begin(), joined.end())) +
              " have joined (only allreduce supports join)";
    return r;
  }
  FillSizes(qs, set_size, &r);
  if (ref.type == OpType::kAllreduce || ref.type == OpType::kBroadcast ||
      ref.type == OpType::kReducescatter) {
    r.joined_ranks.assign(joined.begin(), joined.end());
  }
  return r;
}

Status CheckPeerRequest(const Request& q, int size) {
  int64_t n = 1;
  for (auto d : q.shape) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 50) / d)) {
      return Status::Internal("malformed request from rank " + std::to_string(q.rank) +
                              ": bad shape for '" + q.name + "'");
    }
    n *= d;
  }
  if (!q.splits.empty() && static_cast<int>(q.splits.size()) != size) {
    return Status::Internal("malformed request from rank " + std::to_string(q.rank) +
                            ": splits for '" + q.name + "' do not match the set size");
  }
  for (int32_t s : q.splits) {
    if (s < 0) {
      return Status::Internal("malformed request from rank " + std::to_string(q.rank) +
                              ": negative split for '" + q.name + "'");
    }
  }
  return Status::OK();
}

}  // namespace hvd
