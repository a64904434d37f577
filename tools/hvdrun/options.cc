#include "tools/hvdrun/options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "tools/hvdrun/hosts.h"
#include "tools/hvdrun/tuning_flags.h"

namespace hvd {
namespace run {

namespace {

Status ParseInt(const std::string& flag, const std::string& text, int min, int max, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    return Status::Invalid(flag + " expects an integer in [" + std::to_string(min) + ", " +
                           std::to_string(max) + "], got '" + text + "'");
  }
  *out = static_cast<int>(v);
  return Status::OK();
}

// Elastic mode: fills the defaults of --min-np/--max-np from -np and checks
// that the hosts come from exactly one place.
Status CheckElasticOptions(Options* o) {
  if (o->mode == LaunchMode::kMpi) return Status::Invalid("elastic mode needs --gloo, not --mpi");
  const bool fixed_hosts = !o->hosts.empty() || !o->hostfile.empty();
  if (o->host_discovery_script.empty() && !fixed_hosts && o->np == 0) {
    return Status::Invalid(
        "elastic mode needs --host-discovery-script, or -H/--hostfile with --elastic");
  }
  if (!o->host_discovery_script.empty() && fixed_hosts) {
    return Status::Invalid("--host-discovery-script and -H/--hostfile are mutually exclusive");
  }
  if (o->min_np == 0) o->min_np = o->np > 0 ? o->np : 1;
  if (o->max_np == 0) o->max_np = o->np > 0 ? std::max(o->np, o->min_np) : (1 << 20);
  if (o->max_np < o->min_np) {
    return Status::Invalid("--max-np " + std::to_string(o->max_np) + " is below --min-np " +
                           std::to_string(o->min_np));
  }
  return Status::OK();
}

// Inside a Slurm allocation the hosts default to the allocation's, and -np
// to all of their slots.
Status UseAllocationHosts(const std::string& allocation_hosts, bool* np_given, Options* o) {
  if (allocation_hosts.empty() || !o->hosts.empty() || !o->hostfile.empty() ||
      !o->host_discovery_script.empty()) {
    return Status::OK();
  }
  o->hosts = allocation_hosts;
  o->hosts_from_slurm = true;
  if (*np_given || o->elastic) return Status::OK();
  std::vector<HostSlots> hosts;
  HVD_RETURN_IF_ERROR(ParseHostList(allocation_hosts, &hosts));
  o->np = 0;
  for (const auto& h : hosts) o->np += h.slots;
  *np_given = true;
  return Status::OK();
}

}  // namespace

Status ParseOptions(const std::vector<std::string>& args, Options* out,
                    const std::string& allocation_hosts) {
  Options o;
  bool np_given = false;
  size_t i = 0;
  // Flags come first; the first word that is not a flag (or everything
  // after "--") is the program, so the program's own flags pass untouched.
  while (i < args.size()) {
    std::string arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-') break;
    std::string value;
    bool has_inline = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    auto take = [&](std::string* v) -> Status {
      if (has_inline) {
        *v = value;
        return Status::OK();
      }
      if (i + 1 >= args.size()) return Status::Invalid(arg + " needs a value");
      *v = args[++i];
      return Status::OK();
    };
    std::string v;
    if (arg == "-np" || arg == "-n" || arg == "--num-proc") {
      HVD_RETURN_IF_ERROR(take(&v));
      HVD_RETURN_IF_ERROR(ParseInt("-np", v, 1, 1 << 20, &o.np));
      np_given = true;
    } else if (arg == "-H" || arg == "--hosts") {
      HVD_RETURN_IF_ERROR(take(&o.hosts));
    } else if (arg == "--hostfile" || arg == "-hostfile") {
      HVD_RETURN_IF_ERROR(take(&o.hostfile));
    } else if (arg == "--gloo") {
      o.mode = LaunchMode::kGloo;
    } else if (arg == "--mpi") {
      o.mode = LaunchMode::kMpi;
    } else if (arg == "--ssh-command") {
      HVD_RETURN_IF_ERROR(take(&o.ssh_command));
      if (o.ssh_command.find_first_not_of(" \t") == std::string::npos) {
        return Status::Invalid("--ssh-command must not be empty");
      }
    } else if (arg == "--ssh-port" || arg == "-p") {
      HVD_RETURN_IF_ERROR(take(&v));
      HVD_RETURN_IF_ERROR(ParseInt("--ssh-port", v, 1, 65535, &o.ssh_port));
    } else if (arg == "--network-interface") {
      HVD_RETURN_IF_ERROR(take(&o.network_interface));
    } else if (arg == "--start-timeout") {
      HVD_RETURN_IF_ERROR(take(&v));
      char* end = nullptr;
      double s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(s) || s <= 0) {
        return Status::Invalid("--start-timeout expects a positive number of seconds, got '" + v +
                               "'");
      }
      o.start_timeout_seconds = s;
    } else if (arg == "--grace-period") {
      HVD_RETURN_IF_ERROR(take(&v));
      char* end = nullptr;
      double s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(s) || s < 0) {
        return Status::Invalid("--grace-period expects a number of seconds >= 0, got '" + v + "'");
      }
      o.grace_seconds = s;
    } else if (arg == "--elastic") {
      o.elastic = true;
    } else if (arg == "--min-np" || arg == "--min-num-proc") {
      HVD_RETURN_IF_ERROR(take(&v));
      HVD_RETURN_IF_ERROR(ParseInt("--min-np", v, 1, 1 << 20, &o.min_np));
      o.elastic = true;
    } else if (arg == "--max-np" || arg == "--max-num-proc") {
      HVD_RETURN_IF_ERROR(take(&v));
      HVD_RETURN_IF_ERROR(ParseInt("--max-np", v, 1, 1 << 20, &o.max_np));
      o.elastic = true;
    } else if (arg == "--host-discovery-script") {
      HVD_RETURN_IF_ERROR(take(&o.host_discovery_script));
      o.elastic = true;
    } else if (arg == "--elastic-timeout" || arg == "--blacklist-cooldown") {
      HVD_RETURN_IF_ERROR(take(&v));
      char* end = nullptr;
      double s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(s) || s < 0) {
        return Status::Invalid(arg + " expects a number of seconds >= 0, got '" + v + "'");
      }
      (arg == "--elastic-timeout" ? o.elastic_timeout_seconds : o.blacklist_cooldown_seconds) = s;
    } else if (arg == "--verbose" || arg == "-v") {
      o.verbose = true;
    } else if (arg == "--check-build" || arg == "-cb") {
      o.check_build = true;
    } else if (arg == "--explain") {
      o.explain = true;
    } else if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--output-filename") {
      HVD_RETURN_IF_ERROR(take(&o.output_dir));
      if (o.output_dir.empty()) return Status::Invalid("--output-filename needs a directory");
    } else {
      bool tuning = false;
      HVD_RETURN_IF_ERROR(ParseTuningFlag(arg, take, &tuning, &o.rank_env));
      if (!tuning) return Status::Invalid("unknown option '" + arg + "' (see hvdrun --help)");
    }
    ++i;
  }
  o.command.assign(args.begin() + static_cast<long>(i), args.end());
  if (!o.help && !o.check_build) {
    HVD_RETURN_IF_ERROR(UseAllocationHosts(allocation_hosts, &np_given, &o));
    if (!np_given && !o.elastic) return Status::Invalid("-np N is required (see hvdrun --help)");
    if (o.command.empty() && !o.explain) {
      return Status::Invalid("no program to run (see hvdrun --help)");
    }
    if (!o.hosts.empty() && !o.hostfile.empty()) {
      return Status::Invalid("-H and --hostfile are mutually exclusive");
    }
    if (o.elastic) HVD_RETURN_IF_ERROR(CheckElasticOptions(&o));
  }
  *out = std::move(o);
  return Status::OK();
}

std::string HelpText() {
  return std::string(R"(usage: hvdrun -np N [options] [--] program [args...]

Starts N ranks of an hvd job and hosts the rendezvous store they use.

Options:
  -np, -n, --num-proc N     Number of ranks to start (required, >= 1).
  -H, --hosts LIST          Comma-separated host:slots list, e.g. a:4,b:4. Ranks
                            fill hosts in order; "host" alone means 1 slot.
                            Default: localhost:N.
  --hostfile FILE           One host per line: "host slots=N", "host:N" or "host";
                            '#' starts a comment. Exclusive with -H. Also
                            spelled -hostfile.
  --gloo                    Launch the ranks directly with the Gloo backend
                            (default): hvdrun sets HVD_CONTROLLER=gloo and
                            HVD_CPU_OPERATIONS=gloo unless they are set already.
  --mpi                     Hand the job to mpirun (Open MPI) instead; hvdrun
                            execs: mpirun --allow-run-as-root --oversubscribe
                            -np N -H host:slots,... --tag-output program args;
                            with ranks on several hosts also --mca
                            btl_tcp_flags send, unless OMPI_MCA_btl_tcp_flags
                            or OMPI_MCA_btl_tcp_links is set (docs/scaling.md).
  --ssh-command CMD         Remote shell used to start ranks on other hosts.
                            Default: "ssh -o BatchMode=yes". If its first word is
                            not ssh, the command is run as CMD HOST sh -c ...,
                            so e.g. 'ip netns exec' treats hosts as network
                            namespaces. With --mpi it becomes plm_rsh_agent.
  -p, --ssh-port P          Port for ssh (added as "-p P" when CMD is ssh).
  --network-interface IF    Serve the rendezvous store on IF's IPv4 address and
                            advertise that address to the ranks (also sets
                            HVD_GLOO_IFACE=IF unless set). Default: bind
                            0.0.0.0 and advertise the address on the route to
                            the first remote host (127.0.0.1 for local jobs).
  --start-timeout S         Seconds each remote host gets to answer the
                            reachability check before the job starts; also
                            exported to ranks as HVD_START_TIMEOUT. Default 30.
  --grace-period S          When a rank fails (or on SIGINT/SIGTERM) the other
                            ranks get SIGTERM, then SIGKILL S seconds later;
                            time to report the error or save a checkpoint.
                            Default 3.
  --output-filename DIR     Also write each rank's output, as the rank wrote it,
                            to DIR/rank.N/stdout and DIR/rank.N/stderr (N padded
                            with zeros to the width of the last rank; elastic:
                            DIR/worker.ID/). With --mpi it is passed to mpirun.
Elastic training (docs/elastic.md): workers may die or join while the job runs.
  --min-np N                Fewest workers the job runs with (default: -np, else 1).
                            Also spelled --min-num-proc.
  --max-np N                Most workers started (default: -np, else no limit).
                            Also spelled --max-num-proc.
  --host-discovery-script S Shell command printing the current hosts, one
                            "host:slots" per line; run every second.
  --elastic                 Elastic mode with the fixed hosts of -H/--hostfile
                            (or localhost:-np).
  --elastic-timeout S       How long to wait for hosts when fewer than --min-np
                            workers are left before stopping the job. Default 600.
  --blacklist-cooldown S    A host whose workers failed twice gets no workers for
                            S seconds. Default 30.
  -v, --verbose             Print the hosts, the rendezvous address and every
                            command hvdrun starts.
  -cb, --check-build        Print the backends this build of hvd has and exit.
  --explain                 Print which transport would run which step of the
                            job's collectives (the plan each rank logs at
                            HVD_LOG_LEVEL=info) and exit; no program needed.
  -h, --help                Print this help and exit.
  --                        End of hvdrun's options; the program follows.
Tuning (horovodrun's flags): each sets an HVD_* variable for every rank,
overriding hvdrun's environment (docs/tuning.md).
)") + TuningFlagsHelp() +
         R"(
Each line a rank prints is prefixed "[RANK]<stdout>:" or "[RANK]<stderr>:".
If a rank fails, hvdrun stops the others and exits with that rank's code
(128+signal if it was killed). SIGINT/SIGTERM are forwarded to every rank.
See docs/running.md for the environment each rank receives.
)";
}

}  // namespace run
}  // namespace hvd
