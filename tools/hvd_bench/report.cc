#include "tools/hvd_bench/report.h"

#include <algorithm>
#include <fstream>

namespace hvdbench {
namespace {

std::string FormatMs(double ms) {
  char buf[32];
  if (ms < 0.1) {
    std::snprintf(buf, sizeof buf, "%.4f", ms);
  } else if (ms < 10) {
    std::snprintf(buf, sizeof buf, "%.3f", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", ms);
  }
  return buf;
}

std::string FormatRatio(double r) {
  if (r <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", r);
  return buf;
}

void PrintIdle(FILE* f, const RunInfo& info, const std::vector<IdleLine>& idle) {
  if (idle.empty()) return;
  std::fprintf(f,
               "\nidle CPU per rank, %% of one core (getrusage user+sys of the whole process "
               "over %.1f s, after %.1f s settle):\n",
               info.idle_seconds, info.idle_settle_seconds);
  size_t width = 0;
  for (const IdleLine& l : idle) width = std::max(width, l.what.size());
  for (const IdleLine& l : idle) {
    double mx = 0, sum = 0;
    for (double v : l.per_rank) {
      mx = std::max(mx, v);
      sum += v;
    }
    const double mean = l.per_rank.empty() ? 0 : sum / static_cast<double>(l.per_rank.size());
    std::fprintf(f, "  %-*s  max %6.2f%%  mean %6.2f%%  |", static_cast<int>(width), l.what.c_str(),
                 100 * mx, 100 * mean);
    for (size_t r = 0; r < l.per_rank.size(); ++r) {
      std::fprintf(f, "  rank %zu %.2f%%", r, 100 * l.per_rank[r]);
    }
    std::fprintf(f, "\n");
  }
}

}  // namespace

double BusBw(int64_t bytes, double ms, int size) {
  if (ms <= 0 || size < 2) return 0;
  return static_cast<double>(bytes) / (ms * 1e-3) * 2.0 * (size - 1) / size / 1e9;
}

std::string FormatBytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  }
  return buf;
}

void PrintReport(FILE* f, const RunInfo& info, const std::vector<Row>& rows,
                 const std::vector<IdleLine>& idle) {
  std::fprintf(f, "%s\n", info.header.c_str());
  for (const std::string& k : info.knobs) std::fprintf(f, "%s\n", k.c_str());
  for (const std::string& n : info.notes) std::fprintf(f, "note: %s\n", n.c_str());
  std::fprintf(f,
               "ms per iteration: median over rounds of each round's median (rank 0), range "
               "= min-max over rounds;\n"
               "best raw = in each round, the fastest raw pattern; ratio = time / best raw "
               "time before hvd_init;\n"
               "busbw = bytes/time * 2(n-1)/n; '(hvd idle)' rows run with hvd initialised "
               "and idle; SLOWER: their\n"
               "best is slower than before hvd_init by more than the noise (the larger "
               "range, at least 5%%)\n\n");
  size_t wl_width = 8, impl_width = 4;
  for (const Row& r : rows) {
    wl_width = std::max(wl_width, r.workload.size());
    impl_width = std::max(impl_width, r.impl.size());
  }
  const int ww = static_cast<int>(wl_width), iw = static_cast<int>(impl_width);
  std::fprintf(f, "%-*s  %-*s %10s %10s %10s %10s %7s %5s  %s\n", ww, "workload", iw, "impl",
               "median_ms", "min_ms", "max_ms", "busbw_GB/s", "ratio", "check", "note");
  std::string last;
  for (const Row& r : rows) {
    if (!last.empty() && r.workload != last) std::fprintf(f, "\n");
    last = r.workload;
    std::fprintf(f, "%-*s  %-*s %10s %10s %10s %10.2f %7s %5s  %s\n", ww, r.workload.c_str(), iw,
                 r.impl.c_str(), FormatMs(r.ms.median).c_str(), FormatMs(r.ms.min).c_str(),
                 FormatMs(r.ms.max).c_str(), r.busbw_gbs, FormatRatio(r.ratio).c_str(),
                 r.ok ? "ok" : "FAIL", r.note.c_str());
  }
  PrintIdle(f, info, idle);
  std::fprintf(f, "\npeak RSS (max over ranks): %.1f MiB\n", info.peak_rss_mib);
  std::fprintf(f, "correctness: %s\n",
               info.failed ? "FAILED on at least one rank" : "all checks passed");
}

namespace {

// RFC 4180: a field with a comma or quote is quoted, quotes doubled
// ("raw MPI chunked, cache-sized" has a comma).
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + '"';
}

}  // namespace

bool WriteCsv(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream out(path);
  if (!out) return false;
  out << "workload,impl,median_ms,min_ms,max_ms,busbw_gbs,ratio_to_best_raw\n";
  for (const Row& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, ",%.6f,%.6f,%.6f,%.4f,", r.ms.median, r.ms.min, r.ms.max,
                  r.busbw_gbs);
    out << CsvField(r.workload) << ',' << CsvField(r.impl) << line;
    if (r.ratio > 0) {
      std::snprintf(line, sizeof line, "%.4f", r.ratio);
      out << line;
    }
    out << '\n';
  }
  out.close();
  return static_cast<bool>(out);
}

}  // namespace hvdbench
