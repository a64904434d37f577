// SharedBuffers and PeerBuffers (core/dataplane/decorators/shared_buffers.h):
// buffers are zero-filled, named in /dev/shm while they live and gone after
// Free; bad arguments are errors naming the call; Find answers for ranges
// inside a buffer only; a process's buffers can be mapped by (pid, id), with
// out-of-range and unknown buffers refused; an allocation removes the names
// of processes that are gone; a forked child freeing its copy of a buffer
// leaves the parent's name.
#include "core/dataplane/decorators/shared_buffers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace hvd {
namespace {

bool InDevShm(const std::string& name) {
  return ::access(("/dev/shm" + name).c_str(), F_OK) == 0;
}

TEST(SharedBuffers, ZeroFilledNamedWhileTheyLiveAndFreedOnce) {
  void* p = nullptr;
  ASSERT_TRUE(SharedBuffers::Alloc(10000, &p).ok());
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(SharedBuffers::Any());
  const auto* bytes = static_cast<const uint8_t*>(p);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0) << i;
  const auto at = reinterpret_cast<uint64_t>(p);
  SharedRef ref;
  ASSERT_TRUE(SharedBuffers::Find(at + 100, 9900, &ref));
  EXPECT_EQ(ref.offset, 100u);
  EXPECT_FALSE(SharedBuffers::Find(at + 100, 9901, &ref));  // past its end
  EXPECT_FALSE(SharedBuffers::Find(at - 1, 1, &ref));
  const std::string name = SharedBuffers::Name(static_cast<int32_t>(::getpid()), ref.id);
  EXPECT_TRUE(InDevShm(name)) << name;

  const uint64_t frees = SharedBuffers::Frees();
  ASSERT_TRUE(SharedBuffers::Free(p).ok());
  EXPECT_EQ(SharedBuffers::Frees(), frees + 1);
  EXPECT_FALSE(InDevShm(name)) << name;
  EXPECT_FALSE(SharedBuffers::Find(at, 1, &ref));
  const Status twice = SharedBuffers::Free(p);
  EXPECT_EQ(twice.code(), Code::kInvalidArgument);
  EXPECT_NE(twice.message().find("hvd_free_shared: 0x"), std::string::npos) << twice.message();
  EXPECT_NE(twice.message().find("freed already"), std::string::npos) << twice.message();
}

TEST(SharedBuffers, BadArgumentsAreErrors) {
  void* p = &p;
  Status s = SharedBuffers::Alloc(0, &p);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "hvd_alloc_shared: 0 bytes");
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(SharedBuffers::Alloc(-8, &p).message(), "hvd_alloc_shared: -8 bytes");
  s = SharedBuffers::Alloc(8, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("NULL"), std::string::npos) << s.message();
  EXPECT_TRUE(SharedBuffers::Free(nullptr).ok());  // as free(NULL)
  int local = 0;
  EXPECT_EQ(SharedBuffers::Free(&local).code(), Code::kInvalidArgument);
}

TEST(PeerBuffers, MapsByPidAndIdWithinTheBufferOnly) {
  void* p = nullptr;
  ASSERT_TRUE(SharedBuffers::Alloc(4096, &p).ok());
  SharedRef ref;
  ASSERT_TRUE(SharedBuffers::Find(reinterpret_cast<uint64_t>(p), 4096, &ref));
  const auto pid = static_cast<int32_t>(::getpid());
  PeerBuffers peers;
  uint8_t* there = nullptr;
  ref.offset = 16;
  ASSERT_TRUE(peers.Map(pid, ref, 64, &there).ok());
  there[0] = 42;  // the same memory, mapped twice
  EXPECT_EQ(static_cast<uint8_t*>(p)[16], 42);
  Status s = peers.Map(pid, ref, 4096, &there);  // 16 + 4096 > 4096
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("are outside /hvd-buf."), std::string::npos) << s.message();
  peers.Forget(pid);
  ASSERT_TRUE(peers.Map(pid, ref, 8, &there).ok());
  EXPECT_EQ(there[0], 42);
  SharedRef unknown{ref.id + 1000000, 0};
  s = peers.Map(pid, unknown, 8, &there);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("shm_open(/hvd-buf."), std::string::npos) << s.message();
  ASSERT_TRUE(SharedBuffers::Free(p).ok());
}

// A name left by a process that is gone (a dead child's pid) is removed by
// the next allocation; a live process's stays.
TEST(SharedBuffers, AllocationRemovesNamesOfProcessesThatAreGone) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string dead = SharedBuffers::Name(static_cast<int32_t>(child), 7);
  const std::string alive = SharedBuffers::Name(static_cast<int32_t>(::getppid()), 99999999);
  for (const std::string& name : {dead, alive}) {
    const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << name;
    ::close(fd);
  }
  void* p = nullptr;
  ASSERT_TRUE(SharedBuffers::Alloc(64, &p).ok());
  EXPECT_FALSE(InDevShm(dead)) << dead;
  EXPECT_TRUE(InDevShm(alive)) << alive;
  ::shm_unlink(alive.c_str());
  ASSERT_TRUE(SharedBuffers::Free(p).ok());
}

TEST(SharedBuffers, AForkedChildFreeingItsCopyLeavesTheName) {
  void* p = nullptr;
  ASSERT_TRUE(SharedBuffers::Alloc(4096, &p).ok());
  SharedRef ref;
  ASSERT_TRUE(SharedBuffers::Find(reinterpret_cast<uint64_t>(p), 1, &ref));
  const std::string name = SharedBuffers::Name(static_cast<int32_t>(::getpid()), ref.id);
  const pid_t child = ::fork();
  if (child == 0) ::_exit(SharedBuffers::Free(p).ok() ? 0 : 1);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(InDevShm(name)) << name;
  ASSERT_TRUE(SharedBuffers::Free(p).ok());
  EXPECT_FALSE(InDevShm(name)) << name;
}

}  // namespace
}  // namespace hvd
