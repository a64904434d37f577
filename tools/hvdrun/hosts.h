// Host lists (-H, --hostfile) and the placement of ranks on them.
#pragma once

#include <string>
#include <vector>

#include "core/common/status.h"

namespace hvd {
namespace run {

struct HostSlots {
  std::string name;
  int slots = 1;
};

// "a:2,b,c:4"
Status ParseHostList(const std::string& text, std::vector<HostSlots>* out);
// Lines "host slots=N", "host:N" or "host"; '#' comments; blank lines.
Status ParseHostfile(const std::string& path, std::vector<HostSlots>* out);

struct RankPlacement {
  int rank = 0;
  std::string host;
  int host_index = 0;  // position of the host in the list
  int local_rank = 0;
  int local_size = 0;
  // Index of this host among the hosts that have a rank with this
  // local_rank, and the number of such hosts (Horovod's definition).
  int cross_rank = 0;
  int cross_size = 0;
};

// Fills hosts in order, each up to its slots. Fails when np exceeds the
// total number of slots. Hosts that get no rank are left out of the result.
Status PlaceRanks(int np, const std::vector<HostSlots>& hosts, std::vector<RankPlacement>* out);

}  // namespace run
}  // namespace hvd
