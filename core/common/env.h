// The two functions that read the process environment. Only Config
// (config.cc) and the launcher's variables (launch_env.cc) call them; every
// other part of hvd gets its settings from a Config.
#pragma once

namespace hvd {

// HVD_<suffix>, else HOROVOD_<suffix>; nullptr if neither is set.
const char* GetEnv(const char* suffix);

// The variable `name` exactly (launcher variables: OMPI_*, SLURM_*, ...).
const char* GetRawEnv(const char* name);

}  // namespace hvd
