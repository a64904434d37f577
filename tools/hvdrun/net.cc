#include "tools/hvdrun/net.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "core/rendezvous/socket_util.h"

namespace hvd {
namespace run {

bool IsLocalHost(const std::string& host) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return false;
  std::string full(name);
  std::string short_name = full.substr(0, full.find('.'));
  return host == full || host == short_name;
}

Status RouteAddressTo(const std::string& host, std::string* address) {
  Status st = rendezvous::LocalAddressTowards(host, "9", address);
  if (!st.ok()) {
    return Status::Invalid(st.message() +
                           " (choosing the rendezvous address; pass --network-interface)");
  }
  return st;
}

}  // namespace run
}  // namespace hvd
