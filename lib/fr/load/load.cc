#include "fr/load/load.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <span>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/normalize/normalize.h"

namespace fr {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  return absl::Status(status.code(), fmt::format("{}: {}", path, std::string(status.message())));
}

// One file's way from bytes to RankDump, timed per stage.
struct FileResult {
  std::optional<absl::StatusOr<RankDump>> dump;
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_decoded = 0;
  int64_t read_ns = 0;
  int64_t decode_ns = 0;
  int64_t normalize_ns = 0;
};

FileResult DecodeAndNormalize(absl::StatusOr<InputFile> input, int64_t rank,
                              const std::string& name, int64_t read_started) {
  FileResult result;
  int64_t decode_started = NowNs();
  result.read_ns = decode_started - read_started;
  if (!input.ok()) {
    result.dump = WithPath(input.status(), name);
    return result;
  }
  result.bytes_on_disk = input->size_on_disk;
  result.bytes_decoded = input->bytes->size();
  absl::StatusOr<Document> document =
      input->encoding == Encoding::kJson ? DecodeJson(input->bytes) : DecodePickle(input->bytes);
  int64_t normalize_started = NowNs();
  result.decode_ns = normalize_started - decode_started;
  if (!document.ok()) {
    result.dump = WithPath(document.status(), name);
    return result;
  }
  absl::StatusOr<RankDump> dump = NormalizeDump(*document, rank);
  result.normalize_ns = NowNs() - normalize_started;
  if (!dump.ok()) {
    result.dump = WithPath(dump.status(), name);
    return result;
  }
  dump->path = name;
  result.dump = std::move(dump);
  return result;
}

int64_t ModificationTimeNs(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return kUnknown;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

FileResult LoadOneFile(const std::string& path, int64_t rank, const ReadOptions& options) {
  int64_t started = NowNs();
  FileResult result = DecodeAndNormalize(ReadInputFile(path, options), rank, path, started);
  if (result.dump.has_value() && result.dump->ok()) {
    (*result.dump)->file_mtime_ns = ModificationTimeNs(path);
  }
  return result;
}

// Runs `work(i)` for i in [0, count) on `jobs` threads; work items are claimed one at a time so
// that a few large files do not leave threads idle.
void ParallelFor(size_t count, int jobs, const std::atomic<bool>* cancel,
                 const std::function<void(size_t)>& work) {
  size_t threads = jobs > 0 ? static_cast<size_t>(jobs)
                            : std::max<size_t>(1, std::thread::hardware_concurrency());
  threads = std::min(threads, std::max<size_t>(count, 1));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return;
      work(i);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
}

// Gathers per-file results into the trace, in the order of `ranks`.
void Collect(std::vector<FileResult>& results, const std::vector<int64_t>& ranks,
             const std::vector<std::string>& names, LoadedTrace* trace) {
  std::set<std::string> versions;
  for (size_t i = 0; i < results.size(); ++i) {
    FileResult& result = results[i];
    trace->bytes_on_disk += result.bytes_on_disk;
    trace->bytes_decoded += result.bytes_decoded;
    trace->timings.read_ns += result.read_ns;
    trace->timings.decode_ns += result.decode_ns;
    trace->timings.normalize_ns += result.normalize_ns;
    if (!result.dump.has_value()) continue;
    if (result.dump->ok()) {
      versions.insert((*result.dump)->version);
      trace->ranks.push_back(**std::move(result.dump));
    } else {
      trace->rejected.push_back(
          RejectedFile{names[i], ranks[i], std::string(result.dump->status().message())});
    }
  }
  trace->versions.assign(versions.begin(), versions.end());
  // Numeric version order: "2.9" before "2.10".
  std::sort(trace->versions.begin(), trace->versions.end(),
            [](const std::string& a, const std::string& b) {
              auto key = [](const std::string& v) {
                int major = 0, minor = 0;
                std::sscanf(v.c_str(), "%d.%d", &major, &minor);
                return std::make_pair(major, minor);
              };
              return key(a) != key(b) ? key(a) < key(b) : a < b;
            });
}

// Ranks a job should have: every member of every group some dump names, and every rank below the
// highest one seen (the default group spans the world). Only those without any file are missing.
// A group's rank list in some dump, hashed by a sample (size, first, middle, last): hashing or
// ordering whole world-size lists once per dump would cost more than the rest of the bookkeeping.
struct RankListView {
  std::span<const int64_t> ranks;
  bool operator==(const RankListView& other) const {
    return std::equal(ranks.begin(), ranks.end(), other.ranks.begin(), other.ranks.end());
  }
  template <typename H>
  friend H AbslHashValue(H state, const RankListView& list) {
    size_t n = list.ranks.size();
    if (n == 0) return H::combine(std::move(state), n);
    return H::combine(std::move(state), n, list.ranks[0], list.ranks[n / 2], list.ranks[n - 1]);
  }
};

void FindMissingRanks(LoadedTrace* trace) {
  std::set<int64_t> expected;
  int64_t highest = -1;
  // Every member of a group lists the same group: add each distinct rank list once, or a
  // 4096-rank world group would be inserted 4096 times.
  absl::flat_hash_set<RankListView> seen_groups;
  for (const RankDump& dump : trace->ranks) {
    highest = std::max(highest, dump.rank);
    for (const ProcessGroup& group : dump.groups) {
      if (!seen_groups.insert(RankListView{group.ranks}).second) continue;
      for (int64_t rank : group.ranks) expected.insert(rank);
    }
  }
  for (const RejectedFile& file : trace->rejected) highest = std::max(highest, file.rank);
  for (const RankConflict& conflict : trace->conflicts) highest = std::max(highest, conflict.rank);
  for (int64_t rank = 0; rank <= highest; ++rank) expected.insert(rank);
  std::set<int64_t> present;
  for (const RankDump& dump : trace->ranks) present.insert(dump.rank);
  for (const RejectedFile& file : trace->rejected) present.insert(file.rank);
  for (const RankConflict& conflict : trace->conflicts) present.insert(conflict.rank);
  for (int64_t rank : expected) {
    if (rank >= 0 && !present.contains(rank)) trace->missing_ranks.push_back(rank);
  }
}

}  // namespace

absl::StatusOr<RankDump> LoadDumpFile(const std::string& path, int64_t rank,
                                      const ReadOptions& options) {
  FileResult result = LoadOneFile(path, rank, options);
  return *std::move(result.dump);
}

absl::StatusOr<RankDump> LoadDumpBytes(std::shared_ptr<const Buffer> bytes, int64_t rank,
                                       const std::string& name, const ReadOptions& options) {
  int64_t started = NowNs();
  FileResult result =
      DecodeAndNormalize(ReadInputBytes(std::move(bytes), options), rank, name, started);
  return *std::move(result.dump);
}

absl::StatusOr<LoadedTrace> LoadTrace(const std::string& root, const LoadOptions& options) {
  int64_t started = NowNs();
  FR_ASSIGN_OR_RETURN(Discovery discovery, DiscoverDumps(root, options.discover));
  LoadedTrace trace;
  trace.timings.discover_ns = NowNs() - started;
  trace.skipped = std::move(discovery.skipped);
  trace.conflicts = std::move(discovery.conflicts);

  size_t count = discovery.files.size();
  std::vector<FileResult> results(count);
  std::atomic<size_t> done{0};
  ParallelFor(count, options.jobs, options.cancel, [&](size_t i) {
    results[i] = LoadOneFile(discovery.files[i].path, discovery.files[i].rank, options.read);
    size_t finished = ++done;
    if (options.progress) options.progress(finished, count);
  });
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError("loading was interrupted");
  }
  std::vector<int64_t> ranks;
  std::vector<std::string> names;
  for (const DiscoveredFile& file : discovery.files) {
    ranks.push_back(file.rank);
    names.push_back(file.path);
  }
  Collect(results, ranks, names, &trace);
  FindMissingRanks(&trace);
  trace.timings.wall_ns = NowNs() - started;
  return trace;
}

absl::StatusOr<LoadedTrace> LoadTraceFromBytes(
    const std::map<int64_t, std::shared_ptr<const Buffer>>& dumps, const LoadOptions& options) {
  int64_t started = NowNs();
  std::vector<int64_t> ranks;
  std::vector<std::string> names;
  std::vector<std::shared_ptr<const Buffer>> buffers;
  for (const auto& [rank, bytes] : dumps) {
    ranks.push_back(rank);
    names.push_back(fmt::format("<rank {} bytes>", rank));
    buffers.push_back(bytes);
  }
  std::vector<FileResult> results(ranks.size());
  ParallelFor(ranks.size(), options.jobs, options.cancel, [&](size_t i) {
    int64_t read_started = NowNs();
    results[i] = DecodeAndNormalize(ReadInputBytes(buffers[i], options.read), ranks[i], names[i],
                                    read_started);
  });
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError("loading was interrupted");
  }
  LoadedTrace trace;
  Collect(results, ranks, names, &trace);
  FindMissingRanks(&trace);
  trace.timings.wall_ns = NowNs() - started;
  return trace;
}

}  // namespace fr
