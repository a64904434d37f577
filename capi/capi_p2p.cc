// Point-to-point messages: argument checks, then the runtime's p2p engine.
// They bypass the collectives' queue and negotiation entirely.
#include <string>
#include <vector>

#include "capi/capi_internal.h"
#include "core/common/block_pool.h"
#include "core/runtime/handle_table.h"
#include "core/runtime/p2p_engine.h"

namespace hvd {
namespace capi {
namespace {

Status ReadP2POptions(const hvd_p2p_options* in, hvd_p2p_options* out, const char* fn) {
  *out = HVD_P2P_OPTIONS_INIT;
  HVD_RETURN_IF_ERROR(ReadOptions(in, out, fn));
  if (out->process_set < 0 || out->process_set > kMaxP2PSet) {
    return Status::Invalid(std::string(fn) + ": process set id " +
                           std::to_string(out->process_set) + " is outside 0.." +
                           std::to_string(kMaxP2PSet));
  }
  return Status::OK();
}

// One message's tensor, peer and tag; `what` names it in errors.
Status ReadOp(const char* fn, const std::string& what, bool recv, const DLTensor* t, int peer,
              int tag, P2POp* op) {
  TensorView v;
  HVD_RETURN_IF_ERROR(ReadTensor(fn, what.c_str(), t, &v));
  if (v.device.kind != DeviceKind::kCPU) {
    return Status::Unsupported(std::string(fn) + ": " + what +
                               " is on a CUDA device; point-to-point messages take CPU tensors");
  }
  if (tag < 0 || tag > HVD_P2P_MAX_TAG) {
    return Status::Invalid(std::string(fn) + ": tag " + std::to_string(tag) +
                           " is outside 0..HVD_P2P_MAX_TAG (" + std::to_string(HVD_P2P_MAX_TAG) +
                           ")");
  }
  op->recv = recv;
  op->buf = v.data;
  op->bytes = v.num_elements * static_cast<int64_t>(DataTypeSize(v.dtype));
  op->set_peer = peer;
  op->tag = tag;
  return Status::OK();
}

hvd_status Post(const char* fn, std::vector<P2POp> ops, const hvd_p2p_options& o,
                hvd_handle* handle) {
  HandleState::Callback cb;
  if (o.callback) {
    hvd_callback c = o.callback;
    void* user = o.callback_user_data;
    cb = [c, user](int64_t id, const Status& s) { c(id, static_cast<hvd_status>(s.code()), user); };
  }
  auto state = std::allocate_shared<HandleState>(PoolAllocator<HandleState>(),
                                                 static_cast<int>(ops.size()), std::move(cb));
  const int64_t id = HandleTable::Global().Add(state);
  state->set_id(id);
  Status s = RT().SubmitP2P(fn, o.process_set, std::move(ops), state);
  if (!s.ok()) {
    HandleTable::Global().Release(id);
    *handle = 0;
    return Report(Prefixed(fn, s));
  }
  *handle = id;
  return Report(Status::OK());
}

hvd_status Single(const char* fn, bool recv, const DLTensor* t, int peer, int tag,
                  const hvd_p2p_options* opts, hvd_handle* handle) {
  hvd_p2p_options o;
  std::vector<P2POp> ops(1);
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadP2POptions(opts, &o, fn);
  if (s.ok()) s = ReadOp(fn, "tensor", recv, t, peer, tag, &ops[0]);
  if (s.ok() && !handle) s = Status::Invalid(std::string(fn) + ": handle is NULL");
  if (!s.ok()) return Report(s);
  return Post(fn, std::move(ops), o, handle);
}

hvd_status Batch(const hvd_p2p_op* in, int count, const hvd_p2p_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_batch_isend_irecv";
  hvd_p2p_options o;
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadP2POptions(opts, &o, fn);
  if (s.ok() && (count <= 0 || !in || !handle)) {
    s = Status::Invalid(std::string(fn) + ": needs count > 0 and non-NULL ops and handle");
  }
  // Elements are as large as the caller's struct (its first struct_size).
  const size_t stride = s.ok() ? in->struct_size : 0;
  if (s.ok() && (stride < offsetof(hvd_p2p_op, tag) + sizeof(int) || stride > 4096)) {
    s = Status::Invalid(std::string(fn) + ": ops[0].struct_size is " + std::to_string(stride) +
                        "; initialise each op with HVD_P2P_OP_INIT");
  }
  std::vector<P2POp> ops(s.ok() ? static_cast<size_t>(count) : 0);
  for (int i = 0; s.ok() && i < count; ++i) {
    const auto* op = reinterpret_cast<const hvd_p2p_op*>(reinterpret_cast<const char*>(in) +
                                                         stride * static_cast<size_t>(i));
    const std::string what = "ops[" + std::to_string(i) + "].tensor";
    const int kind = static_cast<int>(op->kind);
    if (op->struct_size != stride) {
      s = Status::Invalid(std::string(fn) + ": ops[" + std::to_string(i) + "].struct_size is " +
                          std::to_string(op->struct_size) + ", ops[0]'s " + std::to_string(stride));
    } else if (kind != HVD_P2P_SEND && kind != HVD_P2P_RECV) {
      s = Status::Invalid(std::string(fn) + ": ops[" + std::to_string(i) + "].kind is " +
                          std::to_string(kind) + " (HVD_P2P_SEND or HVD_P2P_RECV)");
    } else {
      s = ReadOp(fn, what, kind == HVD_P2P_RECV, op->tensor, op->peer, op->tag, &ops[i]);
    }
  }
  if (!s.ok()) return Report(s);
  return Post(fn, std::move(ops), o, handle);
}

}  // namespace
}  // namespace capi
}  // namespace hvd

extern "C" {

void hvd_p2p_options_init(hvd_p2p_options* opts) {
  if (opts) *opts = HVD_P2P_OPTIONS_INIT;
}

hvd_status hvd_send_async(const DLTensor* tensor, int dest, int tag, const hvd_p2p_options* opts,
                          hvd_handle* handle) {
  return hvd::capi::Guard("hvd_send_async", [&] {
    return hvd::capi::Single("hvd_send_async", false, tensor, dest, tag, opts, handle);
  });
}

hvd_status hvd_recv_async(DLTensor* tensor, int src, int tag, const hvd_p2p_options* opts,
                          hvd_handle* handle) {
  return hvd::capi::Guard("hvd_recv_async", [&] {
    return hvd::capi::Single("hvd_recv_async", true, tensor, src, tag, opts, handle);
  });
}

hvd_status hvd_batch_isend_irecv(const hvd_p2p_op* ops, int count, const hvd_p2p_options* opts,
                                 hvd_handle* handle) {
  return hvd::capi::Guard("hvd_batch_isend_irecv",
                          [&] { return hvd::capi::Batch(ops, count, opts, handle); });
}

}  // extern "C"
