#include "tools/hvd_bench/workloads.h"

#include <fstream>
#include <sstream>

#include "tools/hvd_bench/fail.h"

namespace hvdbench {
namespace {

std::string BaseName(const std::string& path) {
  std::string b = path.substr(path.find_last_of('/') + 1);
  auto dot = b.find_last_of('.');
  if (dot != std::string::npos && dot > 0) b.erase(dot);
  return b;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Iterations for a gradient set of this size: enough samples for a median
// without letting the 500 MiB sets run for minutes per round.
void DefaultIterations(Workload* wl) {
  const int64_t bytes = wl->bytes();
  wl->iters = bytes > (256 << 20) ? 5 : bytes > (8 << 20) ? 20 : 50;
  wl->warmup = bytes > (256 << 20) ? 1 : 3;
}

Workload FromShapeFile(const std::string& name, const std::string& path) {
  Workload wl;
  wl.name = name;
  wl.counts = ReadShapes(path);
  DefaultIterations(&wl);
  return wl;
}

}  // namespace

int64_t Workload::total() const {
  int64_t t = 0;
  for (int64_t c : counts) t += c;
  return t;
}

bool IsShapeFilePath(const std::string& entry) {
  return entry.find('/') != std::string::npos || EndsWith(entry, ".txt");
}

std::vector<int64_t> ReadShapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) Die("cannot open shape file '" + path + "'");
  std::vector<int64_t> counts;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream ls(line);
    int64_t n = 1, d = 0;
    int dims = 0;
    while (ls >> d) {
      if (d < 0) Die(path + ":" + std::to_string(lineno) + ": negative dimension");
      if (d > 0 && n > (int64_t{1} << 40) / d) {
        Die(path + ":" + std::to_string(lineno) + ": tensor larger than 2^40 elements");
      }
      n *= d;
      ++dims;
    }
    if (!ls.eof()) Die(path + ":" + std::to_string(lineno) + ": not a list of integers");
    if (dims > 0) counts.push_back(n);
  }
  if (counts.empty()) Die("shape file '" + path + "' has no tensors");
  return counts;
}

std::vector<Workload> BuildWorkloads(const Args& a) {
  std::vector<Workload> out;
  const std::string dir = a.shapes_dir + "/";
  for (const std::string& w : a.workloads) {
    Workload wl;
    wl.name = w;
    if (IsShapeFilePath(w)) {
      wl = FromShapeFile(BaseName(w), w);
    } else if (w == "W1") {
      wl.counts = {64 * 1024 * 1024 / 4};
      wl.iters = 20;
      wl.warmup = 3;
    } else if (w == "W2") {
      wl = FromShapeFile(w, a.w2_shapes.empty() ? dir + "resnet50_grads.txt" : a.w2_shapes);
    } else if (w == "W2b") {
      wl = FromShapeFile(w, a.w2b_shapes.empty() ? dir + "vgg16_grads.txt" : a.w2b_shapes);
    } else if (w == "W3") {
      wl.counts = {256};
      wl.iters = 1000;
      wl.warmup = 50;
    } else if (w == "W4") {
      wl.counts.assign(1000, 256);
      wl.iters = 50;
      wl.warmup = 5;
    } else if (w == "W5") {
      wl = FromShapeFile(w, dir + "inception_v3_grads.txt");
    } else if (w == "W6") {
      wl = FromShapeFile(w, dir + "resnet101_grads.txt");
    } else {
      Die("unknown workload '" + w +
          "' (W1,W2,W2b,W3,W4,W5,W6, or a shape file: a path with '/' or ending in .txt)");
    }
    out.push_back(std::move(wl));
  }
  for (const std::string& f : a.extra_shapes) out.push_back(FromShapeFile(BaseName(f), f));
  for (Workload& wl : out) {
    if (a.iters > 0) wl.iters = a.iters;
    if (a.warmup >= 0) wl.warmup = a.warmup;
  }
  return out;
}

}  // namespace hvdbench
