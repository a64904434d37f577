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
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), "9", &hints, &res);
  if (rc != 0) {
    return Status::Invalid("cannot resolve host '" + host + "' (" + gai_strerror(rc) +
                           ") to choose the rendezvous address; pass --network-interface");
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, &freeaddrinfo);
  rendezvous::UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), res->ai_addr, res->ai_addrlen) != 0) {
    return Status::Invalid("no route to host '" + host + "': " + rendezvous::ErrnoString(errno));
  }
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return Status::Backend("getsockname: " + rendezvous::ErrnoString(errno));
  }
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf));
  *address = buf;
  return Status::OK();
}

}  // namespace run
}  // namespace hvd
