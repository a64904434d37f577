// What the launcher (hvdrun, mpirun, srun, a Kubernetes MPIJob) tells this
// process through its environment: rank and size, the host's name, hvdrun's
// rendezvous store, the elastic worker id. Read in one place, once per
// hvd_init (as part of Config); the backends, the runtime's topology and the
// GPU host grouping all use these values, never the environment.
#pragma once

#include <string>

#include "core/common/status.h"

namespace hvd {

// hvdrun's rendezvous store: HVD_RENDEZVOUS_ADDR / _PORT / _SECRET (hex).
// Checked when a client connects (kv_client.h), where the error can say
// what the connection was for.
struct RendezvousEndpoint {
  bool set = false;  // HVD_RENDEZVOUS_ADDR is present (even empty)
  std::string addr;
  std::string port;
  std::string secret_hex;
};

// A task that srun started without PMI and without another launcher's
// variables (SLURM_STEP_ID, SLURM_PROCID, SLURM_NTASKS set; no HVD_RANK,
// OMPI_*, PMI_*, PMIX_RANK, no HVD_RENDEZVOUS_ADDR). Its Gloo world meets on
// a store that task 0 hosts on the step's first node (core/rendezvous/
// slurm_store.h); MPI cannot start in such a task.
struct SlurmStep {
  bool active = false;
  std::string job_id, step_id;
  std::string first_node;  // of SLURM_STEP_NODELIST (SLURM_NODELIST)
  std::string nodelist;    // as Slurm gave it, for messages
  Status nodelist_error;   // SLURM_STEP_NODELIST did not parse
  // Where task 0 leaves the store's port and secret for the others:
  // HVD_SLURM_RENDEZVOUS_DIR, else $HOME/.hvd/slurm (a directory the
  // job's user owns, shared by the job's nodes like the home directory).
  std::string rendezvous_dir;
};

struct LaunchEnv {
  // Rank and size from the first of these pairs that is present:
  // HVD_RANK/HVD_SIZE, HOROVOD_RANK/HOROVOD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE,
  // PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS. Only the Gloo backend
  // needs them (MPI asks MPI), so a malformed pair is kept in rank_error and
  // reported there, naming both variables and their values.
  bool has_rank = false;
  int rank = 0;
  int size = 1;
  Status rank_error;
  // HVD_SIZE as hvdrun sets it (0: unset or not a number): the MPI backend
  // refuses to run as a singleton inside a larger hvdrun job.
  int hvdrun_size = 0;
  // An MPI launcher started this process: OMPI_COMM_WORLD_SIZE, PMI_SIZE,
  // PMIX_RANK or MPI_LOCALNRANKS is set (AUTO then picks MPI).
  bool mpi_launched = false;
  // This rank's host, as HostKey() names it.
  std::string host;
  RendezvousEndpoint rendezvous;
  std::string rendezvous_prefix;  // HVD_RENDEZVOUS_PREFIX (HOROVOD_ too)
  std::string worker_id;          // HVD_WORKER_ID (HOROVOD_ too): elastic mode
  SlurmStep slurm;
  // The first launcher size variable that is set (HVD_SIZE, HOROVOD_SIZE,
  // OMPI_COMM_WORLD_SIZE, PMI_SIZE, WORLD_SIZE, SLURM_NTASKS), with its rank
  // variable, for CheckNotAlone. Empty `size_variable` when none is.
  std::string size_variable, size_value, rank_variable, rank_value, size_set_by;
  bool rank_value_set = false;

  static LaunchEnv FromEnvironment();
};

// OK unless the launcher's size variable says the job has more than one
// process while this process found a world of one: a launcher hvd cannot
// join (torchrun, a batch script without srun, an MPI other than the one hvd
// was built with) would otherwise start N jobs of one that each "reduce"
// with themselves. The message names the variable, the launcher that sets
// it, and how to launch (mpirun too when `with_mpi`).
Status CheckNotAlone(const LaunchEnv& env, int world_size, bool with_mpi);

// The one rule that names this rank's host, for local/cross ranks, GPU host
// grouping and Gloo's error messages: the launcher's name for it where there
// is one (HVD_HOSTNAME from hvdrun, PMIX_HOSTNAME, SLURMD_NODENAME: hosts
// emulated by network namespaces share one kernel hostname), else
// gethostname(), else "localhost".
std::string HostKey();

RendezvousEndpoint RendezvousFromEnvironment();

}  // namespace hvd
