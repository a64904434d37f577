// Fail-fast checks of the C API, run by check_fault.sh under hvdrun or
// mpirun:
//
//   fault_test kill [V]  rank V (default 1) SIGKILLs itself in the middle of
//                        a loop of allreduces; every other rank reports how
//                        its pending and later operations end (status, time,
//                        message). Any number of ranks.
//   fault_test shutdown  rank 1 calls hvd_shutdown while rank 0 waits in an
//                        allreduce; rank 0 must get HVD_ERR_SHUT_DOWN naming
//                        rank 1, and so must its later operations. 2 ranks.
//   fault_test stop V W  rank V stops itself (SIGSTOP) WHEN=mid: just after
//                        submitting a large allreduce, =before: instead of
//                        submitting it; every other rank reports how its
//                        allreduce ends (HVD_OP_TIMEOUT_SECONDS bounds it)
//                        and exits 3, which ends the job.
//   fault_test end V A   as "stop V before", but then every survivor does A:
//                        exit0 / exit1 (exit() at once with that code),
//                        shutdown (hvd_shutdown, then keeps computing),
//                        compute (keeps computing, ignoring SIGTERM), or
//                        mixed (the lowest survivor exits 1, the others
//                        keep computing, ignoring SIGTERM). The job must
//                        end anyway (core/runtime/job_end.h).
//   fault_test order     ranks submit different tensors first (rank 1
//                        'ord.b', the others 'ord.a') and wait: the
//                        deadline fails them; exits 3. For hvd_flight.
//   fault_test idle V    rank V SIGKILLs itself while the others compute
//                        (none of their operations in flight, as in a
//                        backward pass); 1 s later each survivor's next
//                        submissions must fail at once, at submit, with
//                        HVD_ERR_PEER_LOST naming rank V (not be queued to
//                        fail at the wait). Any number of ranks.
//   fault_test agree     reports how hvd_init ends ("FT init status=..."),
//                        and if it succeeds how one allreduce does: the
//                        launcher gives one rank a setting the others lack
//                        (core/runtime/settings_agreement.h).
//   fault_test late S    the same, but the launcher's rank 1 sleeps S
//                        seconds before hvd_init: the others wait in it.
//
// Reports are single lines "FT <key>=<value> ..." written with write(2) so
// they leave the process at once: hvdrun stops the job a few seconds after
// the first failure, and stdio buffers would die with the process.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace {

constexpr int kKillAtIteration = 20;
constexpr int64_t kCount = 1 << 14;

void Say(const std::string& line) {
  const std::string l = line + "\n";
  ssize_t off = 0;
  while (off < static_cast<ssize_t>(l.size())) {
    ssize_t n = ::write(1, l.data() + off, l.size() - off);
    if (n <= 0) return;
    off += n;
  }
}

// Wall clock in ms: rank 1 prints it just before dying, rank 0 when it sees
// the error, and check_fault.sh subtracts (both ranks run on one host).
int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string Str(hvd_status s) {
  std::string full = hvd_status_string(s);
  return full.substr(0, full.find(':'));
}

// Keeps a float tensor and its DLPack view together.
struct Buf {
  explicit Buf(int64_t n, float v) : data(static_cast<size_t>(n), v), shape{n} {
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = 1;
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape;
    dl.strides = nullptr;
    dl.byte_offset = 0;
  }
  std::vector<float> data;
  int64_t shape[1];
  DLTensor dl{};
};

void Report(const char* which, hvd_status s, int64_t t0) {
  Say("FT rank=" + std::to_string(hvd_rank()) + " op=" + which + " status=" + Str(s) +
      " at_ms=" + std::to_string(NowMs()) + " elapsed_ms=" + std::to_string(NowMs() - t0) +
      " message=" + hvd_last_error());
}

// hvdrun sends SIGTERM to the survivors as soon as one rank fails, and
// SIGKILL after its grace period. Surviving that SIGTERM is what lets this
// program report what hvd told it; a training script would rather
// checkpoint here.
void IgnoreTerm() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = [](int) {
    static const char kMsg[] = "FT got SIGTERM from the launcher\n";
    ssize_t r = ::write(1, kMsg, sizeof(kMsg) - 1);
    (void)r;
  };
  sigaction(SIGTERM, &sa, nullptr);
}

int Kill(int victim) {
  IgnoreTerm();
  const int rank = hvd_rank();
  Buf a(kCount, 1.0f), b(kCount, 2.0f);
  int64_t last_ok = NowMs();
  for (int it = 0; it < 100000; ++it) {
    if (rank == victim && it == kKillAtIteration) {
      // Give the others time to submit this iteration's ops, so they are
      // really in flight when this rank dies (otherwise they may learn of
      // the death first and fail at submit instead).
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      Say("FT rank=" + std::to_string(rank) + " killing itself at_ms=" + std::to_string(NowMs()));
      raise(SIGKILL);
    }
    // Two operations in flight: one is waited on, the other is "pending"
    // when the peer dies; both must end with the error.
    hvd_handle ha = 0, hb = 0;
    hvd_status sa = hvd_allreduce_async("ft.a", &a.dl, &a.dl, HVD_OP_SUM, nullptr, &ha);
    hvd_status sb =
        sa == HVD_OK ? hvd_allreduce_async("ft.b", &b.dl, &b.dl, HVD_OP_SUM, nullptr, &hb) : sa;
    if (sa != HVD_OK || sb != HVD_OK) {
      Report("submit", sa != HVD_OK ? sa : sb, last_ok);
      return 1;  // a submit error before any wait failed: unexpected here
    }
    hvd_status wa = hvd_wait(ha, 60000);
    hvd_status wb = hvd_wait(hb, 60000);
    hvd_release(ha);
    hvd_release(hb);
    if (wa == HVD_OK && wb == HVD_OK) {
      last_ok = NowMs();
      for (auto* buf : {&a, &b}) {  // keep values small and exact
        std::fill(buf->data.begin(), buf->data.end(), buf == &a ? 1.0f : 2.0f);
      }
      continue;
    }
    Report("waited", wa, last_ok);
    Report("pending", wb, last_ok);
    // A later operation must fail too, and fast: at submit or at wait.
    const int64_t t1 = NowMs();
    hvd_handle hc = 0;
    hvd_status sc = hvd_allreduce_async("ft.c", &a.dl, &a.dl, HVD_OP_SUM, nullptr, &hc);
    if (sc == HVD_OK) {
      sc = hvd_wait(hc, 10000);
      hvd_release(hc);
    }
    Report("later", sc, t1);
    const bool lost = wa == HVD_ERR_PEER_LOST && wb == HVD_ERR_PEER_LOST && sc == HVD_ERR_PEER_LOST;
    Say("FT rank=" + std::to_string(rank) + " verdict=" + (lost ? "peer-lost" : "unexpected"));
    hvd_shutdown();
    return lost ? 0 : 1;
  }
  Say("FT rank=" + std::to_string(rank) + " loop ended without an error");
  return 1;
}

int Shutdown() {
  const int rank = hvd_rank();
  Buf a(16, 1.0f);
  hvd_handle h = 0;
  // One good collective first, so both ranks are past init and in step.
  if (hvd_allreduce_async("sd.warm", &a.dl, &a.dl, HVD_OP_SUM, nullptr, &h) != HVD_OK ||
      hvd_wait(h, 60000) != HVD_OK) {
    Say(std::string("FT warm-up failed: ") + hvd_last_error());
    return 1;
  }
  hvd_release(h);
  if (rank != 0) {
    usleep(300 * 1000);  // let rank 0 block in its allreduce
    hvd_status s = hvd_shutdown();
    Say("FT rank=" + std::to_string(rank) + " shutdown status=" + Str(s));
    return s == HVD_OK ? 0 : 1;
  }
  const int64_t t0 = NowMs();
  hvd_status w = hvd_allreduce_async("sd.blocked", &a.dl, &a.dl, HVD_OP_SUM, nullptr, &h);
  if (w == HVD_OK) {
    w = hvd_wait(h, 30000);
    hvd_release(h);
  }
  Report("waited", w, t0);
  const std::string msg = hvd_last_error();
  hvd_status later = hvd_allreduce_async("sd.later", &a.dl, &a.dl, HVD_OP_SUM, nullptr, &h);
  if (later == HVD_OK) {
    later = hvd_wait(h, 10000);
    hvd_release(h);
  }
  Report("later", later, t0);
  const std::string later_msg = hvd_last_error();
  hvd_shutdown();
  const bool named = msg.find("shut down by rank 1") != std::string::npos;
  const bool ok = w == HVD_ERR_SHUT_DOWN && named && later == HVD_ERR_SHUT_DOWN;
  Say(std::string("FT rank=0 verdict=") + (ok ? "shut-down-by-rank-1" : "unexpected"));
  return ok ? 0 : 1;
}

int Stop(int victim, bool mid) {
  IgnoreTerm();
  const int rank = hvd_rank();
  // Large enough that the collective runs for a while: "mid" stops inside
  // it. Filled before the warm-up: touching 256 MiB can take seconds on a
  // loaded machine, and the ranks must reach the stop point in step.
  Buf big(int64_t{1} << 26, 1.0f);
  Buf warm(16, 1.0f);
  for (int i = 0; i < 3; ++i) {  // everyone in step, and the response cache warm
    hvd_handle h = 0;
    if (hvd_allreduce_async("st.warm", &warm.dl, &warm.dl, HVD_OP_SUM, nullptr, &h) != HVD_OK ||
        hvd_wait(h, 60000) != HVD_OK) {
      Say(std::string("FT warm-up failed: ") + hvd_last_error());
      return 1;
    }
    hvd_release(h);
  }
  hvd_handle h = 0;
  const int64_t t0 = NowMs();
  if (rank == victim && !mid) {
    Say("FT rank=" + std::to_string(rank) + " stopping itself at_ms=" + std::to_string(t0));
    raise(SIGSTOP);
  }
  hvd_status s = hvd_allreduce_async("st.big", &big.dl, &big.dl, HVD_OP_SUM, nullptr, &h);
  if (rank == victim) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    Say("FT rank=" + std::to_string(rank) + " stopping itself at_ms=" + std::to_string(NowMs()));
    raise(SIGSTOP);
  }
  if (s == HVD_OK) s = hvd_wait(h, 120000);
  Report("stalled", s, t0);
  // Every survivor reaches its own verdict at its watchdog's next look (up
  // to a period apart, later under load); one that left at once would close
  // its connections first, and the others would report that instead of the
  // stopped rank this test is about. ("end" covers leaving at once.)
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // The collective may never return (MPI): leave without hvd_shutdown.
  std::_Exit(3);
}

// Survivors of "end": what a program does after the error.
[[noreturn]] void KeepComputing() {
  volatile double x = 0;
  for (;;) {
    for (int i = 0; i < 1000000; ++i) x = x + 1e-9;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// "order": ranks 0 and 2 submit 'ord.a' and wait for it, rank 1 submits
// 'ord.b' and waits for it: neither can run, so the deadline fails both.
int Order() {
  IgnoreTerm();  // every rank must get to write its flight record
  const int rank = hvd_rank();
  Buf warm(16, 1.0f), a(256, 1.0f), b(256, 2.0f);
  for (int i = 0; i < 3; ++i) {
    hvd_handle h = 0;
    if (hvd_allreduce_async("ord.warm", &warm.dl, &warm.dl, HVD_OP_SUM, nullptr, &h) != HVD_OK ||
        hvd_wait(h, 60000) != HVD_OK) {
      Say(std::string("FT warm-up failed: ") + hvd_last_error());
      return 1;
    }
    hvd_release(h);
  }
  const int64_t t0 = NowMs();
  Buf& mine = rank == 1 ? b : a;
  hvd_handle h = 0;
  hvd_status s = hvd_allreduce_async(rank == 1 ? "ord.b" : "ord.a", &mine.dl, &mine.dl, HVD_OP_SUM,
                                     nullptr, &h);
  if (s == HVD_OK) s = hvd_wait(h, 120000);
  Report("ordered", s, t0);
  return 3;
}

int Agree(double delay_s) {
  IgnoreTerm();  // both ranks fail together; the launcher must not cut the second's report
  const char* launcher_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!launcher_rank) launcher_rank = std::getenv("HVD_RANK");
  if (delay_s > 0 && launcher_rank && std::atoi(launcher_rank) == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(delay_s * 1000)));
  }
  const int64_t t0 = NowMs();
  const hvd_status s = hvd_init();
  Say("FT init status=" + Str(s) + " elapsed_ms=" + std::to_string(NowMs() - t0) +
      " message=" + (s == HVD_OK ? "" : hvd_last_error()));
  if (s != HVD_OK) return 1;
  Buf a(kCount, 1.0f);
  hvd_handle h = 0;
  hvd_status w = hvd_allreduce_async("agree", &a.dl, &a.dl, HVD_OP_SUM, nullptr, &h);
  if (w == HVD_OK) w = hvd_wait(h, 10000);
  Report("agree", w, t0);
  hvd_shutdown();
  return w == HVD_OK ? 0 : 1;
}

int End(int victim, const std::string& action) {
  const int rank = hvd_rank();
  // Before the error: the launcher's SIGTERM may come at once after it.
  if (rank != victim && (action == "compute" || action == "mixed")) IgnoreTerm();
  Buf warm(16, 1.0f);
  Buf big(1024, 1.0f);
  for (int i = 0; i < 3; ++i) {
    hvd_handle h = 0;
    if (hvd_allreduce_async("end.warm", &warm.dl, &warm.dl, HVD_OP_SUM, nullptr, &h) != HVD_OK ||
        hvd_wait(h, 60000) != HVD_OK) {
      Say(std::string("FT warm-up failed: ") + hvd_last_error());
      return 1;
    }
    hvd_release(h);
  }
  const int64_t t0 = NowMs();
  if (rank == victim) {  // instead of submitting: the others wait for it
    Say("FT rank=" + std::to_string(rank) + " stopping itself at_ms=" + std::to_string(t0));
    raise(SIGSTOP);
  }
  hvd_handle h = 0;
  hvd_status s = hvd_allreduce_async("end.big", &big.dl, &big.dl, HVD_OP_SUM, nullptr, &h);
  if (s == HVD_OK) s = hvd_wait(h, 120000);
  Report("stalled", s, t0);
  const int first_survivor = victim == 0 ? 1 : 0;
  Say("FT rank=" + std::to_string(rank) + " action=" + action +
      " at_ms=" + std::to_string(NowMs()));
  if (action == "exit0") std::exit(0);
  if (action == "exit1") std::exit(1);
  if (action == "shutdown") {
    hvd_shutdown();
    KeepComputing();
  }
  if (action == "mixed" && rank == first_survivor) std::exit(1);
  KeepComputing();  // ignoring SIGTERM
}

// Microseconds since an arbitrary start (steady): the duration of one call.
int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Idle(int victim) {
  IgnoreTerm();
  const int rank = hvd_rank();
  Buf warm(16, 1.0f);
  for (int i = 0; i < 3; ++i) {  // everyone past init and in step
    hvd_handle h = 0;
    if (hvd_allreduce_async("idle.warm", &warm.dl, &warm.dl, HVD_OP_SUM, nullptr, &h) != HVD_OK ||
        hvd_wait(h, 60000) != HVD_OK) {
      Say(std::string("FT warm-up failed: ") + hvd_last_error());
      return 1;
    }
    hvd_release(h);
  }
  if (rank == victim) {
    Say("FT rank=" + std::to_string(rank) + " killing itself at_ms=" + std::to_string(NowMs()));
    raise(SIGKILL);
  }
  // The survivor's backward pass: no hvd call. Its set's loop learns of the
  // loss meanwhile (the dead rank's connections close): within milliseconds
  // usually, 1 s leaves room for a loaded machine.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  bool ok = true;
  for (const char* name : {"idle.grad.0", "idle.grad.1"}) {
    hvd_handle h = 0;
    const int64_t t0 = NowUs();
    hvd_status s = hvd_allreduce_async(name, &warm.dl, &warm.dl, HVD_OP_SUM, nullptr, &h);
    const int64_t took = NowUs() - t0;
    const bool at_submit = s != HVD_OK;
    const std::string msg = at_submit ? hvd_last_error() : "";
    if (!at_submit) {  // queued: it can only fail later, at the wait
      s = hvd_wait(h, 10000);
      hvd_release(h);
    }
    Say("FT rank=" + std::to_string(rank) + " op=" + name + " status=" + Str(s) +
        " at_submit=" + (at_submit ? "1" : "0") + " submit_us=" + std::to_string(took) +
        " at_ms=" + std::to_string(NowMs()) + " message=" + (at_submit ? msg : hvd_last_error()));
    ok = ok && at_submit && s == HVD_ERR_PEER_LOST;
  }
  Say("FT rank=" + std::to_string(rank) + " verdict=" + (ok ? "failed-at-submit" : "unexpected"));
  hvd_shutdown();
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "kill" && mode != "shutdown" && mode != "stop" && mode != "end" && mode != "order" &&
      mode != "idle" && mode != "agree" && mode != "late") {
    std::fprintf(stderr,
                 "usage: fault_test kill [VICTIM] | shutdown | stop VICTIM mid|before | end VICTIM "
                 "exit0|exit1|shutdown|compute|mixed | order | idle VICTIM | agree | late S\n");
    return 2;
  }
  if (mode == "agree") return Agree(0);
  if (mode == "late") return Agree(argc > 2 ? std::atof(argv[2]) : 3);
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  if (mode == "shutdown" && hvd_size() != 2) {
    std::fprintf(stderr, "fault_test shutdown needs exactly 2 ranks\n");
    hvd_shutdown();
    return 2;
  }
  const int victim = argc > 2 ? std::atoi(argv[2]) : 1;
  if (mode == "order") return Order();
  if (mode == "idle") return Idle(victim);
  if (mode == "end") return End(victim, argc > 3 ? argv[3] : "exit1");
  if (mode == "stop") return Stop(victim, argc > 3 && std::string(argv[3]) == "mid");
  return mode == "kill" ? Kill(victim) : Shutdown();
}
