// Log parsing throughput against grep, measured in the same run on the same files (a ratio, not
// an absolute time, because these machines are shared and noisy).
//
// Writes realistic logs of a 512-rank job with NCCL_DEBUG=INFO on (mostly NCCL INFO chatter, some
// glog lines of ProcessGroupNCCL, training progress, a few faults) into a directory, one file per
// rank, then times `grep -c NCCL` over all of them and fr's log parser (ParseLogFiles, one
// thread) over the same files, and prints MB/s, the ratio to grep and the peak RSS.
//
//   log_parse_bench --bytes 1073741824 --dir /scratch/logs   # ~1 GB, the documented figure
//   log_parse_bench --smoke                                   # a few MB, part of the test suite
//
// With --check it exits 1 when the parser is below --target-mbps (default 200 MB/s per core).
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"

namespace {

struct Flags {
  int64_t bytes = int64_t{256} << 20;
  int ranks = 512;
  std::string dir;
  bool keep = false;
  bool check = false;
  double target_mbps = 200;
};

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One rank's log, about `bytes` long: NCCL INFO lines dominate, as they do with NCCL_DEBUG=INFO.
void WriteRankLog(const std::string& path, int rank, int ranks, int64_t bytes) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(2);
  }
  const int host = rank / 8, dev = rank % 8, pid = 10000 + rank;
  char line[512];
  int64_t written = 0;
  uint32_t state = 12345u + static_cast<uint32_t>(rank);
  int64_t n = 0;
  int len = std::snprintf(line, sizeof(line),
                          "node%03d:%d:%d [%d] NCCL INFO comm 0x55d0c8a0%04x rank %d nranks %d "
                          "cudaDev %d nvmlDev %d busId %x000 commId 0x1a2b3c4d - Init COMPLETE\n",
                          host, pid, pid, dev, rank, rank, ranks, dev, dev, 0x18 + dev * 0x10);
  std::fwrite(line, 1, static_cast<size_t>(len), f);
  while (written < bytes) {
    state = state * 1664525u + 1013904223u;
    int kind = static_cast<int>((state >> 24) % 100);
    int channel = static_cast<int>((state >> 8) % 32);
    if (kind < 80) {
      len =
          std::snprintf(line, sizeof(line),
                        "node%03d:%d:%d [%d] NCCL INFO Channel %02d/32 : %d[%d] -> %d[%d] [send] "
                        "via NET/IB/%d/GDRDMA\n",
                        host, pid, pid + 7, dev, channel, rank, dev, (rank + 8) % ranks, dev, dev);
    } else if (kind < 88) {
      len = std::snprintf(line, sizeof(line),
                          "[rank%d]:[I1201 12:%02d:%02d.%06d ProcessGroupNCCL.cpp:917] [PG ID 0 PG "
                          "GUID 0(default_pg) Rank %d] ProcessGroupNCCL initialization options: "
                          "size: %d, global rank: %d, TIMEOUT(ms): 600000\n",
                          rank, static_cast<int>(n / 60 % 60), static_cast<int>(n % 60),
                          static_cast<int>(state % 1000000), rank, ranks, rank);
    } else {
      len = std::snprintf(line, sizeof(line),
                          "[rank%d]: iteration %7lld/  100000 | consumed samples: %9lld | "
                          "elapsed time per iteration (ms): 812.3 | learning rate: 3.000E-04 | "
                          "lm loss: %.6E | loss scale: 1.0 | grad norm: 1.234 |\n",
                          rank, static_cast<long long>(n), static_cast<long long>(n * 512),
                          2.0 + (state % 1000) / 1000.0);
    }
    std::fwrite(line, 1, static_cast<size_t>(len), f);
    written += len;
    ++n;
  }
  // The end of the job: rank 37's GPU fell off the bus, everyone else times out.
  if (rank == 37) {
    std::fprintf(f,
                 "[ 8812.123456] NVRM: Xid (PCI:0000:%02x:00): 79, pid=%d, name=python, GPU has "
                 "fallen off the bus.\n",
                 0x18 + dev * 0x10, pid);
  } else {
    std::fprintf(f,
                 "[rank%d]:[E1201 13:03:04.123456 ProcessGroupNCCL.cpp:616] [Rank %d] Watchdog "
                 "caught collective operation timeout: WorkNCCL(SeqNum=2383, OpType=ALLREDUCE, "
                 "NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600012 milliseconds "
                 "before timing out.\n",
                 rank, rank);
  }
  std::fclose(f);
}

// Runs `grep -c NCCL` over `paths` and returns its wall time. Its output goes to a file, not to
// /dev/null: GNU grep notices /dev/null and stops at the first match, which would time nothing.
double TimeGrep(const std::vector<std::string>& paths) {
  std::vector<char*> argv;
  std::string grep = "grep", count = "-c", needle = "NCCL";
  argv.push_back(grep.data());
  argv.push_back(count.data());
  argv.push_back(needle.data());
  std::vector<std::string> copies = paths;
  for (std::string& p : copies) argv.push_back(p.data());
  argv.push_back(nullptr);
  auto start = std::chrono::steady_clock::now();
  pid_t child = fork();
  if (child == 0) {
    std::string out = paths.front() + ".grep";
    if (std::freopen(out.c_str(), "w", stdout) == nullptr) _exit(127);
    execvp("grep", argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  double seconds = Seconds(start);
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
    std::fprintf(stderr, "grep failed\n");
    std::exit(2);
  }
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--bytes") {
      flags.bytes = std::atoll(value().c_str());
    } else if (arg == "--ranks") {
      flags.ranks = std::atoi(value().c_str());
    } else if (arg == "--dir") {
      flags.dir = value();
    } else if (arg == "--keep") {
      flags.keep = true;
    } else if (arg == "--check") {
      flags.check = true;
    } else if (arg == "--target-mbps") {
      flags.target_mbps = std::atof(value().c_str());
    } else if (arg == "--smoke") {
      flags.bytes = int64_t{8} << 20;
      flags.ranks = 64;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", arg.c_str());
      return 2;
    }
  }
  if (flags.ranks < 1 || flags.bytes < flags.ranks) {
    std::fprintf(stderr, "--bytes and --ranks must be positive\n");
    return 2;
  }
  bool made_dir = false;
  if (flags.dir.empty()) {
    char pattern[] = "/tmp/fr_log_bench.XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      std::perror("mkdtemp");
      return 2;
    }
    flags.dir = pattern;
    made_dir = true;
  } else {
    mkdir(flags.dir.c_str(), 0755);
  }

  std::vector<std::string> paths;
  auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < flags.ranks; ++rank) {
    paths.push_back(flags.dir + "/rank_" + std::to_string(rank) + ".log");
    WriteRankLog(paths.back(), rank, flags.ranks, flags.bytes / flags.ranks);
  }
  double generate_s = Seconds(start);
  int64_t total = 0;
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) == 0) total += st.st_size;
  }

  // Warm the page cache once so that neither side pays for the disk.
  TimeGrep(paths);
  double grep_s = TimeGrep(paths);

  start = std::chrono::steady_clock::now();
  absl::StatusOr<fr::LogSet> logs = fr::ParseLogFiles(paths);
  double parse_s = Seconds(start);
  if (!logs.ok() || !logs->errors.empty()) {
    std::fprintf(stderr, "parse failed\n");
    return 2;
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);

  const double mb = static_cast<double>(total) / 1e6;
  const double parse_mbps = mb / parse_s, grep_mbps = mb / grep_s;
  std::printf("input            %d ranks, %.1f MB (generated in %.1f s)\n", flags.ranks, mb,
              generate_s);
  std::printf("grep -c NCCL     %.3f s  %8.1f MB/s\n", grep_s, grep_mbps);
  std::printf("fr log parser    %.3f s  %8.1f MB/s per core  (%.2fx grep's time)\n", parse_s,
              parse_mbps, parse_s / grep_s);
  std::printf("events           %zu\n", logs->events.size());
  std::printf("peak RSS         %.1f MB\n", usage.ru_maxrss / 1024.0);

  unlink((paths.front() + ".grep").c_str());
  if (made_dir && !flags.keep) {
    for (const std::string& p : paths) unlink(p.c_str());
    rmdir(flags.dir.c_str());
  }
  if (logs->events.size() < static_cast<size_t>(flags.ranks)) {
    std::fprintf(stderr, "expected at least one event per rank\n");
    return 1;
  }
  if (flags.check && parse_mbps < flags.target_mbps) {
    std::fprintf(stderr, "below target: %.1f < %.1f MB/s\n", parse_mbps, flags.target_mbps);
    return 1;
  }
  return 0;
}
