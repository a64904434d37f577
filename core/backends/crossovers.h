// Sizes at which a transport's own algorithms change, which the data plane
// (core/dataplane/plan.h) needs as well: the size from which a set's
// allreduces leave the backend for the hierarchy or a ring. Header only, so
// hvdrun --explain reads the same figures (measurements: docs/scaling.md).
#pragma once

#include <cstdint>

namespace hvd {

// Up to this many bytes an allreduce runs Gloo's bcube (recursive halving and
// doubling: 2*log2(P) exchanges for P a power of 2) instead of its ring, which
// cuts the buffer into 2P segments and sends 2(P-1) of them one after another
// in each of its two phases. Every message wakes Gloo's event loop, which
// spins while this rank's own thread holds the pair's lock; on few cores that
// spinning, not the wire, sets a small ring's time, and it grows with the
// ring's message count. Bcube sends no more bytes per rank than the ring; the
// hierarchy takes over above it.
constexpr int64_t kGlooBcubeMaxBytes = 64 * 1024;

// Open MPI's flat allreduce (recursive doubling, then Rabenseifner) beats
// the hierarchy on small messages; from this size the hierarchy wins across
// hosts.
constexpr int64_t kMpiHierarchyMinBytes = int64_t{2} << 20;

}  // namespace hvd
