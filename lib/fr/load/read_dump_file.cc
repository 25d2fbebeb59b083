// Reading one file: whether it is a flight-recorder dump at all (or another kind of file), its
// bytes read, decoded and normalized into a RankDump with each stage timed, and the RankDump made
// compact as soon as it is read. Errors here do not name the file; the caller adds its path.
#include <sys/stat.h>

#include <chrono>
#include <functional>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "fmt/format.h"
#include "fr/decode/document.h"
#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/load/load_internal.h"
#include "fr/normalize/direct_pickle_reader.h"
#include "fr/normalize/normalize.h"

namespace fr::load_internal {
namespace {

// Whether a decoded document is a flight-recorder dump at all: every version's top level is a
// dict with at least one of the keys below, or (2023) a list of entry dicts. Anything else that
// decodes (an fr-analyze JSON report saved beside the dumps, some tool's config) is another kind
// of file, not a damaged dump. The message names the kind, never the content.
absl::Status CheckIsADump(const Document& document, Encoding encoding) {
  std::string_view format = encoding == Encoding::kJson ? "JSON" : "a pickle";
  ValueId root = document.root();
  switch (document.kind(root)) {
    case ValueKind::kDict:
      for (std::string_view key : {"version", "entries", "pg_config", "pg_status"}) {
        if (document.Find(root, key) != kNoValue) return absl::OkStatus();
      }
      if (document.Find(root, "verdict") != kNoValue && document.Find(root, "inputs") != kNoValue) {
        return NotADumpError(fmt::format("{} of an fr-analyze report", format));
      }
      return NotADumpError(
          fmt::format("{} without any flight-recorder key (version, entries, pg_config)", format));
    case ValueKind::kList: {
      std::span<const ValueId> items = document.items(root);
      if (items.empty() || document.kind(items.front()) == ValueKind::kDict) {
        return absl::OkStatus();
      }
      return NotADumpError(fmt::format("{} holding a list of other things than entries", format));
    }
    default:
      return NotADumpError(
          fmt::format("{} of a single {}", format, ValueKindName(document.kind(root))));
  }
}

int64_t ModificationTimeNs(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return kUnknown;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  absl::Status out(status.code(), fmt::format("{}: {}", path, std::string(status.message())));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::Status OutOfMemory(const std::string& path) {
  return absl::ResourceExhaustedError(
      fmt::format("{}: ran out of memory reading this file (outside the decoders' budgets: "
                  "reading or decompressing it)",
                  path));
}

FileResult DecodeAndNormalize(absl::StatusOr<InputFile> input, int64_t rank,
                              const std::string& name, int64_t read_started, bool hash_content) {
  FileResult result;
  int64_t decode_started = NowNs();
  result.read_ns = decode_started - read_started;
  if (!input.ok()) {
    result.dump = input.status();
    return result;
  }
  result.bytes_on_disk = input->size_on_disk;
  result.bytes_decoded = input->bytes->size();
  if (hash_content) result.content_hash = std::hash<std::string_view>{}(input->bytes->bytes());
  if (input->encoding == Encoding::kPickle) {
    // PyTorch's own layout is read straight into the RankDump (identical to the general path);
    // anything else it declines, and the general path below reads it. Its time, accepted or
    // not, counts as decoding: it reads the pickle and normalizes in one pass.
    DirectReadResult direct = ReadTorchPickleDirect(input->bytes->bytes(), rank);
    if (direct.dump.has_value()) {
      result.decode_ns = NowNs() - decode_started;
      direct.dump->path = name;
      result.dump = std::move(*direct.dump);
      return result;
    }
  }
  absl::StatusOr<Document> document =
      input->encoding == Encoding::kJson ? DecodeJson(input->bytes) : DecodePickle(input->bytes);
  int64_t normalize_started = NowNs();
  result.decode_ns = normalize_started - decode_started;
  if (!document.ok()) {
    result.dump = document.status();
    return result;
  }
  if (absl::Status status = CheckIsADump(*document, input->encoding); !status.ok()) {
    result.dump = status;
    return result;
  }
  absl::StatusOr<RankDump> dump = NormalizeDump(*document, rank);
  result.normalize_ns = NowNs() - normalize_started;
  if (!dump.ok()) {
    result.dump = dump.status();
    return result;
  }
  dump->path = name;
  result.dump = std::move(dump);
  return result;
}

FileResult LoadOneFile(const std::string& open_path, const std::string& name, int64_t rank,
                       const ReadOptions& options, bool hash_content) {
  int64_t started = NowNs();
  FileResult result =
      DecodeAndNormalize(ReadInputFile(open_path, options), rank, name, started, hash_content);
  if (result.dump.has_value() && result.dump->ok()) {
    (*result.dump)->file_mtime_ns = ModificationTimeNs(open_path);
  }
  return result;
}

FileResult LoadDiscovered(const DiscoveredFile& file, const ReadOptions& read, bool hash_content) {
  // Running out of memory on one file is that file's error: the others are still analysed.
  try {
    return LoadOneFile(file.open_path.empty() ? file.path : file.open_path, file.path, file.rank,
                       read, hash_content);
  } catch (const std::bad_alloc&) {
    FileResult result;
    result.dump = OutOfMemory(file.path);
    return result;
  }
}

void KeepCompactly(RankListPool* pool, FileResult* result) {
  if (!result->dump.has_value() || !result->dump->ok()) return;
  RankDump& dump = **result->dump;
  for (ProcessGroup& group : dump.groups) pool->Intern(&group.ranks);
  dump.strings.Compact();
  dump.entries.Pack();
}

void AddTimings(const FileResult& result, LoadedTrace* trace) {
  trace->bytes_on_disk += result.bytes_on_disk;
  trace->bytes_decoded += result.bytes_decoded;
  trace->timings.read_ns += result.read_ns;
  trace->timings.decode_ns += result.decode_ns;
  trace->timings.normalize_ns += result.normalize_ns;
}

}  // namespace fr::load_internal
