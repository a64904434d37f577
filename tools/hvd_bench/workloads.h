// The workloads of shared/bench/WORKLOADS.md (W1...W6) and workloads read
// from any shape file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/hvd_bench/options.h"

namespace hvdbench {

struct Workload {
  std::string name;
  std::vector<int64_t> counts;  // elements per tensor, in submission order
  int iters = 10;               // per round
  int warmup = 2;               // per round
  int64_t total() const;        // elements
  int64_t bytes() const { return total() * 4; }
};

// An entry of --workloads that names a shape file rather than W1...W6.
bool IsShapeFilePath(const std::string& entry);

// Reads a shape file: one tensor per line, dimensions separated by spaces,
// '#' starts a comment. Dies naming the file and line on bad input.
std::vector<int64_t> ReadShapes(const std::string& path);

// --workloads then --shapes, with --iters/--warmup applied. Dies on an
// unknown name or an unreadable shape file, before anything starts.
std::vector<Workload> BuildWorkloads(const Args& a);

}  // namespace hvdbench
