// horovodrun's flags that tune the ranks rather than the launch
// (--fusion-threshold-mb, --timeline-filename, --log-level, ...): each sets
// one HVD_* variable in every rank's environment, overriding the variable
// inherited from hvdrun's environment, as horovodrun's flags do.
#pragma once

#include <functional>
#include <string>

#include "core/common/status.h"
#include "tools/hvdrun/command.h"

namespace hvd {
namespace run {

// If `flag` is one of these flags, takes its value (when it has one) through
// `take`, checks it and sets its variable in *env (appended, or replacing
// the value a previous flag gave it); *matched says whether it was one of
// them. Errors are one line for "hvdrun: <message>".
Status ParseTuningFlag(const std::string& flag, const std::function<Status(std::string*)>& take,
                       bool* matched, EnvList* env);

// The --help lines of these flags.
std::string TuningFlagsHelp();

}  // namespace run
}  // namespace hvd
