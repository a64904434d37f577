// The negotiation's channel over MPI (core/backends/mpi/mpi_channel.h) at
// 2-4 ranks of one host: woken through its wake sockets, so a rank that
// waits for a message can sleep in poll(), and only a rank that sleeps is
// sent a wake-up; every message arrives whole and
// in order per peer, large ones (beyond MPI's eager limit) included; and
// where one rank cannot use a wake socket, all ranks fall back to polling
// together.
#include <gtest/gtest.h>
#include <mpi.h>
#include <poll.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backends/mpi/mpi_channel.h"
#include "core/backends/mpi/wake_socket.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

int Rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int Size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::unique_ptr<ControlChannel> Open(bool try_wake) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  std::unique_ptr<ControlChannel> ch;
  const Status s = MpiChannel::Create(dup, try_wake, &ch);
  EXPECT_TRUE(s.ok()) << s.message();
  return ch;
}

// Sleeps as the set's loop does: in poll() on the channel's descriptors
// when it has them and needs no polling, else in a short nap.
enum class Slept { kWoken, kTimedOut, kNapped };
Slept SleepLikeTheLoop(ControlChannel& ch, int timeout_ms) {
  std::vector<ControlChannel::PollFd> fds;
  ch.PollFds(&fds);
  if (ch.needs_polling() || fds.empty()) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return Slept::kNapped;
  }
  if (!ch.PrepareToSleep()) return Slept::kNapped;  // a message is in: look again
  std::vector<pollfd> p;
  for (const auto& f : fds) p.push_back({f.fd, POLLIN, 0});
  const int n = ::poll(p.data(), p.size(), timeout_ms);
  ch.Awake();
  return n > 0 ? Slept::kWoken : Slept::kTimedOut;
}

// Receives until `want` messages arrived or `seconds` passed. A sleep that
// ends by its timeout is a lost wake-up: the peer sent long before it.
std::vector<ChannelMessage> ReceiveN(ControlChannel& ch, size_t want, double seconds) {
  std::vector<ChannelMessage> got;
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (got.size() < want && Clock::now() < until) {
    const Status s = ch.Receive(&got);
    EXPECT_TRUE(s.ok()) << s.message();
    if (got.size() < want) {
      EXPECT_NE(SleepLikeTheLoop(ch, 5000), Slept::kTimedOut) << "a wake-up was lost";
    }
  }
  return got;
}

// Two ranks' wake sockets in this process: a wake-up is sent only to a
// rank whose flag says it sleeps.
TEST(WakeSocket, WakesOnlyARankThatSleeps) {
  const uint64_t token = 0x7e57000000000000ull + static_cast<uint64_t>(Rank());
  std::unique_ptr<WakeSocket> a, b;
  ASSERT_TRUE(WakeSocket::Open(token, 0, 2, &a).ok());
  ASSERT_TRUE(WakeSocket::Open(token, 1, 2, &b).ok());
  ASSERT_TRUE(a->Introduce());
  ASSERT_TRUE(b->Introduce());
  ASSERT_TRUE(a->Introduced());
  ASSERT_TRUE(b->Introduced());
  EXPECT_TRUE(a->Wake(1));
  EXPECT_EQ(b->Drain(), 0) << "woke a rank that does not sleep";
  b->SetSleeping(true);
  EXPECT_TRUE(a->Wake(1));
  EXPECT_TRUE(a->Wake(1));
  EXPECT_EQ(b->Drain(), 2);
  b->SetSleeping(false);
  a->SetSleeping(true);
  EXPECT_TRUE(b->Wake(0));
  EXPECT_EQ(a->Drain(), 1);
  EXPECT_EQ(b->Drain(), 0);
  // A rank with no socket (another process that has not bound one).
  std::unique_ptr<WakeSocket> c;
  ASSERT_TRUE(WakeSocket::Open(token + 1000, 0, 2, &c).ok());
  EXPECT_FALSE(c->Introduce());
}

TEST(MpiChannel, SleepsUntilAMessageWakesIt) {
  auto ch = Open(true);
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->description(), "MPI messages, woken by a local socket");
  std::vector<ControlChannel::PollFd> fds;
  ch->PollFds(&fds);
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_FALSE(ch->needs_polling());
  if (Rank() == 0) {
    // The members are asleep in poll() by now: only the wake-up ends it.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int r = 1; r < Size(); ++r) {
      ASSERT_TRUE(ch->Send(r, "decision for " + std::to_string(r)).ok());
    }
    auto got = ReceiveN(*ch, static_cast<size_t>(Size() - 1), 30);
    ASSERT_EQ(got.size(), static_cast<size_t>(Size() - 1));
    for (const auto& m : got) EXPECT_EQ(m.bytes, "report of " + std::to_string(m.from));
  } else {
    const auto start = Clock::now();
    std::vector<ChannelMessage> got;
    ASSERT_TRUE(ch->Receive(&got).ok());
    EXPECT_TRUE(got.empty());
    // One poll() with a long timeout: it returns because of the wake-up.
    EXPECT_EQ(SleepLikeTheLoop(*ch, 20000), Slept::kWoken) << "poll() timed out: no wake-up";
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(15));
    got = ReceiveN(*ch, 1, 30);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].from, 0);
    EXPECT_EQ(got[0].bytes, "decision for " + std::to_string(Rank()));
    ASSERT_TRUE(ch->Send(0, "report of " + std::to_string(Rank())).ok());
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Every member sends kCount reports to rank 0, which answers each with a
// decision to every member; sizes cycle through 0 B to 256 KiB. A rank
// that has nothing to read sleeps as the loop does; a sleep that lasts
// its whole timeout means a lost wake-up.
void ExchangeInOrder(ControlChannel& ch) {
  constexpr int kCount = 300;
  auto payload = [](int from, int i) {
    const size_t sizes[] = {0, 7, 1000, 70000, 262144};
    std::string s(sizes[i % 5], static_cast<char>('a' + (from + i) % 26));
    return std::to_string(from) + ":" + std::to_string(i) + ":" + s;
  };
  const int n = Size();
  std::map<int, int> next;  // per sender: the index expected next
  // Rank 0 answers every report to every member.
  const size_t expected = static_cast<size_t>(kCount) * (n - 1);
  size_t received = 0;
  int sent = 0;
  const auto until = Clock::now() + std::chrono::seconds(120);
  while (received < expected && Clock::now() < until) {
    if (Rank() != 0 && sent < kCount) {
      ASSERT_TRUE(ch.Send(0, payload(Rank(), sent++)).ok());
    }
    std::vector<ChannelMessage> got;
    ASSERT_TRUE(ch.Receive(&got).ok());
    for (const auto& m : got) {
      ASSERT_EQ(m.bytes, payload(m.from, next[m.from]++)) << "from " << m.from;
      if (Rank() == 0) {
        for (int r = 1; r < n; ++r) ASSERT_TRUE(ch.Send(r, payload(0, sent)).ok());
        ++sent;
      }
    }
    received += got.size();
    if (got.empty() && received < expected) {
      ASSERT_NE(SleepLikeTheLoop(ch, 5000), Slept::kTimedOut) << "a wake-up was lost";
    }
  }
  EXPECT_EQ(received, expected) << "rank " << Rank();
}

TEST(MpiChannel, EveryMessageArrivesInOrderWhileRanksSleep) {
  auto ch = Open(true);
  ASSERT_TRUE(ch);
  ExchangeInOrder(*ch);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiChannel, AllRanksPollWhenOneCannotBeWoken) {
  auto ch = Open(Rank() != Size() - 1);
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->description(), "MPI messages, polled");
  std::vector<ControlChannel::PollFd> fds;
  ch->PollFds(&fds);
  EXPECT_TRUE(fds.empty());
  EXPECT_TRUE(ch->needs_polling());
  ExchangeInOrder(*ch);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace hvd
