#include "tools/hvdrun/net.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
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

Status InterfaceAddress(const std::string& interface, std::string* address) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Status::Backend("getifaddrs: " + rendezvous::ErrnoString(errno));
  }
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, &freeifaddrs);
  bool exists = false;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_name == nullptr || interface != it->ifa_name) continue;
    exists = true;
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    auto* sin = reinterpret_cast<sockaddr_in*>(it->ifa_addr);
    inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf));
    *address = buf;
    return Status::OK();
  }
  return Status::Invalid("network interface '" + interface + "' " +
                         (exists ? "has no IPv4 address" : "does not exist"));
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
