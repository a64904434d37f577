// Slurm's compressed host lists and task counts, as srun and sbatch put them
// in SLURM_STEP_NODELIST / SLURM_JOB_NODELIST ("node[01-03,7],gpu5") and
// SLURM_TASKS_PER_NODE ("2(x3),1"). Used by launch_env.cc (the first node of
// a step hosts the rendezvous store) and by hvdrun inside an allocation.
#pragma once

#include <string>
#include <vector>

#include "core/common/status.h"

namespace hvd {

// "a[1-3,07],b" -> a1 a2 a3 a07 b. Zero padding of a range is kept
// ("n[08-10]" -> n08 n09 n10). One bracket group per name; a list of more
// than 1<<20 names is refused.
Status ExpandSlurmHostlist(const std::string& text, std::vector<std::string>* out);

// "2(x3),1" -> 2 2 2 1.
Status ExpandSlurmTaskCounts(const std::string& text, std::vector<int>* out);

}  // namespace hvd
