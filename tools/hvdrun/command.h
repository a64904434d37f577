// Turns "run this program as rank R on host H" into the argv hvdrun execs:
// the program itself for local ranks, or the remote shell wrapping it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/common/status.h"

namespace hvd {
namespace run {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Quotes s for a POSIX shell: 'it'\''s'.
std::string ShellQuote(const std::string& s);

// Splits a command like "ssh -i 'my key'" into words (single and double
// quotes group; no expansion).
Status SplitCommand(const std::string& text, std::vector<std::string>* words);

struct RemoteShell {
  std::vector<std::string> words;  // e.g. {"ssh", "-o", "BatchMode=yes"}
  bool is_ssh = true;              // ssh joins its arguments into one shell string
  int port = 0;
};

// From --ssh-command / --ssh-port. An empty command means default ssh.
Status MakeRemoteShell(const std::string& command, int port, RemoteShell* out);

// argv to run `command` on host with env set, in directory cwd:
//   ssh:   ssh -o BatchMode=yes [-p P] HOST 'cd CWD >/dev/null 2>&1; exec env K=V ... prog args'
//   other: CMD HOST sh -c 'cd "$1" >/dev/null 2>&1; shift; exec env "$@"' hvdrun CWD K=V ... prog
//   args
// (a failed cd is not fatal, as with horovodrun: the directory may not
// exist on the remote host).
std::vector<std::string> RemoteArgv(const RemoteShell& shell, const std::string& host,
                                    const std::string& cwd, const EnvList& env,
                                    const std::vector<std::string>& command);

}  // namespace run
}  // namespace hvd
