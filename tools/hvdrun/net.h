// Network facts hvdrun needs: which hosts are this machine, and which local
// address the ranks can reach the rendezvous store on.
#pragma once

#include <string>

#include "core/common/status.h"

namespace hvd {
namespace run {

// localhost, 127.0.0.1, ::1 or this machine's host name (short or full).
bool IsLocalHost(const std::string& host);

// The local address the kernel would use to reach host: connecting a UDP
// socket sends nothing, it only picks the route and the source address.
Status RouteAddressTo(const std::string& host, std::string* address);

}  // namespace run
}  // namespace hvd
