// hvd_bench's output: the table on rank 0's stdout and the CSV file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tools/hvd_bench/timing.h"

namespace hvdbench {

struct Row {
  std::string workload;
  std::string impl;
  Summary ms;            // over rounds
  double busbw_gbs = 0;  // from the median
  double ratio = -1;     // median / best raw median before hvd_init; < 0: none
  bool ok = true;        // every round's first iteration was exact
  std::string note;
};

// CPU per second while idle, one value per rank (1.0 = one core).
struct IdleLine {
  std::string what;
  std::vector<double> per_rank;
};

struct RunInfo {
  std::string header;              // version, backend, np, rounds
  std::vector<std::string> knobs;  // "NAME=value" lines
  std::vector<std::string> notes;  // skipped baselines and the like
  double idle_seconds = 0;
  double idle_settle_seconds = 0;
  double peak_rss_mib = 0;
  bool failed = false;
};

// nccl-tests' bus bandwidth in GB/s: bytes/time * 2(n-1)/n.
double BusBw(int64_t bytes, double ms, int size);
std::string FormatBytes(int64_t bytes);

void PrintReport(FILE* f, const RunInfo& info, const std::vector<Row>& rows,
                 const std::vector<IdleLine>& idle);

// Every row: workload,impl,median_ms,min_ms,max_ms,busbw_gbs,ratio_to_best_raw
// (ratio empty when there is no raw figure). False when the file cannot be
// written.
bool WriteCsv(const std::string& path, const std::vector<Row>& rows);

}  // namespace hvdbench
