#include "core/coordination/protocol.h"

#include <algorithm>

#include "core/common/wire.h"

namespace hvd {
namespace {

constexpr int32_t kReportMagic = 0x48525031;    // "HRP1"
constexpr int32_t kDecisionMagic = 0x48444331;  // "HDC1"

// A set of slots (sorted, without repeats) as a list (4 bytes each) or,
// when dense, as a bitmap: a steady-state step of a model reports hundreds.
void EncodeSlots(std::vector<int32_t> slots, WireWriter* w) {
  // A training step usually submits in slot order: then no sort is needed.
  if (!std::is_sorted(slots.begin(), slots.end())) std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  const int32_t max = slots.empty() ? -1 : slots.back();
  const size_t bitmap_bytes = static_cast<size_t>(max + 8) / 8;
  if (max < 0 || bitmap_bytes >= slots.size() * sizeof(int32_t)) {
    w->U8(0);
    w->I32Vec(slots);
    return;
  }
  std::string bits(bitmap_bytes, '\0');
  for (int32_t s : slots) bits[static_cast<size_t>(s) / 8] |= static_cast<char>(1 << (s % 8));
  w->U8(1);
  w->Str(bits);
}

// Slots come back in ascending order: the order the coordinator runs them in.
bool DecodeSlots(WireReader* r, std::vector<int32_t>* slots) {
  uint8_t form;
  if (!r->U8(&form) || form > 1) return false;
  if (form == 0) {
    if (!r->I32Vec(slots)) return false;
    for (size_t i = 0; i < slots->size(); ++i) {
      if ((*slots)[i] < 0 || (i > 0 && (*slots)[i] <= (*slots)[i - 1])) return false;
    }
    return true;
  }
  std::string bits;
  if (!r->Str(&bits) || bits.size() > (size_t{1} << 28)) return false;
  slots->clear();
  for (size_t i = 0; i < bits.size(); ++i) {
    for (int b = 0; b < 8; ++b) {
      if (bits[i] & (1 << b)) slots->push_back(static_cast<int32_t>(i * 8 + b));
    }
  }
  return true;
}

void EncodeAction(const Action& a, WireWriter* w) {
  w->U8(a.kind);
  switch (a.kind) {
    case Action::kRunCached:
      EncodeSlots(a.slots, w);
      w->I32Vec(a.ranks);
      break;
    case Action::kRun:
      w->I32(a.slot);
      EncodeResponse(a.response, w);
      break;
    case Action::kErase:
      w->I32(a.slot);
      break;
    case Action::kParams:
      w->I64(a.params.fusion_threshold_bytes);
      w->F64(a.params.cycle_time_ms);
      w->I64(a.params.allreduce_chunk_bytes);
      break;
    case Action::kShutdown:
      w->I32Vec(a.ranks);
      break;
    case Action::kPeerLost:
      w->I32Vec(a.ranks);
      w->Str(a.error);
      break;
    default:
      break;
  }
}

bool DecodeAction(WireReader* r, Action* a) {
  uint8_t kind;
  if (!r->U8(&kind) || kind >= Action::kNumKinds) return false;
  a->kind = static_cast<Action::Kind>(kind);
  switch (a->kind) {
    case Action::kRunCached:
      return DecodeSlots(r, &a->slots) && r->I32Vec(&a->ranks);
    case Action::kRun:
      return r->I32(&a->slot) && DecodeResponse(r, &a->response);
    case Action::kErase:
      return r->I32(&a->slot) && a->slot >= 0;
    case Action::kParams:
      return r->I64(&a->params.fusion_threshold_bytes) && r->F64(&a->params.cycle_time_ms) &&
             r->I64(&a->params.allreduce_chunk_bytes);
    case Action::kShutdown:
      return r->I32Vec(&a->ranks);
    case Action::kPeerLost:
      return r->I32Vec(&a->ranks) && r->Str(&a->error);
    default:
      return false;
  }
}

}  // namespace

std::string EncodeReport(const Report& rep) {
  WireWriter w;
  w.I32(kReportMagic);
  w.I64(rep.epoch);
  w.U8(rep.shutdown ? 1 : 0);
  EncodeSlots(rep.hits, &w);
  EncodeSlots(rep.invalid, &w);
  w.I64(static_cast<int64_t>(rep.requests.size()));
  for (const auto& q : rep.requests) EncodeRequest(q, &w);
  return w.Take();
}

Status DecodeReport(const std::string& bytes, Report* out) {
  WireReader r(bytes);
  int32_t magic;
  uint8_t shutdown;
  int64_t n;
  Report rep;
  // Each request takes at least 40 bytes, which bounds a hostile count.
  if (!r.I32(&magic) || magic != kReportMagic || !r.I64(&rep.epoch) || !r.U8(&shutdown) ||
      !DecodeSlots(&r, &rep.hits) || !DecodeSlots(&r, &rep.invalid) || !r.Length(&n, 40)) {
    return Status::Internal("malformed negotiation report");
  }
  rep.shutdown = shutdown != 0;
  rep.requests.resize(static_cast<size_t>(n));
  for (auto& q : rep.requests) {
    if (!DecodeRequest(&r, &q)) return Status::Internal("malformed request in a report");
  }
  if (!r.AtEnd()) return Status::Internal("trailing bytes after a report");
  *out = std::move(rep);
  return Status::OK();
}

std::string EncodeDecision(const Decision& d) {
  WireWriter w;
  w.I32(kDecisionMagic);
  w.I64(d.seq);
  w.I64(static_cast<int64_t>(d.actions.size()));
  for (const auto& a : d.actions) EncodeAction(a, &w);
  return w.Take();
}

Status DecodeDecision(const std::string& bytes, Decision* out) {
  WireReader r(bytes);
  int32_t magic;
  int64_t n;
  Decision d;
  if (!r.I32(&magic) || magic != kDecisionMagic || !r.I64(&d.seq) || !r.Length(&n, 1)) {
    return Status::Internal("malformed decision from the coordinator");
  }
  d.actions.resize(static_cast<size_t>(n));
  for (auto& a : d.actions) {
    if (!DecodeAction(&r, &a)) return Status::Internal("malformed action in a decision");
  }
  if (!r.AtEnd()) return Status::Internal("trailing bytes after a decision");
  *out = std::move(d);
  return Status::OK();
}

}  // namespace hvd
