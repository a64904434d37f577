#include "tools/hvdrun/job_env.h"

#include <cstdio>
#include <set>

extern char** environ;

namespace hvd {
namespace run {

namespace {

std::string NameOf(const std::string& kv) {
  return kv.substr(0, kv.find('='));
}

bool IsSet(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& kv : env) {
    if (NameOf(kv) == name) return true;
  }
  return false;
}

// Variables set per rank by hvdrun; never forwarded from hvdrun's own
// environment (hvdrun may itself run inside a job).
const std::set<std::string>& RankSpecific() {
  static const std::set<std::string> names = {"HVD_RANK",
                                              "HVD_SIZE",
                                              "HVD_LOCAL_RANK",
                                              "HVD_LOCAL_SIZE",
                                              "HVD_CROSS_RANK",
                                              "HVD_CROSS_SIZE",
                                              "HVD_HOSTNAME",
                                              "HVD_RENDEZVOUS_ADDR",
                                              "HVD_RENDEZVOUS_PORT",
                                              "HVD_RENDEZVOUS_SECRET"};
  return names;
}

}  // namespace

EnvList RankVariables(const RankPlacement& rank, const JobFacts& job,
                      const std::vector<std::string>& inherited) {
  EnvList vars = {
      {"HVD_RANK", std::to_string(rank.rank)},
      {"HVD_SIZE", std::to_string(job.size)},
      {"HVD_LOCAL_RANK", std::to_string(rank.local_rank)},
      {"HVD_LOCAL_SIZE", std::to_string(rank.local_size)},
      {"HVD_CROSS_RANK", std::to_string(rank.cross_rank)},
      {"HVD_CROSS_SIZE", std::to_string(rank.cross_size)},
      {"HVD_HOSTNAME", rank.host},
      {"HVD_RENDEZVOUS_ADDR", job.rendezvous_addr},
      {"HVD_RENDEZVOUS_PORT", std::to_string(job.rendezvous_port)},
      {"HVD_RENDEZVOUS_SECRET", job.secret_hex},
  };
  auto add_default = [&](const std::string& name, const std::string& value) {
    if (!IsSet(inherited, name)) vars.emplace_back(name, value);
  };
  add_default("HVD_CONTROLLER", "gloo");
  add_default("HVD_CPU_OPERATIONS", "gloo");
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", job.start_timeout_seconds);
  add_default("HVD_START_TIMEOUT", buf);
  if (!job.network_interface.empty()) add_default("HVD_GLOO_IFACE", job.network_interface);
  vars.insert(vars.end(), job.flag_env.begin(), job.flag_env.end());
  return vars;
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& inherited,
                                          const EnvList& vars) {
  std::set<std::string> replaced;
  for (const auto& kv : vars) replaced.insert(kv.first);
  std::vector<std::string> out;
  for (const auto& kv : inherited) {
    if (!replaced.count(NameOf(kv))) out.push_back(kv);
  }
  for (const auto& kv : vars) out.push_back(kv.first + "=" + kv.second);
  return out;
}

EnvList ForwardedVariables(const std::vector<std::string>& inherited) {
  static const std::set<std::string> exact = {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME",
                                              "VIRTUAL_ENV"};
  EnvList out;
  for (const auto& kv : inherited) {
    std::string name = NameOf(kv);
    bool hvd =
        name.rfind("HVD_", 0) == 0 || name.rfind("HOROVOD_", 0) == 0 || name.rfind("NCCL_", 0) == 0;
    if ((hvd && !RankSpecific().count(name)) || exact.count(name)) {
      out.emplace_back(name, kv.substr(name.size() + 1));
    }
  }
  return out;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace run
}  // namespace hvd
