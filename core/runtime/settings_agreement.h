// The settings every rank of a job must share, compared once at init over
// the controller's Comm before anything else in init is collective. Ranks
// that fuse, chunk, cache or route their collectives differently wait for
// each other forever: HVD_FUSION_THRESHOLD or HVD_CACHE_CAPACITY set on one
// rank only hung the first step, HVD_SHARED_MEMORY, HVD_CONTROL_CHANNEL or
// HVD_P2P on one rank only hung hvd_init itself. With the check every rank's
// hvd_init fails at once with HVD_ERR_INVALID_ARGUMENT naming the setting,
// each value and the ranks that hold it.
#pragma once

#include <string>
#include <vector>

#include "core/backends/comm.h"
#include "core/common/config.h"
#include "core/common/status.h"

namespace hvd {

struct SharedSetting {
  std::string name;   // what the user sets: an HVD_* variable, or the library's version
  std::string value;  // as this rank will run with it
};

// What this rank runs with, in a fixed order (the library's version first:
// another build may compare other settings). `cpu_operations`: the name of
// the data backend chosen for it ("mpi", "gloo").
std::vector<SharedSetting> SettingsRanksShare(const Config& config,
                                              const std::string& cpu_operations);

// One line "name=value" per setting: what a rank sends.
std::string EncodeSettings(const std::vector<SharedSetting>& settings);

// Every rank's EncodeSettings in rank order, compared: OK where they all
// agree, else Invalid naming the first setting (in rank 0's order) whose
// values differ, each value with its ranks, and `my_rank`.
Status CompareSettings(const std::vector<std::string>& per_rank, int my_rank);

// Collective over `comm`: the settings exchanged and compared. Every rank
// returns the same verdict (the message differs only in "this is rank N").
Status CheckRanksShareSettings(Comm& comm, const Config& config, const std::string& cpu_operations);

}  // namespace hvd
