#include "core/common/env.h"

#include <cstdlib>
#include <string>

namespace hvd {

const char* GetEnv(const char* suffix) {
  const std::string hvd_name = std::string("HVD_") + suffix;
  if (const char* v = std::getenv(hvd_name.c_str())) return v;
  const std::string horovod_name = std::string("HOROVOD_") + suffix;
  return std::getenv(horovod_name.c_str());
}

const char* GetRawEnv(const char* name) {
  return std::getenv(name);
}

}  // namespace hvd
