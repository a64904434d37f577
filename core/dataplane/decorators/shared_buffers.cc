#include "core/dataplane/decorators/shared_buffers.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

namespace hvd {
namespace {

constexpr const char* kPrefix = "hvd-buf.";

// A buffer of this process: its segment unlinks and unmaps it when freed.
struct Buffer {
  uint64_t id;
  std::unique_ptr<ShmSegment> segment;
};

struct Registry {
  std::mutex mu;
  std::map<uint64_t, Buffer> by_start;  // under mu
  uint64_t next_id = 1;                 // under mu
  std::atomic<size_t> count{0};
  std::atomic<uint64_t> frees{0};
};

// Never destroyed: buffers may be freed while the process exits, after a
// function-local static made later would be gone.
Registry& registry() {
  alignas(Registry) static unsigned char storage[sizeof(Registry)];
  static Registry* r = ::new (static_cast<void*>(storage)) Registry();
  return *r;
}

// Names of processes that are gone (a job that died before freeing).
void SweepDead() {
  DIR* d = ::opendir("/dev/shm");
  if (!d) return;
  const int self = static_cast<int>(::getpid());
  while (const dirent* e = ::readdir(d)) {
    int pid = 0;
    unsigned long long id = 0;
    char tail = 0;
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0 ||
        std::sscanf(e->d_name + std::strlen(kPrefix), "%d.%llu%c", &pid, &id, &tail) != 2) {
      continue;
    }
    if (pid > 0 && pid != self && ::kill(pid, 0) != 0 && errno == ESRCH) {
      ::shm_unlink((std::string("/") + e->d_name).c_str());
    }
  }
  ::closedir(d);
}

}  // namespace

std::string SharedBuffers::Name(int32_t pid, uint64_t id) {
  return "/" + std::string(kPrefix) + std::to_string(pid) + "." + std::to_string(id);
}

Status SharedBuffers::Alloc(int64_t bytes, void** out) {
  if (!out) return Status::Invalid("hvd_alloc_shared: the output pointer is NULL");
  *out = nullptr;
  if (bytes <= 0) {
    return Status::Invalid("hvd_alloc_shared: " + std::to_string(bytes) + " bytes");
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  SweepDead();  // allocations are few: a look at /dev/shm each time is cheap
  const uint64_t id = r.next_id++;
  auto segment = std::make_unique<ShmSegment>();
  const Status s =
      segment->Create(Name(static_cast<int32_t>(::getpid()), id), static_cast<size_t>(bytes));
  if (!s.ok()) return Status::Internal("hvd_alloc_shared: " + s.message());
  void* p = segment->data();
  r.by_start.emplace(reinterpret_cast<uint64_t>(p), Buffer{id, std::move(segment)});
  r.count.store(r.by_start.size(), std::memory_order_release);
  *out = p;
  return Status::OK();
}

Status SharedBuffers::Free(void* p) {
  if (!p) return Status::OK();  // as free(NULL)
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_start.find(reinterpret_cast<uint64_t>(p));
  if (it == r.by_start.end()) {
    char where[32];
    std::snprintf(where, sizeof where, "%p", p);
    return Status::Invalid(std::string("hvd_free_shared: ") + where +
                           " is not a buffer from hvd_alloc_shared (or was freed already)");
  }
  r.by_start.erase(it);  // unlinks (not in a forked child) and unmaps
  r.count.store(r.by_start.size(), std::memory_order_release);
  r.frees.fetch_add(1, std::memory_order_release);
  return Status::OK();
}

bool SharedBuffers::Any() {
  return registry().count.load(std::memory_order_acquire) > 0;
}

uint64_t SharedBuffers::Frees() {
  return registry().frees.load(std::memory_order_acquire);
}

bool SharedBuffers::Find(uint64_t p, uint64_t bytes, SharedRef* ref) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_start.upper_bound(p);
  if (it == r.by_start.begin()) return false;
  --it;
  const uint64_t offset = p - it->first;
  if (offset + bytes > it->second.segment->size()) return false;
  ref->id = it->second.id;
  ref->offset = offset;
  return true;
}

Status PeerBuffers::Map(int32_t pid, const SharedRef& ref, uint64_t bytes, uint8_t** at) {
  const auto key = std::make_pair(pid, ref.id);
  auto it = maps_.find(key);
  if (it == maps_.end()) {
    auto segment = std::make_unique<ShmSegment>();
    const Status s = segment->Open(SharedBuffers::Name(pid, ref.id), 0);
    if (!s.ok()) return Status::Internal(s.message());  // "shared memory: shm_open(NAME): ..."
    it = maps_.emplace(key, std::move(segment)).first;
  }
  const ShmSegment& m = *it->second;
  if (ref.offset + bytes > m.size()) {
    return Status::Internal("host-local shared memory: " + std::to_string(bytes) + " bytes at " +
                            std::to_string(ref.offset) + " are outside " +
                            SharedBuffers::Name(pid, ref.id) + " (" + std::to_string(m.size()) +
                            " bytes)");
  }
  *at = m.data() + ref.offset;
  return Status::OK();
}

void PeerBuffers::Forget(int32_t pid) {
  auto it = maps_.lower_bound(std::make_pair(pid, uint64_t{0}));
  while (it != maps_.end() && it->first.first == pid) it = maps_.erase(it);
}

}  // namespace hvd
