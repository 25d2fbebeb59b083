// Files read while their folder is still being written: a queue of named files, a few threads
// that read them, and the hand-over of each result to the load that discovers the file.
#include "fr/load/early_reads.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "fr/load/load_internal.h"

namespace fr {
namespace load_internal {
namespace {

// What says a file is the one that was read: the same inode, with the same size and
// modification time (a file rewritten in place keeps its inode but not both of those).
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;

  bool operator==(const FileIdentity&) const = default;
};

// Of the path itself, not of what a link there points to: the load opens discovered files
// without following links too.
std::optional<FileIdentity> IdentityOf(const std::string& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return FileIdentity{
      .device = static_cast<uint64_t>(info.st_dev),
      .inode = static_cast<uint64_t>(info.st_ino),
      .size = static_cast<int64_t>(info.st_size),
      .mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec};
}

enum class ReadState {
  kQueued,   // waiting for a thread
  kReading,  // a thread reads it
  kDone,     // read: `result` holds it
  kSkipped,  // not read: its name says it is no dump
  kTaken,    // handed to a load, or taken back from the queue by one
};

struct EarlyRead {
  std::string path;
  FileIdentity identity;
  ReadState state = ReadState::kQueued;
  FileResult result;
};

using InodeKey = std::pair<uint64_t, uint64_t>;  // (device, inode)

}  // namespace

struct EarlyReadsState {
  bool background = false;
  DiscoverOptions discover;
  ReadOptions read;
  RankListPool rank_lists;

  std::mutex mutex;
  std::condition_variable changed;  // a read ended, or the reads stop
  std::condition_variable queued;   // a file was queued, or the reads stop
  // Every file named, in order; `by_inode` finds one by its (device, inode).
  std::deque<EarlyRead> reads;
  absl::flat_hash_map<InodeKey, size_t> by_inode;
  size_t next = 0;  // the next read a thread takes from `reads`
  bool stopping = false;
  size_t files_read = 0;
  size_t files_used = 0;
  std::vector<std::thread> threads;

  void Run() {
    if (background) {
      // The lowest priority, for this thread alone (Linux gives each thread its own nice
      // value): it takes only the CPU the writer leaves. Failing that, it runs as it is.
      ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
    }
    std::unique_lock lock(mutex);
    while (true) {
      queued.wait(lock, [&] { return stopping || next < reads.size(); });
      if (stopping) return;
      EarlyRead& read_item = reads[next++];
      if (read_item.state != ReadState::kQueued) continue;  // taken back by a load
      read_item.state = ReadState::kReading;
      std::string path = read_item.path;
      lock.unlock();
      std::optional<FileResult> result = ReadOne(path);
      lock.lock();
      // A deque's elements stay where they are as it grows at the back.
      if (result.has_value()) {
        read_item.result = *std::move(result);
        read_item.state = ReadState::kDone;
        ++files_read;
      } else {
        read_item.state = ReadState::kSkipped;
      }
      changed.notify_all();
    }
  }

  // The file's result, or nothing when discovery's rules (on the file alone) skip it.
  std::optional<FileResult> ReadOne(const std::string& path) {
    absl::StatusOr<Discovery> alone = DiscoverDumps(path, discover);
    if (!alone.ok() || alone->files.empty()) return std::nullopt;
    DiscoveredFile file = alone->files.front();
    file.path = path;
    file.rank = -1;
    // As LoadTrace opens discovered files: never through a link that appeared since.
    ReadOptions no_new_links = read;
    no_new_links.follow_symlinks = false;
    FileResult result = LoadDiscovered(file, no_new_links, /*hash_content=*/false);
    KeepCompactly(&rank_lists, &result);
    return result;
  }
};

std::optional<FileResult> TakeEarlyResult(EarlyReads& early, const std::string& open_path) {
  EarlyReadsState& state = *early.state_;
  std::optional<FileIdentity> now = IdentityOf(open_path);
  if (!now.has_value()) return std::nullopt;
  std::unique_lock lock(state.mutex);
  auto found = state.by_inode.find(InodeKey{now->device, now->inode});
  if (found == state.by_inode.end()) return std::nullopt;
  EarlyRead& read = state.reads[found->second];
  if (read.state == ReadState::kQueued) {
    read.state = ReadState::kTaken;
    return std::nullopt;
  }
  state.changed.wait(lock, [&] { return read.state != ReadState::kReading; });
  if (read.state != ReadState::kDone) return std::nullopt;
  read.state = ReadState::kTaken;
  FileResult result = std::move(read.result);
  read.result = FileResult();
  lock.unlock();
  // Changed since it was named, or while it was read (the dump records the time its reader
  // saw after reading): read it again.
  bool same = read.identity == *now && (!result.dump.has_value() || !result.dump->ok() ||
                                        (*result.dump)->file_mtime_ns == now->mtime_ns);
  if (!same) return std::nullopt;
  lock.lock();
  ++state.files_used;
  return result;
}

}  // namespace load_internal

EarlyReads::EarlyReads(int jobs, bool background, DiscoverOptions discover, ReadOptions read)
    : state_(std::make_unique<load_internal::EarlyReadsState>()) {
  state_->background = background;
  state_->discover = std::move(discover);
  state_->read = std::move(read);
  unsigned threads =
      jobs > 0 ? static_cast<unsigned>(jobs) : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < threads; ++i) {
    state_->threads.emplace_back([state = state_.get()] { state->Run(); });
  }
}

EarlyReads::~EarlyReads() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->queued.notify_all();
  state_->changed.notify_all();
  for (std::thread& thread : state_->threads) thread.join();
}

void EarlyReads::FileComplete(const std::string& path) {
  std::optional<load_internal::FileIdentity> identity = load_internal::IdentityOf(path);
  if (!identity.has_value()) return;
  {
    std::lock_guard lock(state_->mutex);
    load_internal::InodeKey key{identity->device, identity->inode};
    auto [found, added] = state_->by_inode.try_emplace(key, state_->reads.size());
    if (!added) {
      load_internal::EarlyRead& earlier = state_->reads[found->second];
      if (earlier.identity == *identity) return;  // named twice: the first read stands
      // A removed file's inode given to a new one (an archive unpacked, then deleted): the
      // earlier file is gone, and its read, if still queued, is not worth making.
      if (earlier.state == load_internal::ReadState::kQueued) {
        earlier.state = load_internal::ReadState::kTaken;
      }
      found->second = state_->reads.size();
    }
    state_->reads.push_back({.path = path, .identity = *identity, .result = {}});
  }
  state_->queued.notify_one();
}

size_t EarlyReads::files_read() const {
  std::lock_guard lock(state_->mutex);
  return state_->files_read;
}

size_t EarlyReads::files_used() const {
  std::lock_guard lock(state_->mutex);
  return state_->files_used;
}

}  // namespace fr
