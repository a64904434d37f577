// The checks one rank of a Gloo job runs against CreateGlooWorld, shared by
// the forked in-process test and the program hvdrun starts.
#pragma once

namespace hvd {
namespace testing {

// Reads the launcher environment (HVD_RANK, HVD_RENDEZVOUS_*...), creates the
// world twice (shutdown + init) and checks collectives and a split against
// exact values. Returns 0 on success, 1 after printing what failed.
int RunWorldChecks(int rank, int size);

}  // namespace testing
}  // namespace hvd
