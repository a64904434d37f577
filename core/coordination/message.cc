#include "core/coordination/message.h"

#include <utility>

#include "core/common/wire.h"

namespace hvd {
namespace {

template <typename E>
bool ReadEnum(WireReader* r, E* out, int limit) {
  uint8_t v;
  if (!r->U8(&v) || v >= limit) return false;
  *out = static_cast<E>(v);
  return true;
}

// The operation's parameters, which Request and Response share in this order.
template <typename T>
void EncodeParams(const T& x, WireWriter* w) {
  w->U8(static_cast<uint8_t>(x.dtype));
  w->U8(static_cast<uint8_t>(x.reduce_op));
  w->U8(static_cast<uint8_t>(x.device.kind));
  w->I32(x.device.id);
  w->I32(x.root);
  w->F64(x.prescale);
  w->F64(x.postscale);
}

template <typename T>
bool DecodeParams(WireReader* r, T* x) {
  return ReadEnum(r, &x->dtype, kNumDataTypes) && ReadEnum(r, &x->reduce_op, kNumReduceOps) &&
         ReadEnum(r, &x->device.kind, 2) && r->I32(&x->device.id) && r->I32(&x->root) &&
         r->F64(&x->prescale) && r->F64(&x->postscale);
}

}  // namespace

void EncodeRequest(const Request& q, WireWriter* w) {
  w->I32(q.rank);
  w->I32(q.process_set);
  w->U8(static_cast<uint8_t>(q.type));
  EncodeParams(q, w);
  w->I64Vec(q.shape);
  w->Str(q.name);
  w->I32Vec(q.splits);
  w->Str(q.group);
  w->I32(q.group_size);
  w->I32Vec(q.set_ranks);
}

bool DecodeRequest(WireReader* r, Request* q) {
  return r->I32(&q->rank) && r->I32(&q->process_set) && ReadEnum(r, &q->type, kNumOpTypes) &&
         DecodeParams(r, q) && r->I64Vec(&q->shape) && r->Str(&q->name) && r->I32Vec(&q->splits) &&
         r->Str(&q->group) && r->I32(&q->group_size) && r->I32Vec(&q->set_ranks);
}

int64_t Request::NumElements() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

bool Request::SameParams(const Request& o) const {
  return type == o.type && dtype == o.dtype && reduce_op == o.reduce_op && device == o.device &&
         root == o.root && prescale == o.prescale && postscale == o.postscale && shape == o.shape &&
         splits == o.splits && group == o.group && group_size == o.group_size;
}

void Request::Swap(Request& o) noexcept {
  using std::swap;
  swap(rank, o.rank);
  swap(process_set, o.process_set);
  swap(type, o.type);
  swap(dtype, o.dtype);
  swap(reduce_op, o.reduce_op);
  swap(device, o.device);
  swap(root, o.root);
  swap(prescale, o.prescale);
  swap(postscale, o.postscale);
  shape.swap(o.shape);
  name.swap(o.name);
  // Empty for most operations: skip the (SSO-aware, branchy) string swap.
  if (!splits.empty() || !o.splits.empty()) splits.swap(o.splits);
  if (!group.empty() || !o.group.empty()) group.swap(o.group);
  swap(group_size, o.group_size);
  if (!set_ranks.empty() || !o.set_ranks.empty()) set_ranks.swap(o.set_ranks);
}

void Request::Reset() {
  // The defaults of the declaration, spelled out (no temporary Request).
  rank = 0;
  process_set = 0;
  type = OpType::kAllreduce;
  dtype = DataType::kFloat32;
  reduce_op = ReduceOp::kSum;
  device = Device();
  root = 0;
  prescale = 1.0;
  postscale = 1.0;
  shape.clear();
  name.clear();
  splits.clear();
  group.clear();
  group_size = 0;
  set_ranks.clear();
}

void EncodeResponse(const Response& s, WireWriter* w) {
  w->U8(static_cast<uint8_t>(s.type));
  w->I64(static_cast<int64_t>(s.names.size()));
  for (const auto& n : s.names) w->Str(n);
  w->I32(static_cast<int32_t>(s.error_code));
  w->Str(s.error);
  EncodeParams(s, w);
  w->I64Vec(s.sizes);
  w->I64Vec(s.shape);
  w->I32Vec(s.joined_ranks);
  w->I32Vec(s.set_ranks);
  w->I32(s.last_joined);
}

bool DecodeResponse(WireReader* r, Response* s) {
  int64_t n;
  if (!ReadEnum(r, &s->type, kNumOpTypes) || !r->Length(&n, 8)) return false;
  s->names.resize(static_cast<size_t>(n));
  for (auto& name : s->names) {
    if (!r->Str(&name)) return false;
  }
  int32_t code;
  if (!r->I32(&code) || code > 1 || code < -10) return false;
  s->error_code = static_cast<Code>(code);
  return r->Str(&s->error) && DecodeParams(r, s) && r->I64Vec(&s->sizes) && r->I64Vec(&s->shape) &&
         r->I32Vec(&s->joined_ranks) && r->I32Vec(&s->set_ranks) && r->I32(&s->last_joined);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace hvd
