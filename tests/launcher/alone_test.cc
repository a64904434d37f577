// No silent jobs of one. A process whose environment says the job has
// several processes (as torchrun, Open MPI's mpirun, a PMI launcher or Slurm
// set it) but which cannot reach them must fail hvd_init with one line that
// names what it saw and how to launch; where the environment says one
// process, or a more specific launcher says one, hvd_init must succeed.
// Each case runs this program again (--child) with the launcher variables of
// the test's own environment removed and the case's set, under a timeout.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"

extern char** environ;

namespace {

constexpr double kChildSeconds = 60;

struct Case {
  std::vector<std::string> vars;       // NAME=value added to the child's environment
  bool gloo;                           // HVD_CONTROLLER=gloo, else AUTO
  int status;                          // hvd_init's expected status
  std::vector<std::string> fragments;  // each must be in hvd_last_error()
};

bool IsLauncherVariable(const std::string& kv) {
  const std::string name = kv.substr(0, kv.find('='));
  for (const char* prefix : {"HVD_", "HOROVOD_", "OMPI_COMM_WORLD_", "PMI_", "PMIX_", "SLURM_"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  for (const char* exact : {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                            "MASTER_PORT", "MPI_LOCALNRANKS"}) {
    if (name == exact) return true;
  }
  return false;
}

// Runs `self --child` with `vars`; returns its stdout ("" on failure).
std::string RunChild(const char* self, const std::vector<std::string>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!IsLauncherVariable(*e)) env.emplace_back(*e);
  }
  env.insert(env.end(), vars.begin(), vars.end());
  std::vector<char*> envp;
  for (auto& kv : env) envp.push_back(&kv[0]);
  envp.push_back(nullptr);
  int out[2];
  if (::pipe(out) != 0) return "";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    char* argv[] = {const_cast<char*>(self), const_cast<char*>("--child"), nullptr};
    ::execve(self, argv, envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kChildSeconds);
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  if (std::chrono::steady_clock::now() >= until) {
    std::fprintf(stderr, "child did not finish within %.0f s\n", kChildSeconds);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text;
}

// The child: one hvd_init, reported as "<status>\n<message>\n".
int Child() {
  const hvd_status s = hvd_init();
  std::printf("%d\n%s\n", static_cast<int>(s), s == HVD_OK ? "" : hvd_last_error());
  std::fflush(stdout);
  if (s == HVD_OK) hvd_shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return Child();
  const bool mpi = hvd_mpi_built() == 1;
  const char* or_mpirun = mpi ? " or mpirun -np " : "";
  // The new check's message, for size N and what the variables say.
  auto alone = [&](const std::string& seen, const std::string& set_by, int n) {
    const std::string np = std::to_string(n);
    return std::vector<std::string>{
        seen + " (set by " + set_by + ") says this job has " + np + " processes",
        "found no way to reach the others and would run alone as rank 0 of 1",
        "start the job with hvdrun -np " + np + " PROGRAM" +
            (mpi ? or_mpirun + np + " PROGRAM" : ""),
    };
  };
  const std::string torchrun = "torchrun or a Kubernetes PyTorchJob, which hvd does not support";
  const std::string gloo_needs =
      " ranks need hvdrun's rendezvous server, but HVD_RENDEZVOUS_ADDR is not set";
  std::vector<Case> cases = {
      {{"RANK=1", "WORLD_SIZE=2"},
       false,
       HVD_ERR_INVALID_ARGUMENT,
       alone("WORLD_SIZE=2 RANK=1", torchrun, 2)},
      {{"RANK=1", "WORLD_SIZE=2"},
       true,
       HVD_ERR_INVALID_ARGUMENT,
       alone("WORLD_SIZE=2 RANK=1", torchrun, 2)},
      {{"WORLD_SIZE=8"},
       false,
       HVD_ERR_INVALID_ARGUMENT,  // no RANK: named as seen
       alone("WORLD_SIZE=8", torchrun, 8)},
      // Gloo reads these pairs itself and already refuses them without hvdrun.
      {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2"},
       true,
       HVD_ERR_INVALID_ARGUMENT,
       {"Gloo: 2" + gloo_needs}},
      {{"PMI_RANK=2", "PMI_SIZE=3"}, true, HVD_ERR_INVALID_ARGUMENT, {"Gloo: 3" + gloo_needs}},
      {{"SLURM_PROCID=0", "SLURM_NTASKS=4"},
       true,
       HVD_ERR_INVALID_ARGUMENT,
       {"Gloo: 4" + gloo_needs}},
      {{"HVD_RANK=1", "HVD_SIZE=2"}, true, HVD_ERR_INVALID_ARGUMENT, {"Gloo: 2" + gloo_needs}},
      // One process, said by the most specific launcher: no error.
      {{"RANK=0", "WORLD_SIZE=1"}, false, HVD_OK, {}},
      {{"HVD_RANK=0", "HVD_SIZE=1", "SLURM_PROCID=0", "SLURM_NTASKS=4"}, true, HVD_OK, {}},
  };
  if (mpi) {
    // AUTO picks MPI here; an MPI singleton must not pass for the job.
    cases.push_back(
        {{"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2"},
         false,
         HVD_ERR_INVALID_ARGUMENT,
         alone("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1", "Open MPI's mpirun", 2)});
    cases.push_back({{"PMI_RANK=2", "PMI_SIZE=3"},
                     false,
                     HVD_ERR_INVALID_ARGUMENT,
                     alone("PMI_SIZE=3 PMI_RANK=2",
                           "a PMI launcher such as MPICH's mpiexec or srun --mpi=pmi2", 3)});
    cases.push_back(
        {{"SLURM_PROCID=0", "SLURM_NTASKS=4"},
         false,
         HVD_ERR_INVALID_ARGUMENT,
         alone("SLURM_NTASKS=4 SLURM_PROCID=0",
               "Slurm; a batch script that runs the program itself starts one process", 4)});
    cases.push_back({{"HVD_RANK=1", "HVD_SIZE=2"},
                     false,
                     HVD_ERR_INVALID_ARGUMENT,
                     {"MPI: this process is an MPI job of 1 rank, but its launcher started "
                      "HVD_SIZE=2 ranks"}});
    cases.push_back(
        {{"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", "WORLD_SIZE=4"}, false, HVD_OK, {}});
  }
  int failures = 0;
  for (const Case& c : cases) {
    std::vector<std::string> vars = c.vars;
    if (c.gloo) {
      vars.push_back("HVD_CONTROLLER=gloo");
      vars.push_back("HVD_CPU_OPERATIONS=gloo");
    }
    std::string label;
    for (const auto& v : vars) label += (label.empty() ? "" : " ") + v;
    const std::string out = RunChild(argv[0], vars);
    const size_t nl = out.find('\n');
    const int status = nl == std::string::npos ? 999 : std::atoi(out.substr(0, nl).c_str());
    const std::string message = nl == std::string::npos ? "" : out.substr(nl + 1);
    bool ok = status == c.status;
    for (const auto& f : c.fragments) ok &= message.find(f) != std::string::npos;
    if (c.status != HVD_OK) ok &= std::count(message.begin(), message.end(), '\n') == 1;
    std::printf("%s [%s]: status %d: %s", ok ? "ok  " : "FAIL", label.c_str(), status,
                message.empty() ? "\n" : message.c_str());
    if (!ok) {
      ++failures;
      std::printf("  expected status %d and:\n", c.status);
      for (const auto& f : c.fragments) std::printf("    '%s'\n", f.c_str());
    }
  }
  std::printf("%d of %zu cases failed\n", failures, cases.size());
  return failures == 0 ? 0 : 1;
}
