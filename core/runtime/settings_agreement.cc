#include "core/runtime/settings_agreement.h"

#include <cstddef>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/coordination/response_rules.h"

namespace hvd {
namespace {

const char* OnOff(bool on) {
  return on ? "1" : "0";
}

// An enum's value by name; "auto" for the rest.
template <typename T>
const char* NameOf(T value, std::initializer_list<std::pair<T, const char*>> names) {
  for (const auto& n : names) {
    if (n.first == value) return n.second;
  }
  return "auto";
}

std::string CacheValue(const Config& c) {
  const int max = c.cache_capacity_max();
  if (max == c.cache_capacity) return std::to_string(c.cache_capacity);
  return std::to_string(c.cache_capacity) + " (growing to " + std::to_string(max) + ")";
}

// "name=value" lines -> (name, value) in order.
std::vector<std::pair<std::string, std::string>> Decode(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out.emplace_back(line.substr(0, eq), line.substr(eq + 1));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::vector<SharedSetting> SettingsRanksShare(const Config& c, const std::string& cpu_operations) {
  // Each of these decides which collectives a rank calls, with what, or
  // over what; a setting that only times or bounds a rank's own work
  // (cycle time, deadlines, logging) may differ.
  return {
      {"libhvd version", HVD_VERSION_STRING},
      {"HVD_CPU_OPERATIONS", cpu_operations},
      {"HVD_FUSION_THRESHOLD", std::to_string(c.fusion_threshold_bytes)},
      {"HVD_ALLREDUCE_CHUNK_BYTES", std::to_string(c.allreduce_chunk_bytes)},
      {"HVD_CACHE_CAPACITY", CacheValue(c)},
      {"HVD_SHARED_MEMORY", OnOff(c.shared_memory)},
      {"HVD_CONTROL_CHANNEL", NameOf(c.control_channel, {{ControlChannelChoice::kTcp, "tcp"},
                                                         {ControlChannelChoice::kBackend, "mpi"}})},
      {"HVD_P2P", OnOff(c.p2p)},
      {"HVD_HIERARCHICAL_ALLREDUCE", OnOff(c.hierarchical_allreduce)},
      {"HVD_HIERARCHICAL_ALLREDUCE_MIN_BYTES", std::to_string(c.hierarchical_allreduce_min_bytes)},
      {"HVD_HIERARCHICAL_ALLGATHER", OnOff(c.hierarchical_allgather)},
      {"HVD_HIERARCHICAL_CROSS",
       NameOf(c.hierarchical_cross,
              {{CrossTransport::kTcp, "tcp"}, {CrossTransport::kBackend, "backend"}})},
      {"HVD_GPU_OPERATIONS", NameOf(c.gpu_operations, {{GpuOperations::kNccl, "nccl"},
                                                       {GpuOperations::kStaging, "staging"}})},
  };
}

std::string EncodeSettings(const std::vector<SharedSetting>& settings) {
  std::string out;
  for (const auto& s : settings) out += s.name + "=" + s.value + "\n";
  return out;
}

Status CompareSettings(const std::vector<std::string>& per_rank, int my_rank) {
  if (per_rank.empty()) return Status::OK();
  std::vector<std::map<std::string, std::string>> values;
  for (const auto& text : per_rank) {
    const auto pairs = Decode(text);
    values.emplace_back(pairs.begin(), pairs.end());
  }
  for (const auto& setting : Decode(per_rank[0])) {
    std::vector<std::pair<int, std::string>> rank_values;
    for (size_t r = 0; r < values.size(); ++r) {
      const auto it = values[r].find(setting.first);
      rank_values.emplace_back(static_cast<int>(r),
                               it == values[r].end() ? "(not compared by its build)" : it->second);
    }
    const auto groups = GroupRanksByValue(rank_values);
    if (groups.size() == 1) continue;
    std::string detail;
    for (size_t g = 0; g < groups.size(); ++g) {
      detail += (g ? ", " : "") + groups[g].first + " on rank" +
                (groups[g].second.size() > 1 ? "s " : " ") + RankList(groups[g].second);
    }
    return Status::Invalid("ranks disagree on " + setting.first + ": " + detail +
                           " (this is rank " + std::to_string(my_rank) +
                           "); every rank must run with the same value, or their collectives "
                           "would wait for each other forever");
  }
  return Status::OK();
}

Status CheckRanksShareSettings(Comm& comm, const Config& config,
                               const std::string& cpu_operations) {
  std::vector<std::string> all;
  HVD_RETURN_IF_ERROR(
      AllgatherBytes(comm, EncodeSettings(SettingsRanksShare(config, cpu_operations)), &all));
  return CompareSettings(all, comm.rank());
}

}  // namespace hvd
