#include "core/common/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace hvd {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::atomic<bool> g_hide_time{false};
std::atomic<int> g_rank{-1};

const char* LevelName(LogLevel l) {
  static const char* const kNames[] = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
  return kNames[static_cast<int>(l)];
}

}  // namespace

void SetLogConfig(LogLevel level, bool hide_time) {
  g_level = static_cast<int>(level);
  g_hide_time = hide_time;
}

void SetLogRank(int rank) {
  g_rank = rank;
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load();
}

LogMessage::~LogMessage() {
  char prefix[96];
  int rank = g_rank.load();
  std::string who = rank >= 0 ? "rank " + std::to_string(rank) : "hvd";
  if (g_hide_time) {
    std::snprintf(prefix, sizeof(prefix), "[%s]", who.c_str());
  } else {
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
    std::tm tm{};
    localtime_r(&t, &tm);
    char when[32];
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    std::snprintf(prefix, sizeof(prefix), "[%s.%03d %s]", when, static_cast<int>(ms.count()),
                  who.c_str());
  }
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "%s %s: %s\n", prefix, LevelName(level_), stream_.str().c_str());
}

}  // namespace hvd
