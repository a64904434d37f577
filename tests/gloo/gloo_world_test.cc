// CreateGlooWorld end to end without hvdrun: this process hosts the real
// rendezvous KV server, forked children play the ranks with the environment
// hvdrun would give them, and each child's exit code is its verdict.
#include "core/backends/gloo/gloo_world.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/common/config.h"
#include "core/rendezvous/kv_server.h"
#include "tests/gloo/world_check.h"

namespace hvd {
namespace {

const char kSecret[] = "gloo-world-test-secret";

std::string Hex(const std::string& s) {
  static const char d[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

int ChildMain(int rank, int size, int port) {
  setenv("HVD_RANK", std::to_string(rank).c_str(), 1);
  setenv("HVD_SIZE", std::to_string(size).c_str(), 1);
  setenv("HVD_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("HVD_RENDEZVOUS_PORT", std::to_string(port).c_str(), 1);
  setenv("HVD_RENDEZVOUS_SECRET", Hex(kSecret).c_str(), 1);
  return testing::RunWorldChecks(rank, size);
}

void RunJob(int size) {
  // Fork before any thread exists in this process (the server's included);
  // children learn the server's port through a pipe.
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int r = 0; r < size; ++r) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[1]);
      int port = 0;
      if (read(fds[0], &port, sizeof(port)) != sizeof(port)) _exit(3);
      _exit(ChildMain(r, size, port));
    }
    close(fds[0]);
    pids.push_back(pid);
    pipes.push_back(fds[1]);
  }
  rendezvous::KVServer server;
  Status s = server.Start("127.0.0.1", 0, kSecret);
  ASSERT_TRUE(s.ok()) << s.message();
  const int port = server.port();
  for (int fd : pipes) {
    EXPECT_EQ(write(fd, &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
    close(fd);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t p : pids) kill(p, SIGKILL);  // only our own children
        waitpid(pids[r], &status, 0);
        ADD_FAILURE() << "rank " << r << " hung";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << r << " status " << status;
  }
}

TEST(GlooWorld, TwoRanksTwoGenerations) {
  RunJob(2);
}
TEST(GlooWorld, ThreeRanksTwoGenerations) {
  RunJob(3);
}

TEST(GlooWorld, SingleRankWithoutLauncher) {
  unsetenv("HVD_RENDEZVOUS_ADDR");
  unsetenv("HVD_RANK");
  unsetenv("HVD_SIZE");
  std::unique_ptr<Comm> world;
  CommInitArgs args;
  ASSERT_TRUE(CreateGlooWorld(args, &world).ok());
  EXPECT_EQ(world->size(), 1);
  float f = 2.5f;
  ASSERT_TRUE(world->Allreduce({&f, 1, DataType::kFloat32, ReduceOp::kSum}).ok());
  EXPECT_EQ(f, 2.5f);
}

TEST(GlooWorld, ManyRanksWithoutLauncherIsAnError) {
  unsetenv("HVD_RENDEZVOUS_ADDR");
  setenv("HVD_RANK", "0", 1);
  setenv("HVD_SIZE", "2", 1);
  std::unique_ptr<Comm> world;
  CommInitArgs args;
  Status s = CreateGlooWorld(args, &world);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("hvdrun"), std::string::npos) << s.message();
  unsetenv("HVD_RANK");
  unsetenv("HVD_SIZE");
}

}  // namespace
}  // namespace hvd
