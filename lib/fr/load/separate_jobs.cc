// Whether a directory holds more than one job: dumps of several attempt_<n> folders of one run,
// of runs that claim worlds of different sizes, or two different files of one rank. The readable
// dumps are grouped by folder and the folders into jobs; the job analysed is kept and the other
// jobs' files are set aside and listed as other jobs.
#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "fr/load/load_internal.h"

namespace fr::load_internal {
namespace {

// The restart a dump belongs to, from a folder named "attempt_<n>" on its path (torchelastic's
// own layout for restarts, `<log_dir>/<run_id>/attempt_<n>/`, which launchers and harnesses that
// keep each attempt's files apart follow): the path up to that folder and n; n = -1 for none.
struct Attempt {
  std::string root;
  int64_t number = -1;
  bool operator==(const Attempt&) const = default;
};

Attempt AttemptOf(std::string_view path) {
  Attempt attempt;
  size_t begin = 0;
  while (begin < path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) break;  // the file's own name is no folder
    std::string_view name = path.substr(begin, end - begin);
    constexpr std::string_view kWord = "attempt_";
    if (name.size() > kWord.size() && name.size() <= kWord.size() + 9 &&
        name.substr(0, kWord.size()) == kWord &&
        std::all_of(name.begin() + kWord.size(), name.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      attempt.root = std::string(path.substr(0, begin));
      attempt.number = std::stoll(std::string(name.substr(kWord.size())));
    }
    begin = end + 1;
  }
  return attempt;
}

// The world a dump's own process groups say the job had: the largest group it names (its
// default group lists every rank); 0 when it names none (Gloo's dumps list no members).
int64_t ClaimedWorld(const RankDump& dump) {
  int64_t world = 0;
  for (const ProcessGroup& group : dump.groups) {
    world = std::max(world, static_cast<int64_t>(group.ranks.size()));
  }
  return world;
}

// A folder's readable dumps of one claimed world, as one piece of a job.
struct FolderOfDumps {
  std::string folder;
  std::string parent;
  int64_t claimed_world = 0;  // ClaimedWorld of its dumps, 0 when they name no group
  Attempt attempt;
  std::vector<size_t> files;  // indices into results
  std::map<int64_t, size_t> by_rank;
  int64_t oldest_ns = kUnknown;
  int64_t newest_ns = kUnknown;
  int64_t world = 0;  // the most ranks its dumps say the job has
};

struct JobOfFolders {
  std::vector<const FolderOfDumps*> folders;
  Attempt attempt;  // its folders' (they never span two attempts)
  std::map<int64_t, size_t> by_rank;
  int64_t oldest_ns = kUnknown;
  int64_t newest_ns = kUnknown;
  int64_t world = 0;
};

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool SameContent(const FileResult& a, const FileResult& b) {
  return a.content_hash != 0 && a.content_hash == b.content_hash &&
         a.bytes_decoded == b.bytes_decoded;
}

// Whether `folder` can be part of `job`: no rank of both in files that differ, and the two either
// sit side by side (per-host folders of one job) or overlap in time.
bool FitsJob(const FolderOfDumps& folder, const JobOfFolders& job,
             const std::vector<FileResult>& results) {
  // Two attempts of one run are two jobs, whatever their ranks and times: a retry restarts every
  // rank, so its ops never match the failed attempt's.
  if (folder.attempt.root == job.attempt.root && folder.attempt.number != job.attempt.number) {
    return false;
  }
  for (const auto& [rank, file] : folder.by_rank) {
    auto other = job.by_rank.find(rank);
    if (other != job.by_rank.end() && !SameContent(results[file], results[other->second])) {
      return false;
    }
  }
  // Dumps that claim worlds of different sizes are one job only when their records overlap in
  // time: side by side in one folder they are two runs.
  bool other_world = false;
  for (const FolderOfDumps* member : job.folders) {
    other_world |= member->claimed_world != 0 && folder.claimed_world != 0 &&
                   member->claimed_world != folder.claimed_world;
  }
  for (const FolderOfDumps* member : job.folders) {
    if (!other_world && member->parent == folder.parent) return true;
  }
  return folder.oldest_ns != kUnknown && job.oldest_ns != kUnknown &&
         folder.oldest_ns <= job.newest_ns && job.oldest_ns <= folder.newest_ns;
}

}  // namespace

bool SeveralAttempts(const std::vector<DiscoveredFile>& files) {
  std::optional<Attempt> first;
  for (const DiscoveredFile& file : files) {
    Attempt attempt = AttemptOf(file.path);
    if (attempt.number < 0) continue;
    if (!first.has_value()) {
      first = std::move(attempt);
    } else if (attempt.root == first->root && attempt.number != first->number) {
      return true;
    }
  }
  return false;
}

bool SeveralWorlds(const std::vector<FileResult>& results) {
  int64_t seen = 0;
  for (const FileResult& result : results) {
    if (!result.dump.has_value() || !result.dump->ok()) continue;
    int64_t world = ClaimedWorld(**result.dump);
    if (world == 0) continue;
    if (seen != 0 && world != seen) return true;
    seen = world;
  }
  return false;
}

void SeparateJobs(const std::vector<DiscoveredFile>& files, std::vector<FileResult>& results,
                  LoadedTrace* trace) {
  std::map<std::string, FolderOfDumps> folders;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!results[i].dump.has_value() || !results[i].dump->ok()) continue;
    const RankDump& dump = **results[i].dump;
    std::string parent = ParentOf(files[i].path);
    int64_t claimed = ClaimedWorld(dump);
    // One folder's dumps of different worlds are pieces of different runs.
    FolderOfDumps& folder = folders[claimed == 0 ? parent : fmt::format("{}\n{}", parent, claimed)];
    folder.folder = parent;
    folder.parent = ParentOf(parent);
    folder.claimed_world = claimed;
    folder.attempt = AttemptOf(files[i].path);
    folder.files.push_back(i);
    if (!folder.by_rank.emplace(files[i].rank, i).second) continue;
    for (const Entry& entry : dump.entries) {
      if (entry.time_created_ns <= 0) continue;
      if (folder.oldest_ns == kUnknown || entry.time_created_ns < folder.oldest_ns) {
        folder.oldest_ns = entry.time_created_ns;
      }
      folder.newest_ns = std::max(folder.newest_ns, entry.time_created_ns);
    }
    folder.world = std::max(folder.world, files[i].rank + 1);
    for (const ProcessGroup& group : dump.groups) {
      folder.world = std::max(folder.world, static_cast<int64_t>(group.ranks.size()));
    }
  }
  if (folders.size() < 2) return;
  std::vector<const FolderOfDumps*> order;
  for (const auto& [name, folder] : folders) order.push_back(&folder);
  std::stable_sort(order.begin(), order.end(), [](const FolderOfDumps* a, const FolderOfDumps* b) {
    return a->newest_ns > b->newest_ns;
  });
  std::vector<JobOfFolders> jobs;
  for (const FolderOfDumps* folder : order) {
    JobOfFolders* home = nullptr;
    for (JobOfFolders& job : jobs) {
      if (FitsJob(*folder, job, results)) {
        home = &job;
        break;
      }
    }
    if (home == nullptr) {
      home = &jobs.emplace_back();
      home->attempt = folder->attempt;
    }
    home->folders.push_back(folder);
    for (const auto& [rank, file] : folder->by_rank) home->by_rank.emplace(rank, file);
    if (folder->oldest_ns != kUnknown &&
        (home->oldest_ns == kUnknown || folder->oldest_ns < home->oldest_ns)) {
      home->oldest_ns = folder->oldest_ns;
    }
    home->newest_ns = std::max(home->newest_ns, folder->newest_ns);
    home->world = std::max(home->world, folder->world);
  }
  if (jobs.size() < 2) return;
  auto complete = [](const JobOfFolders& job) {
    return static_cast<int64_t>(job.by_rank.size()) >= job.world;
  };
  // Attempts of one run: every job is one attempt_<n> of the same root.
  bool attempts = std::all_of(jobs.begin(), jobs.end(), [&](const JobOfFolders& job) {
    return job.attempt.number >= 0 && job.attempt.root == jobs.front().attempt.root;
  });
  size_t kept = 0;
  for (size_t j = 1; j < jobs.size(); ++j) {
    const JobOfFolders& a = jobs[j];
    const JobOfFolders& b = jobs[kept];
    bool better = attempts                               ? a.attempt.number < b.attempt.number
                  : complete(a) != complete(b)           ? complete(a)
                  : complete(a)                          ? a.newest_ns > b.newest_ns
                  : a.by_rank.size() != b.by_rank.size() ? a.by_rank.size() > b.by_rank.size()
                                                         : a.newest_ns > b.newest_ns;
    if (better) kept = j;
  }
  std::vector<std::string> kept_folders;
  for (const FolderOfDumps* folder : jobs[kept].folders) kept_folders.push_back(folder->folder);
  std::sort(kept_folders.begin(), kept_folders.end());
  auto overlaps = [](const JobOfFolders& a, const JobOfFolders& b) {
    return a.oldest_ns != kUnknown && b.oldest_ns != kUnknown && a.oldest_ns <= b.newest_ns &&
           b.oldest_ns <= a.newest_ns;
  };
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (j == kept) continue;
    // A few ranks' dumps from within the kept job's time (an earlier dump of those ranks kept in
    // backup/) are that job's, settled rank by rank as before; a complete set of ranks, or one
    // from another time, is another job.
    if (!attempts && !complete(jobs[j]) && overlaps(jobs[j], jobs[kept])) continue;
    OtherJob other;
    for (const FolderOfDumps* folder : jobs[j].folders) other.folders.push_back(folder->folder);
    std::sort(other.folders.begin(), other.folders.end());
    other.ranks = static_cast<int64_t>(jobs[j].by_rank.size());
    other.newest_ns = jobs[j].newest_ns;
    std::string why =
        attempts ? fmt::format(
                       "a later attempt's dump ({} with {} ranks{}); the attempt analysed is the "
                       "first, whose failure caused the restart, in {}; analyse this one with "
                       "`fr-analyze {}`",
                       fmt::join(other.folders, ", "), other.ranks,
                       complete(jobs[j]) ? "" : fmt::format(" of {}", jobs[j].world),
                       fmt::join(kept_folders, ", "), other.folders.front())
                 : fmt::format(
                       "another job's dump ({} with {} ranks{}); the job analysed is in {}; "
                       "analyse this one with `fr-analyze {}`",
                       fmt::join(other.folders, ", "), other.ranks,
                       complete(jobs[j]) ? "" : fmt::format(" of {}", jobs[j].world),
                       fmt::join(kept_folders, ", "), other.folders.front());
    for (const FolderOfDumps* folder : jobs[j].folders) {
      for (size_t file : folder->files) {
        trace->skipped.push_back({.path = files[file].path,
                                  .reason = why,
                                  .rank = files[file].rank,
                                  .kind = SetAsideKind::kDumpNotUsed});
        results[file].dump.reset();
      }
    }
    trace->other_jobs.push_back(std::move(other));
  }
  std::sort(trace->other_jobs.begin(), trace->other_jobs.end(),
            [](const OtherJob& a, const OtherJob& b) { return a.newest_ns > b.newest_ns; });
}

}  // namespace fr::load_internal
