// Elastic mode (core/rendezvous/elastic.h), callable before Init.
#include "core/rendezvous/elastic.h"

#include "core/api/api.h"
#include "core/common/config.h"
#include "core/runtime/runtime.h"

namespace hvd {
namespace api {
namespace {

// The settings in effect: Init's while initialised, else the environment's.
// An invalid environment reads as "not elastic": Init will report it.
Config CurrentConfig() {
  if (Runtime::Get().initialized()) return Runtime::Get().config();
  Config c;
  if (!Config::FromEnvironment(&c).ok()) c = Config();
  return c;
}

}  // namespace

bool ElasticEnabled() {
  return CurrentConfig().elastic;
}

int64_t ElasticRound() {
  return elastic::CurrentRound();
}

Status ElasticHostsUpdated(bool* updated) {
  const Config c = CurrentConfig();
  return elastic::HostsUpdated(c.elastic, c.launch.rendezvous, updated);
}

}  // namespace api
}  // namespace hvd
