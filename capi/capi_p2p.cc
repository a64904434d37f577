// Point-to-point messages: argument checks, then api::PostP2P.
#include <string>
#include <vector>

#include "capi/capi_internal.h"

namespace hvd {
namespace capi {
namespace {

Status ReadP2POptions(const hvd_p2p_options* in, api::P2POptions* out, const char* fn) {
  hvd_p2p_options o = HVD_P2P_OPTIONS_INIT;
  HVD_RETURN_IF_ERROR(ReadOptions(in, &o, fn));
  out->process_set = o.process_set;
  out->callback = ToCallback(o.callback, o.callback_user_data);
  return Status::OK();
}

// One message's tensor, peer and tag; `what` names it in errors.
Status ReadOp(const char* fn, const std::string& what, bool recv, const DLTensor* t, int peer,
              int tag, api::P2PMessage* op) {
  api::Tensor v;
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
  op->data = v.data;
  op->bytes = v.num_elements * static_cast<int64_t>(DataTypeSize(v.dtype));
  op->peer = peer;
  op->tag = tag;
  return Status::OK();
}

hvd_status Post(const char* fn, std::vector<api::P2PMessage> ops, const api::P2POptions& o,
                hvd_handle* handle) {
  return Submitted(fn, api::PostP2P(fn, std::move(ops), o, handle));
}

hvd_status Single(const char* fn, bool recv, const DLTensor* t, int peer, int tag,
                  const hvd_p2p_options* opts, hvd_handle* handle) {
  api::P2POptions o;
  std::vector<api::P2PMessage> ops(1);
  Status s = CheckInit(fn);
  if (s.ok()) s = ReadP2POptions(opts, &o, fn);
  if (s.ok()) s = ReadOp(fn, "tensor", recv, t, peer, tag, &ops[0]);
  if (s.ok() && !handle) s = Status::Invalid(std::string(fn) + ": handle is NULL");
  if (!s.ok()) return Report(s);
  return Post(fn, std::move(ops), o, handle);
}

hvd_status Batch(const hvd_p2p_op* in, int count, const hvd_p2p_options* opts, hvd_handle* handle) {
  const char* fn = "hvd_batch_isend_irecv";
  api::P2POptions o;
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
  std::vector<api::P2PMessage> ops(s.ok() ? static_cast<size_t>(count) : 0);
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
