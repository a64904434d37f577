// Under a plain mpirun, hvd_init asks Open MPI for full-duplex TCP
// (btl_tcp_flags=send, core/backends/mpi/mpi_tcp_defaults.h) unless the
// launch chose the flags: this reads the value Open MPI runs with back
// through the MPI tool interface. HVD_TEST_TCP_FLAGS is the expected value
// (Open MPI's bits: send 0x1, put 0x2).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/backends/mpi/mpi_cvar.h"
#include "hvd/hvd.h"
#include "hvd_test_main.h"

namespace {

TEST(MpiTcpFlags, OpenMpiRunsWithTheExpectedFlags) {
  const char* expected = std::getenv("HVD_TEST_TCP_FLAGS");
  ASSERT_NE(expected, nullptr) << "set HVD_TEST_TCP_FLAGS";
  const long long got = hvd::ReadMpiCvar("btl_tcp_flags");
  ASSERT_GE(got, 0) << "Open MPI has no btl_tcp_flags control variable (TCP transport not opened?)";
  const char* launch = std::getenv("OMPI_MCA_btl_tcp_flags");
  EXPECT_EQ(got, std::strtoll(expected, nullptr, 0))
      << "OMPI_MCA_btl_tcp_flags=" << (launch ? launch : "(unset)");
}

}  // namespace

int main(int argc, char** argv) {
  return hvdtest::RunTestsWithHvd(argc, argv);
}
