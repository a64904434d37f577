// `hvdrun --check-build`: which backends this build of hvd has.
#pragma once

#include <string>

namespace hvd {
namespace run {

// The report, in the layout of `horovodrun --check-build`.
std::string CheckBuildReport();

}  // namespace run
}  // namespace hvd
