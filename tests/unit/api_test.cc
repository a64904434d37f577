// Unit tests of the C++ API (core/api/api.h) in a process that never calls
// Init: the checks it makes before the runtime is asked, their messages
// (the C layer prefixes them with its function's name), and that a failed
// call leaves nothing behind. The C layer over it is tested end to end
// under mpirun and hvdrun (tests/mp, tests/abuse, the bindings).
#include "core/api/api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace hvd {
namespace {

// A float32 CPU tensor over `data` with `shape`.
api::Tensor Floats(std::vector<float>* data, const std::vector<int64_t>& shape) {
  api::Tensor t;
  t.dtype = DataType::kFloat32;
  t.shape = shape.data();
  t.ndim = static_cast<int>(shape.size());
  t.num_elements = static_cast<int64_t>(data->size());
  t.data = data->data();
  return t;
}

TEST(Api, BeforeInitNothingRunsAndTheHandleIsZero) {
  EXPECT_FALSE(api::Initialized());
  Status s = api::CheckInitialized();
  EXPECT_EQ(s.code(), Code::kNotInitialized);
  EXPECT_EQ(s.message(), "hvd is not initialized (call hvd_init first)");
  api::Topology t;
  EXPECT_EQ(api::GetTopology(&t).code(), Code::kNotInitialized);

  std::vector<float> in(4), out(4);
  const std::vector<int64_t> shape{4};
  api::AllreduceArgs a;
  a.input = Floats(&in, shape);
  a.output = Floats(&out, shape);
  int64_t handle = 7;
  s = api::Allreduce(a, api::OpOptions(), &handle);
  EXPECT_EQ(s.code(), Code::kNotInitialized) << s.message();
  EXPECT_EQ(handle, 0);
  // The thread's pooled entry was cleared: the next call starts afresh.
  a.name = "named";
  s = api::Allreduce(a, api::OpOptions(), &handle);
  EXPECT_EQ(s.code(), Code::kNotInitialized) << s.message();
  int rank = 0, size = 0;
  EXPECT_EQ(api::ProcessSetInfo(0, &rank, &size).code(), Code::kNotInitialized);
  EXPECT_EQ(api::Barrier(0).code(), Code::kNotInitialized);
}

TEST(Api, AllreduceChecksOptionsOutputAndBoolOps) {
  std::vector<float> in(4), out(3);
  const std::vector<int64_t> shape{4}, short_shape{3};
  api::AllreduceArgs a;
  a.input = Floats(&in, shape);
  a.output = Floats(&out, short_shape);
  int64_t handle = 0;
  api::OpOptions o;
  o.prescale = std::nan("");
  Status s = api::Allreduce(a, o, &handle);
  EXPECT_EQ(s.message(), "prescale/postscale factors must be finite");
  o = api::OpOptions();
  o.process_set = -1;
  EXPECT_EQ(api::Allreduce(a, o, &handle).message(), "negative process set id -1");
  s = api::Allreduce(a, api::OpOptions(), &handle);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "output must have the input's dtype and element count (input float32 x4, output "
            "float32 x3)");

  std::vector<uint8_t> flags(4);
  api::Tensor b;
  b.dtype = DataType::kBool;
  b.shape = shape.data();
  b.ndim = 1;
  b.num_elements = 4;
  b.data = flags.data();
  a.input = a.output = b;
  a.op = ReduceOp::kAverage;
  s = api::Allreduce(a, api::OpOptions(), &handle);
  EXPECT_NE(s.message().find("input is bool, which reduces with"), std::string::npos)
      << s.message();
  a.op = ReduceOp::kAdasum;
  s = api::Allreduce(a, api::OpOptions(), &handle);
  EXPECT_EQ(s.message(), "HVD_OP_ADASUM needs a floating-point input, got bool");
}

TEST(Api, GroupedOperationsNameTheItem) {
  std::vector<float> a(2), b(2), c(3);
  const std::vector<int64_t> two{2}, three{3};
  std::vector<api::GroupItem> items(2);
  items[0].input = items[0].output = Floats(&a, two);
  items[1].input = Floats(&b, two);
  items[1].output = Floats(&c, three);
  int64_t handle = 0;
  Status s = api::GroupedAllreduce({items.data(), items.size()}, ReduceOp::kSum, api::OpOptions(),
                                   &handle);
  EXPECT_EQ(s.message(),
            "outputs[1] must have the inputs[1]'s dtype and element count (inputs[1] float32 x2, "
            "outputs[1] float32 x3)");
  EXPECT_EQ(api::GroupedAllgather({nullptr, 0}, api::OpOptions(), &handle).message(),
            "needs at least one tensor");
  float scalar = 0;
  items[1].input.shape = nullptr;
  items[1].input.ndim = 0;
  items[1].input.num_elements = 1;
  items[1].input.data = &scalar;
  s = api::GroupedReducescatter({items.data(), items.size()}, ReduceOp::kSum, api::OpOptions(),
                                &handle);
  EXPECT_EQ(s.message(), "inputs[1] is a scalar; reducescatter needs at least one dimension");
  s = api::GroupedReducescatter({items.data(), items.size()}, ReduceOp::kMax, api::OpOptions(),
                                &handle);
  EXPECT_EQ(s.message(), "only HVD_OP_SUM and HVD_OP_AVERAGE are supported");
}

TEST(Api, UnknownHandlesAreFailuresOfTheCall) {
  bool call_failed = false;
  Status s = api::Poll(123456789, &call_failed);
  EXPECT_TRUE(call_failed);
  EXPECT_EQ(s.message().find("unknown handle"), 0u) << s.message();
  call_failed = false;
  s = api::Wait(123456789, 0, &call_failed);
  EXPECT_TRUE(call_failed);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  api::ResultView r;
  call_failed = false;
  EXPECT_FALSE(api::Result(123456789, 0, &r, &call_failed).ok());
  EXPECT_TRUE(call_failed);
  EXPECT_EQ(api::Release(123456789).code(), Code::kInvalidArgument);
}

TEST(Api, PointToPointChecksTheSetBeforeTheRuntime) {
  api::P2POptions o;
  o.process_set = 5000;
  int64_t handle = 0;
  Status s = api::PostP2P("test", {api::P2PMessage()}, o, &handle);
  EXPECT_EQ(s.message(), "process set id 5000 is outside 0..1023");
  o.process_set = 0;
  s = api::PostP2P("test", {api::P2PMessage()}, o, &handle);
  EXPECT_EQ(s.code(), Code::kNotInitialized) << s.message();
  EXPECT_EQ(handle, 0);
}

}  // namespace
}  // namespace hvd
