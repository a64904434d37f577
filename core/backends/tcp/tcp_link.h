// What the TCP set-ups of the control channel and of the cross-host ring
// share: a listener on this host's address, a random token that proves a
// connection comes from a member of the set (it travels over the set's own
// Comm), and connecting to an announced "host:port" with a greeting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/common/status.h"
#include "core/rendezvous/socket_util.h"

namespace hvd {

// Listens on `host` (a name or address of this host) at a free port;
// *where is "host:port" ("[v6]:port" for IPv6) for others to connect to.
Status ListenTcp(const std::string& host, rendezvous::UniqueFd* out, std::string* where);

// The size of the tokens the set-ups send (RandomToken(kTokenBytes)).
constexpr size_t kTokenBytes = 16;

// `bytes` unguessable bytes (/dev/urandom).
std::string RandomToken(size_t bytes);

// Connects to `where` ("host:port", as ListenTcp makes it), which listens
// already (a refusal fails at once), and writes `hello`.
Status ConnectAndGreet(const std::string& where, const std::string& hello,
                       rendezvous::Deadline deadline, rendezvous::UniqueFd* out);

// A greeting: magic, the sender's rank, and the token.
std::string Hello(uint32_t magic, int32_t rank, const std::string& token);

// Reads a greeting of `token_bytes` from `fd` and says whether it carries
// `magic` and `token`; *rank is the sender's rank.
bool ReadHello(int fd, uint32_t magic, const std::string& token, rendezvous::Deadline deadline,
               int32_t* rank);

}  // namespace hvd
