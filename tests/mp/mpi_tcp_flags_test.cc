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

#include "hvd/hvd.h"
#include "hvd_test_main.h"

namespace {

// The control variable `name` as an unsigned int, or -1 when Open MPI has none.
long long ReadCvar(const char* name) {
  int provided = 0, count = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return -1;
  MPI_T_cvar_get_num(&count);
  long long value = -1;
  for (int i = 0; i < count && value < 0; ++i) {
    char n[256], desc[256];
    int nlen = sizeof n, dlen = sizeof desc, verbosity = 0, bind = 0, scope = 0, elements = 0;
    MPI_Datatype dt;
    MPI_T_enum en;
    if (MPI_T_cvar_get_info(i, n, &nlen, &verbosity, &dt, &en, desc, &dlen, &bind, &scope) !=
            MPI_SUCCESS ||
        std::strcmp(n, name) != 0 || dt != MPI_UNSIGNED) {
      continue;
    }
    MPI_T_cvar_handle h;
    unsigned v = 0;
    if (MPI_T_cvar_handle_alloc(i, nullptr, &h, &elements) == MPI_SUCCESS) {
      if (MPI_T_cvar_read(h, &v) == MPI_SUCCESS) value = v;
      MPI_T_cvar_handle_free(&h);
    }
  }
  MPI_T_finalize();
  return value;
}

TEST(MpiTcpFlags, OpenMpiRunsWithTheExpectedFlags) {
  const char* expected = std::getenv("HVD_TEST_TCP_FLAGS");
  ASSERT_NE(expected, nullptr) << "set HVD_TEST_TCP_FLAGS";
  const long long got = ReadCvar("btl_tcp_flags");
  ASSERT_GE(got, 0) << "Open MPI has no btl_tcp_flags control variable (TCP transport not opened?)";
  const char* launch = std::getenv("OMPI_MCA_btl_tcp_flags");
  EXPECT_EQ(got, std::strtoll(expected, nullptr, 0))
      << "OMPI_MCA_btl_tcp_flags=" << (launch ? launch : "(unset)");
}

}  // namespace

int main(int argc, char** argv) {
  return hvdtest::RunTestsWithHvd(argc, argv);
}
