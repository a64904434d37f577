// Raw Gloo baseline: a second Gloo context, built before hvd_init over the
// same hvdrun rendezvous store as hvd's Gloo backend (under its own key
// prefix), on which the bench calls gloo::allreduce directly - the same
// call (new API, default ring algorithm) that hvd's backend makes.
#pragma once

#include <memory>
#include <string>

#include "tools/hvd_bench/raw_baseline.h"

namespace hvdbench {

// Connects rank HVD_RANK of HVD_SIZE through HVD_RENDEZVOUS_ADDR/_PORT/
// _SECRET (hvdrun's variables). Gloo listens where hvd's backend would:
// HVD_GLOO_IFACE, else HVD_GLOO_HOSTNAME, else the local address that
// routes to the rendezvous server. Returns null and sets *why when it
// cannot.
std::unique_ptr<RawComm> CreateRawGloo(double timeout_seconds, std::string* why);

}  // namespace hvdbench
