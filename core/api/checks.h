// The checks the collectives share (checks.cc). Messages name the tensor as
// the caller sees it ("input", "inputs[2]"); the C layer prefixes them with
// its function's name.
#pragma once

#include <string>

#include "core/api/api.h"
#include "core/tensor/tensor_entry.h"

namespace hvd {
namespace api {

// Finite scale factors, a non-negative process set.
Status CheckOptions(const OpOptions& o);
// `t`'s dtype, device, shape, element count and data into the entry.
void FillInput(const Tensor& t, TensorEntry* e);
// An allreduce output: the input's dtype and element count.
Status CheckOutput(const char* what, const char* input_what, const Tensor& t, TensorEntry* e);
// Only sum and average scatter.
Status CheckScatterOp(ReduceOp op);
// Adasum's limits: floating-point CPU tensors (any number of ranks).
Status CheckAdasumTensor(const char* what, const TensorEntry& e);
// Sets the entry's reduce op; bool tensors reduce logically (sum and max
// are or, min and product are and: max and min on bytes) and unscaled.
Status SetReduceOp(const char* what, ReduceOp op, const OpOptions& o, TensorEntry* e);
// "inputs[i]" (what a grouped operation's messages call item i).
std::string ItemName(const char* list, size_t i);

}  // namespace api
}  // namespace hvd
