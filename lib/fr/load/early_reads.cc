// Files read while their folder is still being written: a queue of named files, a few threads
// that read them, and the hand-over of each result to the load that discovers the file.
#include "fr/load/early_reads.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "fr/base/buffer.h"
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
  // A file held in memory (ReadHeld): its bytes until decoded, and its modification time.
  bool held = false;
  std::shared_ptr<const Buffer> bytes;
  int64_t mtime_ns = 0;
};

// A held file's longest path: what a frame may claim before its bytes are believed.
constexpr uint32_t kMaxHeldPath = 4096;

// Decodes a held file's bytes as the load decodes a file's.
FileResult DecodeHeld(const std::string& path, std::shared_ptr<const Buffer> bytes,
                      int64_t mtime_ns, const ReadOptions& read) {
  FileResult result;
  try {
    int64_t started = NowNs();
    result = DecodeAndNormalize(ReadInputBytes(std::move(bytes), read), /*rank=*/-1, path, started,
                                /*hash_content=*/true);
  } catch (const std::bad_alloc&) {
    result = FileResult();
    result.dump = OutOfMemory(path);
  }
  if (result.dump.has_value() && result.dump->ok()) {
    (*result.dump)->file_mtime_ns = mtime_ns > 0 ? mtime_ns : kUnknown;
  }
  return result;
}

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

  // Files held in memory (ReadHeld): by path as framed, the list so far, and the pipe's state.
  absl::flat_hash_map<std::string, size_t> by_held;
  std::vector<HeldFile> held;
  bool held_started = false;
  bool held_ended = false;
  absl::Status held_status;
  uint64_t held_pending_bytes = 0;  // held bytes not yet decoded
  std::thread held_reader;

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
      std::shared_ptr<const Buffer> bytes = std::move(read_item.bytes);
      bool held_item = read_item.held;
      int64_t mtime_ns = read_item.mtime_ns;
      lock.unlock();
      std::optional<FileResult> result;
      if (held_item) {
        uint64_t size = bytes->size();
        result = DecodeHeld(path, std::move(bytes), mtime_ns, read);
        KeepCompactly(&rank_lists, &*result);
        lock.lock();
        held_pending_bytes -= size;
        lock.unlock();
      } else {
        result = ReadOne(path);
      }
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

  // Reads exactly `size` bytes into `out` from the pipe; false at its end (or when the reads
  // stop), with `*at_end` set when nothing at all was read. Polls, so that stopping is seen.
  bool ReadExactly(int fd, char* out, size_t size, bool* at_end) {
    size_t got = 0;
    while (got < size) {
      struct pollfd ready = {.fd = fd, .events = POLLIN, .revents = 0};
      int polled = ::poll(&ready, 1, 100);
      {
        std::lock_guard lock(mutex);
        if (stopping) return false;
      }
      if (polled < 0 && errno != EINTR) return false;
      if (polled <= 0) continue;
      ssize_t n = ::read(fd, out + got, size - got);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        if (at_end != nullptr) *at_end = got == 0;
        return false;
      }
      got += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads and drops `size` bytes of the pipe; false when it ends first.
  bool SkipBytes(int fd, uint64_t size) {
    std::string chunk(std::min<uint64_t>(size, uint64_t{1} << 20), '\0');
    while (size > 0) {
      size_t step = static_cast<size_t>(std::min<uint64_t>(size, chunk.size()));
      if (!ReadExactly(fd, chunk.data(), step, nullptr)) return false;
      size -= step;
    }
    return true;
  }

  // Lists a held file whose result is known without decoding (its error); false when its path
  // was held already.
  bool AddHeld(HeldFile file, FileResult result) {
    std::lock_guard lock(mutex);
    if (!by_held.try_emplace(file.relative_path, reads.size()).second) return false;
    reads.push_back({.path = file.relative_path,
                     .identity = {},
                     .state = ReadState::kDone,
                     .result = std::move(result),
                     .held = true,
                     .bytes = nullptr,
                     .mtime_ns = 0});
    held.push_back(std::move(file));
    return true;
  }

  // The held files' reader: one frame after another until the pipe ends (EarlyReads::ReadHeld).
  void ReadHeldFrames(int fd) {
    absl::Status status;
    while (true) {
      unsigned char head[4];
      bool at_end = false;
      if (!ReadExactly(fd, reinterpret_cast<char*>(head), sizeof(head), &at_end)) {
        if (!at_end) status = absl::DataLossError("the held files' pipe ended inside a frame");
        break;
      }
      uint32_t path_size = 0;
      for (int i = 3; i >= 0; --i) path_size = path_size << 8 | head[i];
      if (path_size == 0 || path_size > kMaxHeldPath) {
        status = absl::DataLossError(
            fmt::format("a held file's frame claims a path of {} bytes", path_size));
        break;
      }
      std::string path(path_size, '\0');
      unsigned char numbers[16];
      if (!ReadExactly(fd, path.data(), path.size(), nullptr) ||
          !ReadExactly(fd, reinterpret_cast<char*>(numbers), sizeof(numbers), nullptr)) {
        status = absl::DataLossError("the held files' pipe ended inside a frame");
        break;
      }
      uint64_t size = 0, mtime = 0;
      for (int i = 7; i >= 0; --i) size = size << 8 | numbers[i];
      for (int i = 15; i >= 8; --i) mtime = mtime << 8 | numbers[i];
      if (size > read.max_decompressed_bytes) {
        // That file's error, as a file on disk over the limit is: passed over, never held.
        if (!SkipBytes(fd, size)) {
          status = absl::DataLossError(
              fmt::format("the held files' pipe ended inside '{}' ({} bytes)", path, size));
          break;
        }
        FileResult too_large;
        too_large.dump = absl::ResourceExhaustedError(
            fmt::format("{} bytes, more than the {}-byte limit (ReadOptions::"
                        "max_decompressed_bytes)",
                        size, read.max_decompressed_bytes));
        if (!AddHeld({.relative_path = path, .size = size, .head = ""}, std::move(too_large))) {
          status = absl::DataLossError(fmt::format("held file '{}' was sent twice", path));
          break;
        }
        continue;
      }
      {
        // Held back until the decoding has caught up (a file larger than the bound alone waits
        // until nothing else is pending).
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] {
          return stopping || held_pending_bytes == 0 ||
                 held_pending_bytes + size <= EarlyReads::kMaxHeldBytes;
        });
        if (stopping) break;
        held_pending_bytes += size;
      }
      std::string bytes;
      try {
        bytes.resize(size);
      } catch (const std::bad_alloc&) {
        // That file's error alone, as running out of memory reading a file on disk is.
        {
          std::lock_guard lock(mutex);
          held_pending_bytes -= size;
        }
        FileResult no_memory;
        no_memory.dump = OutOfMemory(path);
        if (!SkipBytes(fd, size) ||
            !AddHeld({.relative_path = path, .size = size, .head = ""}, std::move(no_memory))) {
          status = absl::DataLossError(
              fmt::format("the held files' pipe ended inside '{}' ({} bytes)", path, size));
          break;
        }
        continue;
      }
      if (!ReadExactly(fd, bytes.data(), bytes.size(), nullptr)) {
        std::lock_guard lock(mutex);
        held_pending_bytes -= size;
        status = absl::DataLossError(
            fmt::format("the held files' pipe ended inside '{}' ({} bytes)", path, size));
        break;
      }
      HeldFile file{.relative_path = path, .size = size, .head = bytes.substr(0, 4)};
      {
        std::lock_guard lock(mutex);
        auto [found, added] = by_held.try_emplace(path, reads.size());
        if (!added) {
          held_pending_bytes -= size;
          status = absl::DataLossError(fmt::format("held file '{}' was sent twice", path));
          break;
        }
        reads.push_back({.path = path,
                         .identity = {},
                         .result = {},
                         .held = true,
                         .bytes = Buffer::FromString(std::move(bytes)),
                         .mtime_ns = static_cast<int64_t>(mtime)});
        held.push_back(std::move(file));
      }
      queued.notify_one();
    }
    ::close(fd);
    {
      std::lock_guard lock(mutex);
      held_status = status;
      held_ended = true;
    }
    changed.notify_all();
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

FileResult TakeHeldResult(EarlyReads& early, const std::string& path) {
  EarlyReadsState& state = *early.state_;
  std::unique_lock lock(state.mutex);
  auto found = state.by_held.find(path);
  if (found == state.by_held.end()) {
    FileResult missing;
    missing.dump = absl::InternalError("held file was never received");
    return missing;
  }
  EarlyRead& read = state.reads[found->second];
  if (read.state == ReadState::kQueued) {
    // No thread has begun it: decoded here, beside the load's other files.
    read.state = ReadState::kTaken;
    std::shared_ptr<const Buffer> bytes = std::move(read.bytes);
    int64_t mtime_ns = read.mtime_ns;
    ++state.files_used;
    lock.unlock();
    uint64_t size = bytes->size();
    FileResult result = DecodeHeld(path, std::move(bytes), mtime_ns, state.read);
    KeepCompactly(&state.rank_lists, &result);
    lock.lock();
    state.held_pending_bytes -= size;
    lock.unlock();
    state.changed.notify_all();
    return result;
  }
  state.changed.wait(lock, [&] { return read.state != ReadState::kReading; });
  FileResult result = std::move(read.result);
  read.result = FileResult();
  if (read.state != ReadState::kDone) {
    result.dump = absl::InternalError("held file was handed out twice");
    return result;
  }
  read.state = ReadState::kTaken;
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
  if (state_->held_reader.joinable()) state_->held_reader.join();
}

void EarlyReads::ReadHeld(int fd) {
  std::lock_guard lock(state_->mutex);
  if (state_->held_started) {
    ::close(fd);
    return;
  }
  state_->held_started = true;
  state_->held_reader = std::thread([state = state_.get(), fd] { state->ReadHeldFrames(fd); });
}

absl::StatusOr<std::vector<HeldFile>> EarlyReads::HeldFiles() {
  std::unique_lock lock(state_->mutex);
  if (!state_->held_started) return std::vector<HeldFile>();
  state_->changed.wait(lock, [&] { return state_->held_ended; });
  if (!state_->held_status.ok()) return state_->held_status;
  return state_->held;
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
    state_->reads.push_back({.path = path,
                             .identity = *identity,
                             .result = {},
                             .held = false,
                             .bytes = nullptr,
                             .mtime_ns = 0});
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
