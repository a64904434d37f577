// main() of the multi-process GoogleTest programs whose tests run between
// hvd_init and hvd_shutdown: a failed init or shutdown fails the program.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "hvd/hvd.h"

namespace hvdtest {

inline int RunTestsWithHvd(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error());
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  if (hvd_shutdown() != HVD_OK) {
    std::fprintf(stderr, "hvd_shutdown failed: %s\n", hvd_last_error());
    rc = 1;
  }
  return rc;
}

}  // namespace hvdtest
