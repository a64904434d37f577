#include "tools/hvdrun/command.h"

namespace hvd {
namespace run {

std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,+@%") == std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

Status SplitCommand(const std::string& text, std::vector<std::string>* words) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote != 0) return Status::Invalid("unterminated quote in '" + text + "'");
  if (in_word) out.push_back(cur);
  if (out.empty()) return Status::Invalid("empty command");
  *words = std::move(out);
  return Status::OK();
}

Status MakeRemoteShell(const std::string& command, int port, RemoteShell* out) {
  RemoteShell shell;
  if (command.empty()) {
    shell.words = {"ssh", "-o", "BatchMode=yes"};
  } else {
    HVD_RETURN_IF_ERROR(SplitCommand(command, &shell.words));
  }
  const std::string& first = shell.words[0];
  std::string base = first.substr(first.rfind('/') == std::string::npos ? 0 : first.rfind('/') + 1);
  shell.is_ssh = base == "ssh";
  shell.port = port;
  if (port != 0 && !shell.is_ssh) {
    return Status::Invalid("--ssh-port needs an ssh remote shell, not '" + first + "'");
  }
  *out = std::move(shell);
  return Status::OK();
}

std::vector<std::string> RemoteArgv(const RemoteShell& shell, const std::string& host,
                                    const std::string& cwd, const EnvList& env,
                                    const std::vector<std::string>& command) {
  std::vector<std::string> argv = shell.words;
  if (shell.is_ssh && shell.port != 0) {
    argv.push_back("-p");
    argv.push_back(std::to_string(shell.port));
  }
  argv.push_back(host);
  if (shell.is_ssh) {
    std::string script = "cd " + ShellQuote(cwd) + " >/dev/null 2>&1; exec env";
    for (const auto& kv : env) script += " " + ShellQuote(kv.first + "=" + kv.second);
    for (const auto& word : command) script += " " + ShellQuote(word);
    argv.push_back(script);
    return argv;
  }
  argv.insert(argv.end(),
              {"sh", "-c", "cd \"$1\" >/dev/null 2>&1; shift; exec env \"$@\"", "hvdrun", cwd});
  for (const auto& kv : env) argv.push_back(kv.first + "=" + kv.second);
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace run
}  // namespace hvd
