// WantDuplexTcp: when hvd asks Open MPI for full-duplex TCP before MPI_Init
// (core/backends/mpi/mpi_tcp_defaults.h), with injected environments and
// parameter files. tests/mp/mpi_tcp_flags_test.cc checks that Open MPI
// then really runs with it.
#ifdef HVD_HAVE_MPI
#include "core/backends/mpi/mpi_tcp_defaults.h"

#include <gtest/gtest.h>

#include <map>

namespace hvd {
namespace {

using Strings = std::map<std::string, std::string>;

bool Want(const Strings& env, const Strings& files) {
  return WantDuplexTcp(
      [&](const char* n) {
        auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [&](const std::string& f) {
        auto it = files.find(f);
        return it == files.end() ? std::string() : it->second;
      });
}

const char* kSystem = "/etc/openmpi/openmpi-mca-params.conf";

TEST(DuplexTcp, WantedWhenNothingIsSet) {
  EXPECT_TRUE(Want({{"HOME", "/root"}}, {}));
  EXPECT_TRUE(Want({}, {{kSystem, "btl_tcp_if_include = eth0\n"}}));
}

TEST(DuplexTcp, NotOverTheUsersEnvironment) {
  EXPECT_FALSE(Want({{"OMPI_MCA_btl_tcp_flags", "send,put"}}, {}));
  // Several links per pair hang with the send protocol (tools/hvdrun/mpi_launch.cc).
  EXPECT_FALSE(Want({{"OMPI_MCA_btl_tcp_links", "2"}}, {}));
}

TEST(DuplexTcp, NotOverTheDefaultParameterFiles) {
  EXPECT_FALSE(Want({}, {{kSystem, "# tuned\n  btl_tcp_flags = send,put\n"}}));
  EXPECT_FALSE(
      Want({{"HOME", "/home/u"}}, {{"/home/u/.openmpi/mca-params.conf", "btl_tcp_links=4"}}));
  // Comments, other names and names that only start alike do not count.
  EXPECT_TRUE(
      Want({}, {{kSystem, "# btl_tcp_flags = send,put\nbtl_tcp_flags_x = 1\nx = btl_tcp_links"}}));
}

TEST(DuplexTcp, MpiParamFilesReplaceTheDefaults) {
  const Strings files = {{kSystem, "btl_tcp_flags = send,put"}, {"/b", "btl_tcp_links = 2"}};
  EXPECT_TRUE(Want({{"OMPI_MCA_mca_param_files", "/a"}}, files));
  EXPECT_FALSE(Want({{"OMPI_MCA_mca_param_files", "/a:/b"}}, files));
}

// The cross-host ring's pieces: eager-sized under the put flag (Open MPI's
// default, 0x3f with send, inplace and the checks), else the preferred size.
TEST(RingPieceBytes, EagerSizedOnlyUnderPut) {
  EXPECT_EQ(RingPieceBytesFor(0x3f, 65536, 262144), 61440);
  EXPECT_EQ(RingPieceBytesFor(0x2, 131072, 262144), 122880);
  EXPECT_EQ(RingPieceBytesFor(0x2, 1 << 20, 262144), 262144);  // never larger
  EXPECT_EQ(RingPieceBytesFor(0x1, 65536, 262144), 262144);    // send only
  EXPECT_EQ(RingPieceBytesFor(-1, 65536, 262144), 262144);     // not Open MPI's TCP
  EXPECT_EQ(RingPieceBytesFor(0x3f, -1, 262144), 262144);
}

}  // namespace
}  // namespace hvd
#endif
