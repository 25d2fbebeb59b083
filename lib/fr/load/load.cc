// The order of loading behind load.h's entry points: discover the files, read every one in
// parallel (here, or on workers whose results come back as FileSummary messages), then settle the
// results into one trace, rank by rank and then the world, exactly the same way for both.
#include "fr/load/load.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/parallel_for.h"
#include "fr/base/status_macros.h"
#include "fr/load/load_internal.h"
#include "fr/read/input_file.h"
#include "fr/summary/rank_summary.h"

namespace fr {
namespace {

using load_internal::AddTimings;
using load_internal::DecodeAndNormalize;
using load_internal::FileResult;
using load_internal::KeepCompactly;
using load_internal::LoadDiscovered;
using load_internal::LoadOneFile;
using load_internal::NowNs;
using load_internal::OutOfMemory;
using load_internal::SeparateJobs;
using load_internal::SettleRank;
using load_internal::SettleWorld;
using load_internal::SeveralAttempts;
using load_internal::SeveralWorlds;
using load_internal::TakeEarlyResult;
using load_internal::TakeHeldResult;
using load_internal::WithPath;

// How many files ahead of the one being read the kernel is asked to fetch (HintWillRead).
constexpr size_t kReadAheadFiles = 16;

// Numeric version order: "2.9" before "2.10".
void CollectVersions(LoadedTrace* trace) {
  std::set<std::string> versions;
  for (const RankDump& dump : trace->ranks) versions.insert(dump.version);
  trace->versions.assign(versions.begin(), versions.end());
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

// Ranks claimed by several files: their files' contents are hashed, to tell copies apart.
std::set<int64_t> ContestedRanks(const Discovery& discovery) {
  std::set<int64_t> contested;
  for (const RankConflict& conflict : discovery.conflicts) contested.insert(conflict.rank);
  return contested;
}

// Discovery resolved every link it accepted: open exactly that, and follow no link that has
// appeared since.
ReadOptions NoNewLinks(ReadOptions read) {
  read.follow_symlinks = false;
  return read;
}

// Distinct ranks among discovered files (sorted by rank): what the trace reserves, so that
// 100k dumps are not moved and left with up to as many slots unused again as the vector grows.
size_t CountRanks(const std::vector<DiscoveredFile>& files) {
  size_t ranks = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i == 0 || files[i].rank != files[i - 1].rank) ++ranks;
  }
  return ranks;
}

// The folders below the analysed root that a dump sits in, innermost first ("a/node0/dumps/x"
// gives {"dumps", "node0", "a"}); empty for a dump at the root itself.
std::vector<std::string> FoldersAbove(const std::string& path, const std::string& root) {
  std::vector<std::string> folders;
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const std::filesystem::path top = std::filesystem::path(root).lexically_normal();
  while (!folder.empty() && folder.lexically_normal() != top && folder.has_filename()) {
    folders.push_back(folder.filename().string());
    folder = folder.parent_path();
  }
  return folders;
}

// Per-host folders name hosts only where their names tell the hosts apart. One folder that holds
// every rank's dump is the job's folder ("dumps", "fr", an upload's name), and per-node folders
// that each hold a folder of the same name ("node0/dumps", "node1/dumps") are named by the node
// above it: a report that shows "dumps" as the host of every rank sends the reader to a machine
// that does not exist. The host is the innermost folder level whose names differ between the
// ranks; where no level differs, the path names no host.
void NameHostsByTheirFolders(const std::string& root, LoadedTrace* trace) {
  std::vector<size_t> in_folders;
  std::vector<std::vector<std::string>> folders;
  for (size_t i = 0; i < trace->ranks.size(); ++i) {
    std::vector<std::string> above = FoldersAbove(trace->ranks[i].path, root);
    // A host taken from the file's name (no folder below the root) is the name's to keep.
    if (above.empty()) continue;
    in_folders.push_back(i);
    folders.push_back(std::move(above));
  }
  if (in_folders.empty()) return;
  size_t depth = 0;
  for (;; ++depth) {
    std::set<std::string_view> names;
    bool every_rank_has_one = true;
    for (const std::vector<std::string>& above : folders) {
      if (depth >= above.size()) {
        every_rank_has_one = false;
        break;
      }
      names.insert(above[depth]);
    }
    if (!every_rank_has_one) {
      depth = SIZE_MAX;
      break;
    }
    if (names.size() > 1) break;
  }
  for (size_t k = 0; k < in_folders.size(); ++k) {
    RankDump& rank = trace->ranks[in_folders[k]];
    rank.host = depth == SIZE_MAX ? std::string() : folders[k][depth];
  }
}

// The trace from every discovered file's result (`results[i]` is `discovery.files[i]`'s):
// settles each rank's files, then the world.
LoadedTrace Assemble(const std::string& root, Discovery discovery, std::vector<FileResult> results,
                     int64_t discover_ns, int64_t started) {
  LoadedTrace trace;
  trace.timings.discover_ns = discover_ns;
  trace.skipped = std::move(discovery.skipped);
  const std::vector<DiscoveredFile>& files = discovery.files;
  const size_t count = files.size();
  if (!discovery.conflicts.empty() || SeveralAttempts(files) || SeveralWorlds(results)) {
    SeparateJobs(files, results, &trace);
  }
  trace.ranks.reserve(CountRanks(files));
  for (size_t begin = 0, end = 0; begin < count; begin = end) {
    end = begin + 1;
    while (end < count && files[end].rank == files[begin].rank) ++end;
    if (std::optional<size_t> kept = SettleRank(results, files, begin, end, &trace)) {
      trace.ranks.push_back(**std::move(results[*kept].dump));
      trace.ranks.back().host = HostOfDumpPath(trace.ranks.back().path, root);
    }
  }
  NameHostsByTheirFolders(root, &trace);
  SettleWorld(/*check_own_rank=*/true, &trace);
  CollectVersions(&trace);
  trace.timings.wall_ns = NowNs() - started;
  return trace;
}

std::string ToSummary(const DiscoveredFile& file, const FileResult& result) {
  summary::FileSummary out;
  out.set_path(file.path);
  out.set_rank(file.rank);
  if (result.dump.has_value() && result.dump->ok()) {
    ToRankSummary(**result.dump, out.mutable_dump());
  } else if (result.dump.has_value()) {
    out.set_error(std::string(result.dump->status().message()));
    out.set_error_code(static_cast<int32_t>(result.dump->status().code()));
  }
  out.set_content_hash(result.content_hash);
  out.set_bytes_on_disk(result.bytes_on_disk);
  out.set_bytes_decoded(result.bytes_decoded);
  out.set_read_ns(result.read_ns);
  out.set_decode_ns(result.decode_ns);
  out.set_normalize_ns(result.normalize_ns);
  return out.SerializeAsString();
}

// A summary that cannot be read is its file's error, like a damaged dump.
FileResult FromSummary(const DiscoveredFile& file, std::string_view bytes) {
  FileResult result;
  summary::FileSummary in;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    result.dump = absl::DataLossError("its summary from the worker is not a FileSummary message");
    return result;
  }
  if (in.path() != file.path || in.rank() != file.rank) {
    result.dump = absl::InvalidArgumentError(fmt::format(
        "the worker's summary is of '{}' (rank {}), not of this file", in.path(), in.rank()));
    return result;
  }
  result.content_hash = in.content_hash();
  result.bytes_on_disk = in.bytes_on_disk();
  result.bytes_decoded = in.bytes_decoded();
  result.read_ns = in.read_ns();
  result.decode_ns = in.decode_ns();
  result.normalize_ns = in.normalize_ns();
  if (in.has_dump()) {
    absl::StatusOr<RankDump> dump = FromRankSummary(in.dump(), file.path);
    if (dump.ok() && (dump->path != file.path || dump->rank != file.rank)) {
      dump = absl::InvalidArgumentError("the worker's summary names another file or rank");
    }
    result.dump = std::move(dump);
  } else if (in.result_case() == summary::FileSummary::kError) {
    int code = in.error_code();
    result.dump = absl::Status(
        code > 0 && code <= 16 ? static_cast<absl::StatusCode>(code) : absl::StatusCode::kUnknown,
        in.error());
  }
  return result;
}

}  // namespace

absl::StatusOr<RankDump> LoadDumpFile(const std::string& path, int64_t rank,
                                      const ReadOptions& options) {
  FileResult result;
  try {
    result = LoadOneFile(path, path, rank, options, /*hash_content=*/false);
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path);
  }
  if (!result.dump->ok()) return WithPath(result.dump->status(), path);
  return *std::move(result.dump);
}

namespace {

// The files held in memory that lie under `root`, with paths relative to it: held files are
// framed relative to the folder `root` is named from ("job/rank_3" is "rank_3" under "job").
// `framed` maps each back to its path as framed.
std::vector<HeldFile> HeldUnder(const std::string& root, const std::vector<HeldFile>& held,
                                std::map<std::string, std::string>* framed) {
  std::string base = std::filesystem::path(root).lexically_normal().generic_string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == ".") base.clear();
  std::vector<HeldFile> under;
  for (const HeldFile& file : held) {
    std::string_view path = file.relative_path;
    if (!base.empty()) {
      if (!path.starts_with(base) || path.size() <= base.size() || path[base.size()] != '/') {
        continue;
      }
      path.remove_prefix(base.size() + 1);
    }
    HeldFile relative = file;
    relative.relative_path = std::string(path);
    (*framed)[(std::filesystem::path(root) / relative.relative_path).string()] = file.relative_path;
    under.push_back(std::move(relative));
  }
  return under;
}

}  // namespace

absl::StatusOr<LoadedTrace> LoadTrace(const std::string& root, const LoadOptions& options) {
  int64_t started = NowNs();
  // Held files (an upload's members not yet on disk) are judged beside the folder's own.
  DiscoverOptions discover_options = options.discover;
  std::map<std::string, std::string> held_framed;  // discovered path -> path as framed
  if (options.early != nullptr) {
    absl::StatusOr<std::vector<HeldFile>> held = options.early->HeldFiles();
    if (!held.ok()) {
      return absl::Status(held.status().code(),
                          fmt::format("{}: {}", root, std::string(held.status().message())));
    }
    discover_options.held = HeldUnder(root, *held, &held_framed);
  }
  FR_ASSIGN_OR_RETURN(Discovery discovery, DiscoverDumps(root, discover_options));
  int64_t discover_ns = NowNs() - started;
  std::set<int64_t> contested = ContestedRanks(discovery);
  ReadOptions read = NoNewLinks(options.read);
  const std::vector<DiscoveredFile>& files = discovery.files;
  size_t count = files.size();
  std::vector<FileResult> results(count);
  std::atomic<size_t> done{0};
  RankListPool rank_lists;
  // With a cold page cache, each thread would wait on the disk for every file it opens: the files
  // a little further down the list are asked for while these are decoded (files are handed out
  // in order), so the disk works beside the decoding.
  auto open_path = [&](size_t i) {
    return files[i].open_path.empty() ? files[i].path : files[i].open_path;
  };
  for (size_t i = 0; i < std::min(count, kReadAheadFiles); ++i) {
    if (!files[i].held) HintWillRead(open_path(i), read);
  }
  ParallelFor(
      count, options.jobs,
      [&](size_t i) {
        if (i + kReadAheadFiles < count && !files[i + kReadAheadFiles].held) {
          HintWillRead(open_path(i + kReadAheadFiles), read);
        }
        if (files[i].held) {
          // Its bytes were never on disk: the early reads hold its result (content hashed).
          auto framed = held_framed.find(files[i].path);  // read only: threads share it
          results[i] = TakeHeldResult(*options.early,
                                      framed == held_framed.end() ? files[i].path : framed->second);
          if (results[i].dump.has_value() && results[i].dump->ok()) {
            (*results[i].dump)->path = files[i].path;
            (*results[i].dump)->rank = files[i].rank;
          }
          size_t finished = ++done;
          if (options.progress) options.progress(finished, count);
          return;
        }
        // A file read early has no content hash: a contested rank's files are read here.
        bool contested_rank = contested.contains(files[i].rank);
        std::optional<FileResult> early;
        if (options.early != nullptr && !contested_rank) {
          early = TakeEarlyResult(*options.early, open_path(i));
        }
        if (early.has_value()) {
          results[i] = *std::move(early);
          if (results[i].dump.has_value() && results[i].dump->ok()) {
            (*results[i].dump)->path = files[i].path;
            (*results[i].dump)->rank = files[i].rank;
          }
        } else {
          results[i] = LoadDiscovered(files[i], read, contested_rank);
          KeepCompactly(&rank_lists, &results[i]);
        }
        size_t finished = ++done;
        if (options.progress) options.progress(finished, count);
      },
      options.cancel);
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError("loading was interrupted");
  }
  return Assemble(root, std::move(discovery), std::move(results), discover_ns, started);
}

std::vector<SummaryTask> PlanSummaries(const Discovery& discovery) {
  std::set<int64_t> contested = ContestedRanks(discovery);
  std::vector<SummaryTask> tasks;
  for (const DiscoveredFile& file : discovery.files) {
    tasks.push_back({.file = file, .hash_content = contested.contains(file.rank)});
  }
  return tasks;
}

std::string SummarizeDumpFile(const SummaryTask& task, const ReadOptions& options) {
  return ToSummary(task.file, LoadDiscovered(task.file, NoNewLinks(options), task.hash_content));
}

absl::StatusOr<LoadedTrace> AssembleTrace(const std::string& root, Discovery discovery,
                                          const std::vector<std::string>& summaries, int jobs) {
  int64_t started = NowNs();
  if (summaries.size() != discovery.files.size()) {
    return absl::InvalidArgumentError(
        fmt::format("{} summaries for {} files: one per discovered file, in discovery's order",
                    summaries.size(), discovery.files.size()));
  }
  std::vector<FileResult> results(summaries.size());
  RankListPool rank_lists;
  // Reading summaries back is most of what is left to do here once the workers are done.
  ParallelFor(summaries.size(), jobs, [&](size_t i) {
    results[i] = FromSummary(discovery.files[i], summaries[i]);
    KeepCompactly(&rank_lists, &results[i]);
  });
  return Assemble(root, std::move(discovery), std::move(results), 0, started);
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
  RankListPool rank_lists;
  ParallelFor(
      ranks.size(), options.jobs,
      [&](size_t i) {
        int64_t read_started = NowNs();
        try {
          results[i] = DecodeAndNormalize(ReadInputBytes(buffers[i], options.read), ranks[i],
                                          names[i], read_started, /*hash_content=*/false);
        } catch (const std::bad_alloc&) {
          results[i] = FileResult();
          results[i].dump = OutOfMemory(names[i]);
        }
        KeepCompactly(&rank_lists, &results[i]);
      },
      options.cancel);
  if (options.cancel != nullptr && options.cancel->load()) {
    return absl::CancelledError("loading was interrupted");
  }
  // The caller chose each rank: whatever is not a readable dump is rejected under it.
  LoadedTrace trace;
  trace.ranks.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    AddTimings(results[i], &trace);
    if (!results[i].dump.has_value()) continue;
    if (results[i].dump->ok()) {
      trace.ranks.push_back(**std::move(results[i].dump));
    } else {
      trace.rejected.push_back(
          {names[i], ranks[i],
           std::string(WithPath(results[i].dump->status(), names[i]).message())});
    }
  }
  SettleWorld(/*check_own_rank=*/false, &trace);
  CollectVersions(&trace);
  trace.timings.wall_ns = NowNs() - started;
  return trace;
}

}  // namespace fr
