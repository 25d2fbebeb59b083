// Decode and normalize throughput on realistic dumps (the example job's ring buffers with
// 10-20 frame stacks), one thread. The CPython baseline for the same bytes is measured in the
// same run by bench/run_benchmarks.py, which also drives this program.
//
// Most cases drop each document before decoding the next, as the loader does (decode, normalize,
// drop), so its storage is recycled through the per-thread pool; BM_DecodePickleKeepingDocuments
// keeps documents alive to show the cost when that reuse cannot happen.
//
//   decode_bench --benchmark_filter=BM_DecodePickle
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "fr/decode/json_decoder.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/normalize/direct_pickle_reader.h"
#include "fr/normalize/normalize.h"
#include "fr/simulate/example_job.h"
#include "fr/write/dump_writer.h"

namespace fr {
namespace {

std::shared_ptr<const Buffer> RealisticDump(int64_t entries, bool json) {
  ExampleJobOptions options;
  options.world_size = 64;
  options.tensor_parallel = 8;
  options.entries_per_rank = entries;
  options.stuck_rank = 37;
  DumpSpec spec = MakeExampleRankDump(options, 37 - 8);
  return Buffer::FromString(json ? WriteDumpJson(spec) : WriteDumpPickle(spec));
}

void BM_DecodePickle(benchmark::State& state) {
  auto bytes = RealisticDump(state.range(0), /*json=*/false);
  for (auto _ : state) {
    absl::StatusOr<Document> doc = DecodePickle(bytes);
    if (!doc.ok()) state.SkipWithError(std::string(doc.status().message()).c_str());
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["file_bytes"] = static_cast<double>(bytes->size());
}
BENCHMARK(BM_DecodePickle)->Arg(250)->Arg(1000)->Arg(2000);

// As BM_DecodePickle, but every document stays alive until 64 are held (a caller collecting
// documents), so most decodes start from fresh memory instead of a recycled document's.
void BM_DecodePickleKeepingDocuments(benchmark::State& state) {
  auto bytes = RealisticDump(state.range(0), /*json=*/false);
  std::vector<Document> held;
  held.reserve(64);
  for (auto _ : state) {
    absl::StatusOr<Document> doc = DecodePickle(bytes);
    if (!doc.ok()) {
      state.SkipWithError(std::string(doc.status().message()).c_str());
      break;
    }
    held.push_back(*std::move(doc));
    if (held.size() == 64) {
      state.PauseTiming();
      held.clear();
      state.ResumeTiming();
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DecodePickleKeepingDocuments)->Arg(2000);

void BM_DecodeJson(benchmark::State& state) {
  auto bytes = RealisticDump(state.range(0), /*json=*/true);
  for (auto _ : state) {
    absl::StatusOr<Document> doc = DecodeJson(bytes);
    if (!doc.ok()) state.SkipWithError(std::string(doc.status().message()).c_str());
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DecodeJson)->Arg(2000);

// Decode plus normalization: the per-file work of a directory load, without I/O.
void BM_DecodeAndNormalizePickle(benchmark::State& state) {
  auto bytes = RealisticDump(state.range(0), /*json=*/false);
  for (auto _ : state) {
    absl::StatusOr<Document> doc = DecodePickle(bytes);
    if (!doc.ok()) {
      state.SkipWithError(std::string(doc.status().message()).c_str());
      break;
    }
    absl::StatusOr<RankDump> dump = NormalizeDump(*doc, 29);
    benchmark::DoNotOptimize(dump);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DecodeAndNormalizePickle)->Arg(2000);

// The direct reader of PyTorch's layout: bytes to the same RankDump in one pass, as the loader
// reads pickles (it falls back to decode + normalize only for other layouts).
void BM_DirectReadPickle(benchmark::State& state) {
  auto bytes = RealisticDump(state.range(0), /*json=*/false);
  for (auto _ : state) {
    DirectReadResult read = ReadTorchPickleDirect(bytes->bytes(), 29);
    if (!read.dump.has_value()) {
      state.SkipWithError(std::string(read.decline_reason).c_str());
      break;
    }
    benchmark::DoNotOptimize(read);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_DirectReadPickle)->Arg(250)->Arg(2000);

// The bytes of the file named by FR_BENCH_FILE (run_benchmarks.py times CPython's pickle.loads on
// exactly the same bytes), copied to the heap once so that loops measure decoding, not page
// faults; nullptr after marking `state` skipped.
std::shared_ptr<const Buffer> BenchFileBytes(benchmark::State& state) {
  const char* path = std::getenv("FR_BENCH_FILE");
  if (path == nullptr) {
    state.SkipWithError("FR_BENCH_FILE is not set");
    return nullptr;
  }
  absl::StatusOr<std::shared_ptr<const Buffer>> read = Buffer::ReadFile(path);
  if (!read.ok()) {
    state.SkipWithError(std::string(read.status().message()).c_str());
    return nullptr;
  }
  return Buffer::FromString(std::string((*read)->bytes()));
}

void BM_DecodePickleFile(benchmark::State& state) {
  std::shared_ptr<const Buffer> bytes = BenchFileBytes(state);
  if (bytes == nullptr) return;
  for (auto _ : state) {
    absl::StatusOr<Document> doc = DecodePickle(bytes);
    if (!doc.ok()) {
      state.SkipWithError(std::string(doc.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
}
BENCHMARK(BM_DecodePickleFile);

// What the loader does with the file: the direct reader to a RankDump (decode and normalize in
// one), the figure run_benchmarks.py compares with CPython's pickle.loads (which also stops at
// plain Python objects, short of any normalization).
void BM_DirectReadPickleFile(benchmark::State& state) {
  std::shared_ptr<const Buffer> bytes = BenchFileBytes(state);
  if (bytes == nullptr) return;
  for (auto _ : state) {
    DirectReadResult read = ReadTorchPickleDirect(bytes->bytes(), 0);
    if (!read.dump.has_value()) {
      state.SkipWithError(std::string(read.decline_reason).c_str());
      break;
    }
    benchmark::DoNotOptimize(read);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes->size()));
}
BENCHMARK(BM_DirectReadPickleFile);

// Normalization alone of the same file (decoded once), to compare the warm per-file normalize
// cost with what a directory load reports under --timings.
void BM_NormalizePickleFile(benchmark::State& state) {
  std::shared_ptr<const Buffer> bytes = BenchFileBytes(state);
  if (bytes == nullptr) return;
  absl::StatusOr<Document> doc = DecodePickle(bytes);
  if (!doc.ok()) {
    state.SkipWithError(std::string(doc.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::StatusOr<RankDump> dump = NormalizeDump(*doc, 0);
    benchmark::DoNotOptimize(dump);
  }
}
BENCHMARK(BM_NormalizePickleFile);

}  // namespace
}  // namespace fr

BENCHMARK_MAIN();
