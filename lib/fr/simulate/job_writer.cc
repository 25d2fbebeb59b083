#include "fr/simulate/job_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/write/dump_writer.h"

namespace fr {

absl::StatusOr<std::string> CompressZstd(std::string_view bytes, int level) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  if (ZSTD_isError(n)) {
    return absl::InternalError(fmt::format("zstd: {}", ZSTD_getErrorName(n)));
  }
  out.resize(n);
  return out;
}

absl::StatusOr<std::string> CompressGzip(std::string_view bytes, int level) {
  z_stream z{};
  // 15 + 16: a gzip header and trailer around the deflate stream, as gzip(1) writes.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, bytes.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError(fmt::format("zlib: deflate returned {}", rc));
  out.resize(n);
  return out;
}

std::string DumpFileName(const SimulatedJob& job, int64_t rank, const JobWriteOptions& options) {
  std::string name;
  switch (options.naming) {
    case DumpNaming::kPrefix:
      name = fmt::format("{}{}", options.prefix, rank);
      break;
    case DumpNaming::kHostInName:
      name = fmt::format("{}{}_{}", options.prefix, job.HostName(rank), rank);
      break;
    case DumpNaming::kHostSubdirectory:
      name = fmt::format("{}/{}{}", job.HostName(rank), options.prefix, rank);
      break;
    case DumpNaming::kRankJson:
      name =
          fmt::format("rank_{}.{}", rank, options.encoding == DumpEncoding::kJson ? "json" : "pkl");
      break;
  }
  switch (options.compression) {
    case DumpCompression::kNone:
      break;
    case DumpCompression::kZstd:
      name += ".zst";
      break;
    case DumpCompression::kGzip:
      name += ".gz";
      break;
  }
  return name;
}

namespace {

// Serialises, compresses and writes one rank's dump.
absl::Status WriteRank(const SimulatedJob& job, int64_t rank, const std::string& directory,
                       const JobWriteOptions& options, JobWriteStats* stats) {
  std::optional<DumpSpec> spec = job.RankDump(rank);
  if (!spec) return absl::OkStatus();  // crashed: no file
  if (options.version) spec->version = *options.version;
  std::string bytes =
      options.encoding == DumpEncoding::kJson ? WriteDumpJson(*spec) : WriteDumpPickle(*spec);
  spec.reset();
  stats->bytes_encoded += bytes.size();
  if (options.compression != DumpCompression::kNone) {
    absl::StatusOr<std::string> compressed = options.compression == DumpCompression::kZstd
                                                 ? CompressZstd(bytes, options.zstd_level)
                                                 : CompressGzip(bytes, options.gzip_level);
    if (!compressed.ok()) return compressed.status();
    bytes = *std::move(compressed);
  }
  std::string path = fmt::format("{}/{}", directory, DumpFileName(job, rank, options));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::UnavailableError(fmt::format("{}: cannot write", path));
  if (options.set_mtime_to_dump_time) {
    const int64_t t = job.ground_truth().dump_time_ns + job.HostClockSkewNs(rank);
    const timespec times[2] = {{t / 1'000'000'000, t % 1'000'000'000},
                               {t / 1'000'000'000, t % 1'000'000'000}};
    if (utimensat(AT_FDCWD, path.c_str(), times, 0) != 0) {
      return absl::UnavailableError(fmt::format("{}: cannot set modification time", path));
    }
  }
  stats->bytes_written += bytes.size();
  stats->files += 1;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobWriteStats> WriteSimulatedJob(const SimulatedJob& job,
                                                const std::string& directory,
                                                const JobWriteOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return absl::InvalidArgumentError(
        fmt::format("{}: cannot create directory: {}", directory, error.message()));
  }
  const int64_t world = job.world_size();
  if (options.naming == DumpNaming::kHostSubdirectory) {
    for (int64_t r = 0; r < world; r += job.options().ranks_per_host) {
      std::string host = fmt::format("{}/{}", directory, job.HostName(r));
      std::filesystem::create_directories(host, error);
      if (error) {
        return absl::InvalidArgumentError(
            fmt::format("{}: cannot create directory: {}", host, error.message()));
      }
    }
  }
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(world, 1)));
  // Ranks are handed out one at a time; each worker keeps its own counters, merged at the end.
  std::atomic<int64_t> next{0};
  std::vector<JobWriteStats> stats(static_cast<size_t>(threads));
  std::mutex mutex;
  absl::Status first_error;
  auto worker = [&](int id) {
    for (int64_t r = next++; r < world; r = next++) {
      absl::Status status = WriteRank(job, r, directory, options, &stats[id]);
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(mutex);
        if (first_error.ok()) first_error = status;
        next = world;  // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker, i);
  worker(0);
  for (std::thread& t : pool) t.join();
  if (!first_error.ok()) return first_error;
  JobWriteStats total;
  for (const JobWriteStats& s : stats) {
    total.files += s.files;
    total.bytes_written += s.bytes_written;
    total.bytes_encoded += s.bytes_encoded;
  }
  return total;
}

}  // namespace fr
