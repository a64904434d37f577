#include "core/coordination/fusion.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <tuple>

namespace hvd {

int64_t ResponseBytes(const Response& r, int set_size) {
  const int64_t esize = static_cast<int64_t>(DataTypeSize(r.dtype));
  switch (r.type) {
    case OpType::kAllreduce:
    case OpType::kReducescatter:
    case OpType::kBroadcast: {
      int64_t n = 0;
      for (auto c : r.sizes) n += c;
      return n * esize;
    }
    case OpType::kAllgather: {
      // sizes: per tensor [row_elems, dim0 of each rank]
      int64_t n = 0;
      const size_t stride = 1 + static_cast<size_t>(set_size);
      for (size_t i = 0; i + stride <= r.sizes.size(); i += stride) {
        int64_t rows = 0;
        for (int k = 0; k < set_size; ++k) rows += r.sizes[i + 1 + k];
        n += rows * r.sizes[i];
      }
      return n * esize;
    }
    default:
      return 0;
  }
}

namespace {

bool Fusable(const Response& r) {
  return r.error_code == Code::kOk &&
         (r.type == OpType::kAllreduce || r.type == OpType::kAllgather ||
          r.type == OpType::kReducescatter) &&
         r.names.size() == 1;
}

using Key = std::tuple<int, int, int, int, int, double, double>;

Key FusionKey(const Response& r) {
  bool reduces = r.type == OpType::kAllreduce || r.type == OpType::kReducescatter;
  return Key(static_cast<int>(r.type), static_cast<int>(r.dtype),
             reduces ? static_cast<int>(r.reduce_op) : 0, static_cast<int>(r.device.kind),
             r.device.id, reduces ? r.prescale : 1.0, reduces ? r.postscale : 1.0);
}

// A name for a fused response, in a string of an earlier fusion when one
// is left: a name over 15 characters lives on the heap, and copying it
// anew was an allocation and a free per tensor per step.
std::string ReuseName(const std::string& name, std::vector<std::string>* spare) {
  if (spare->empty()) return name;
  std::string s = std::move(spare->back());
  spare->pop_back();
  s.assign(name);
  return s;
}

// FuseResponses into *out, whose names (from the last call) go to *spare
// first and are reused.
void FuseInto(const std::vector<ResponsePtr>& responses, int64_t threshold, int set_size,
              int64_t solo_bytes, std::vector<Response>* out_ptr, std::vector<std::string>* spare) {
  std::vector<Response>& out = *out_ptr;
  size_t moved = 0;
  for (Response& r : out) {
    moved += r.names.size();
    spare->insert(spare->end(), std::make_move_iterator(r.names.begin()),
                  std::make_move_iterator(r.names.end()));
  }
  // Each group's first name is a copy, not a spare: keep no more than the
  // larger of the last output and this input, or the spares would grow by
  // a few strings every step.
  const size_t keep = std::max(moved, responses.size());
  if (spare->size() > keep) spare->resize(keep);
  out.clear();
  out.reserve(responses.size());
  std::vector<int64_t> bytes;   // per entry of `out`
  std::map<Key, size_t> open;   // key -> index in out of the group still taking tensors
  auto open_last = open.end();  // the group the previous response went to
  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = *responses[i];
    if (threshold <= 0 || !Fusable(r)) {
      out.push_back(r);
      bytes.push_back(0);
      continue;
    }
    const int64_t b = ResponseBytes(r, set_size);
    if (solo_bytes > 0 && b >= solo_bytes) {
      out.push_back(r);
      bytes.push_back(b);
      continue;
    }
    const Key key = FusionKey(r);
    // Runs of one kind are the common case: skip the map lookup for them.
    auto it = !open.empty() && open_last->first == key ? open_last : open.find(key);
    // Only tensors with the same joined ranks may share a buffer.
    if (it != open.end() && bytes[it->second] + b <= threshold &&
        out[it->second].joined_ranks == r.joined_ranks) {
      Response& g = out[it->second];
      g.names.push_back(ReuseName(r.names[0], spare));
      g.sizes.insert(g.sizes.end(), r.sizes.begin(), r.sizes.end());
      bytes[it->second] += b;
      open_last = it;
      continue;
    }
    open_last = open.insert_or_assign(key, out.size()).first;
    bytes.push_back(b);
    out.push_back(r);
    // Room for every tensor still to come: a fused response of a thousand
    // names would otherwise grow (and move its names) ten times.
    out.back().names.reserve(responses.size() - i);
    out.back().sizes.reserve(r.sizes.size() * (responses.size() - i));
  }
}

}  // namespace

std::vector<Response> FuseResponses(const std::vector<ResponsePtr>& responses, int64_t threshold,
                                    int set_size, int64_t solo_bytes) {
  std::vector<Response> out;
  std::vector<std::string> spare;
  FuseInto(responses, threshold, set_size, solo_bytes, &out, &spare);
  return out;
}

std::vector<Response> FuseResponses(std::vector<Response> responses, int64_t threshold,
                                    int set_size, int64_t solo_bytes) {
  std::vector<ResponsePtr> shared;
  shared.reserve(responses.size());
  for (auto& r : responses) shared.push_back(std::make_shared<const Response>(std::move(r)));
  return FuseResponses(shared, threshold, set_size, solo_bytes);
}

const std::vector<Response>& FusionMemo::Fuse(std::vector<ResponsePtr>* responses,
                                              int64_t threshold_bytes, int set_size,
                                              int64_t solo_bytes) {
  if (*responses != in_) {
    in_.swap(*responses);
    threshold_ = -1;  // fuse the new input
  }
  return Repeat(threshold_bytes, set_size, solo_bytes);
}

const std::vector<Response>& FusionMemo::Repeat(int64_t threshold_bytes, int set_size,
                                                int64_t solo_bytes) {
  if (threshold_bytes != threshold_ || set_size != set_size_ || solo_bytes != solo_bytes_) {
    FuseInto(in_, threshold_bytes, set_size, solo_bytes, &out_, &spare_names_);
    threshold_ = threshold_bytes;
    set_size_ = set_size;
    solo_bytes_ = solo_bytes;
  }
  return out_;
}

void* FusionBuffer::Get(int64_t bytes) {
  if (static_cast<int64_t>(buf_.size()) < bytes) {
    buf_.clear();
    buf_.shrink_to_fit();
    buf_.resize(static_cast<size_t>(bytes));
  }
  return buf_.data();
}

}  // namespace hvd
