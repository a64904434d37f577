#include "core/common/traffic.h"

namespace hvd {

HostTraffic& Traffic() {
  static HostTraffic traffic;
  return traffic;
}

}  // namespace hvd
