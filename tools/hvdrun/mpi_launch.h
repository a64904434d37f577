// --mpi: the job is Open MPI's to run; hvdrun only builds mpirun's command.
#pragma once

#include <string>
#include <vector>

#include "tools/hvdrun/hosts.h"
#include "tools/hvdrun/options.h"

namespace hvd {
namespace run {

// mpirun --allow-run-as-root --oversubscribe -np N -H host:slots,...
//        [--mca plm_rsh_agent CMD] [--mca plm_rsh_args "-p P"]
//        [--mca btl_tcp_if_include IF --mca oob_tcp_if_include IF]
//        [--mca btl_tcp_flags send]   (ranks on several hosts, and the
//                                      environment sets neither
//                                      OMPI_MCA_btl_tcp_flags nor _links)
//        --tag-output [--output-filename DIR] [-x VAR]... [-x VAR=VALUE]...
//        program args
// Only hosts that receive a rank are listed, with the slots they use. The
// -x VAR=VALUE are the tuning flags' variables (Options::rank_env).
std::vector<std::string> MpirunArgv(const Options& options, const std::vector<RankPlacement>& ranks,
                                    const std::vector<std::string>& environment);

}  // namespace run
}  // namespace hvd
