// The timeline file is valid JSON whenever its writer is killed: the layout
// (core/observability/trace_layout.h) is replayed write by write and cut at
// every page boundary the kernel may stop a write at, and a real writer is
// killed with SIGKILL while it is flooded with events.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/observability/timeline_writer.h"
#include "core/observability/trace_layout.h"

namespace hvd {
namespace {

// A JSON syntax check: enough to say whether json.load would accept a file.
class JsonCheck {
 public:
  static bool Valid(const std::string& s) {
    JsonCheck c(s);
    c.Space();
    if (!c.Value()) return false;
    c.Space();
    return c.i_ == s.size();
  }

 private:
  explicit JsonCheck(const std::string& s) : s_(s) {}
  bool At(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void Space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool Value() {
    if (At('{')) return Items('}', true);
    if (At('[')) return Items(']', false);
    if (At('"')) return String();
    const size_t start = i_;
    while (i_ < s_.size() && std::string("-+.eE0123456789").find(s_[i_]) != std::string::npos) ++i_;
    if (i_ > start) return true;
    for (const char* word : {"true", "false", "null"}) {
      if (s_.compare(i_, std::string(word).size(), word) == 0) {
        i_ += std::string(word).size();
        return true;
      }
    }
    return false;
  }
  bool Items(char close, bool object) {
    ++i_;
    Space();
    if (At(close)) return ++i_, true;
    for (;;) {
      Space();
      if (object) {
        if (!String()) return false;
        Space();
        if (!At(':')) return false;
        ++i_;
        Space();
      }
      if (!Value()) return false;
      Space();
      if (At(close)) return ++i_, true;
      if (!At(',')) return false;
      ++i_;
    }
  }
  bool String() {
    if (!At('"')) return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') {
        ++i_;
      } else if (s_[i_] == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  const std::string& s_;
  size_t i_ = 0;
};

TEST(JsonCheck, AcceptsWhatJsonLoadsAcceptsAndNoMore) {
  EXPECT_TRUE(JsonCheck::Valid("[\n]"));
  EXPECT_TRUE(JsonCheck::Valid("[\n{\"a\":1,\"b\":\"x\\\"]\"},\n{\"c\":[true,null]}  \n]   "));
  EXPECT_FALSE(JsonCheck::Valid("[\n{\"a\":1}\n] ]"));
  EXPECT_FALSE(JsonCheck::Valid("[\n{\"a\":1},\n{\"b\""));
  EXPECT_FALSE(JsonCheck::Valid("[\n{\"a\":1}   "));
  EXPECT_FALSE(JsonCheck::Valid(std::string("[\n{\"a\":1}\0\0]", 12)));  // a hole in the file
}

// Replays every write into a string and checks the file the kernel could
// leave: after each write, and cut at each page boundary inside it.
class ReplayFile : public TraceFile {
 public:
  explicit ReplayFile(int64_t page) : page_(page) {}
  bool WriteAt(int64_t offset, const std::string& bytes) override {
    for (int64_t cut = (offset / page_ + 1) * page_;
         cut < offset + static_cast<int64_t>(bytes.size()); cut += page_) {
      Check(Apply(content_, offset, bytes.substr(0, static_cast<size_t>(cut - offset))), false);
    }
    content_ = Apply(content_, offset, bytes);
    Check(content_, bytes == " ");
    return true;
  }
  bool Truncate(int64_t size) override {
    content_.resize(static_cast<size_t>(size));
    Check(content_, false);
    return true;
  }
  const std::string& content() const { return content_; }
  int windows() const { return windows_; }
  int torn() const { return torn_; }

 private:
  static std::string Apply(std::string file, int64_t offset, const std::string& bytes) {
    // A write past the end leaves a hole of zero bytes, as the kernel does.
    if (file.size() < offset + bytes.size()) file.resize(offset + bytes.size(), '\0');
    file.replace(static_cast<size_t>(offset), bytes.size(), bytes);
    return file;
  }
  // Only the write that turns the old bracket into a space may follow an
  // invalid file: that is the documented window of a growth or a close.
  void Check(const std::string& file, bool ends_window) {
    const bool valid = JsonCheck::Valid(file);
    if (invalid_ && !ends_window) ++torn_;
    if (invalid_ && ends_window) ++windows_;
    invalid_ = !valid;
  }
  int64_t page_;
  std::string content_;
  bool invalid_ = false;
  int windows_ = 0;
  int torn_ = 0;
};

// The file without its spaces: what the layout adds besides the events.
std::string WithoutSpaces(std::string file) {
  file.erase(std::remove(file.begin(), file.end(), ' '), file.end());
  return file;
}

std::string Event(int i) {
  // 24..62 bytes with its separator: two or three to a 128-byte page.
  return "{\"name\":\"t" + std::to_string(i) + "\",\"ts\":" + std::to_string(i) + ",\"pad\":\"" +
         std::string(static_cast<size_t>(i * 7 % 29), 'x') + "\"}";
}

TEST(TraceLayout, EveryPageCutLeavesValidJsonOutsideTheBracketMoves) {
  TraceLayout::Options options;
  options.page = 128;
  options.min_reserve = 256;
  options.max_reserve = 1024;
  TraceLayout layout(options);
  ReplayFile file(options.page);
  ASSERT_TRUE(layout.Start(&file));
  std::string expected = "[";
  int next = 0;
  for (int batch : {1, 0, 3, 40, 7, 200, 1, 90}) {
    std::vector<std::string> events;
    for (int i = 0; i < batch; ++i, ++next) {
      events.push_back(Event(next));
      expected += (next == 0 ? "\n" : ",\n") + events.back();
    }
    ASSERT_TRUE(layout.Append(events, &file));
    ASSERT_TRUE(JsonCheck::Valid(file.content()));
  }
  ASSERT_TRUE(layout.Finish(&file));
  expected += "\n]";
  EXPECT_EQ(file.torn(), 0);
  // One window per growth (256 spaces, doubling up to 1024) and one at Finish.
  EXPECT_GE(file.windows(), 3);
  EXPECT_LE(file.windows(), 4 + static_cast<int>(file.content().size() / options.max_reserve));
  // The events in order, the bracket right after the last one.
  ASSERT_EQ(file.content().substr(file.content().size() - 2), "\n]");
  EXPECT_EQ(WithoutSpaces(file.content()), expected);

  // Finish is idempotent.
  ASSERT_TRUE(layout.Finish(&file));
  EXPECT_EQ(file.content().substr(file.content().size() - 2), "\n]");
}

// Small pages and reserves put the data's end at every distance from the
// bracket and from a page boundary when Finish runs (7200 layouts).
TEST(TraceLayout, FinishEndsTheArrayWhereverTheDataStops) {
  for (int64_t page : {8, 16, 24, 32}) {
    for (int64_t reserve : {2, 3, 4, 5, 8, 13}) {
      for (int count = 1; count <= 60; ++count) {
        for (int variant = 0; variant < 5; ++variant) {
          TraceLayout::Options options;
          options.page = page;
          options.min_reserve = reserve;
          options.max_reserve = 2 * reserve;
          TraceLayout layout(options);
          ReplayFile file(page);
          ASSERT_TRUE(layout.Start(&file));
          std::string expected = "[";
          for (int i = 0; i < count; ++i) {
            // 7-9 bytes, so that the data's end falls at every offset.
            const std::string event =
                "{\"a\":" + std::to_string((i * 37 + variant * 11) % 1000) + "}";
            expected += (i == 0 ? "\n" : ",\n") + event;
            ASSERT_TRUE(layout.Append({event}, &file));
          }
          ASSERT_TRUE(layout.Finish(&file));
          ASSERT_EQ(WithoutSpaces(file.content()), expected + "\n]")
              << "page " << page << ", reserve " << reserve << ", " << count << " events";
          // Events longer than a page (8-byte pages) may tear; the others never.
          if (page >= 16) {
            ASSERT_EQ(file.torn(), 0) << "page " << page << ", reserve " << reserve;
          }
        }
      }
    }
  }
}

TEST(TraceLayout, AnEmptyTimelineIsAnEmptyArray) {
  TraceLayout layout{TraceLayout::Options()};
  ReplayFile file(4096);
  ASSERT_TRUE(layout.Start(&file));
  ASSERT_TRUE(layout.Append({}, &file));
  ASSERT_TRUE(layout.Finish(&file));
  EXPECT_EQ(file.content(), "[\n]");
  EXPECT_EQ(file.torn() + file.windows(), 0);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The real writer, flooded, killed at 30 different moments: every file parses.
TEST(TimelineWriter, AWriterKilledWhileFloodedLeavesValidJson) {
  const std::string path = ::testing::TempDir() + "/tl_kill." + std::to_string(getpid()) + ".json";
  int big = 0;
  for (int round = 0; round < 30; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TimelineWriter writer;
      if (!writer.Open(path).ok()) std::_Exit(2);
      for (int64_t i = 0;; ++i) {
        TraceEvent e;
        e.phase = (i % 2) ? 'E' : 'B';
        e.pid = 1 + static_cast<int>(i % 50);
        e.ts_us = i;
        e.name = "tensor." + std::to_string(i % 997);
        writer.Push(std::move(e));
        // About 2 M events a second: the writer is always busy, the queue bounded.
        if (i % 2000 == 1999) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(60 + (round * 37) % 100));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "round " << round << ": the writer exited on its own";
    const std::string file = ReadFile(path);
    EXPECT_TRUE(JsonCheck::Valid(file)) << "round " << round << ": " << file.size() << " bytes";
    big += file.size() > 100000 ? 1 : 0;
  }
  std::remove(path.c_str());
  EXPECT_EQ(big, 30) << "some rounds were killed before the file held 100 kB of events";
}

}  // namespace
}  // namespace hvd
