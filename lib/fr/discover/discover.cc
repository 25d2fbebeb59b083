#include "fr/discover/discover.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/errno_status.h"
#include "fr/read/input_file.h"
#include "re2/re2.h"

namespace fr {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 6> kDumpExtensions = {".zst",  ".zstd", ".gz",
                                                             ".json", ".pkl",  ".pickle"};
constexpr std::array<std::string_view, 6> kLogExtensions = {".log", ".txt",    ".out",
                                                            ".err", ".stdout", ".stderr"};
// Names that only dumps carry: no need to read the file to believe them.
constexpr std::array<std::string_view, 3> kDumpPrefixes = {"nccl_trace_rank_",
                                                           "comm_lib_trace_rank_", "rank_"};
// "bz2", "h5", "mp4", "sha256": letters then digits, this short, after the last dot, is an
// extension, not a host or rank.
constexpr size_t kMaxExtensionLength = 6;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool EndsWithNoCase(std::string_view text, std::string_view suffix) {
  if (text.size() < suffix.size()) return false;
  std::string_view tail = text.substr(text.size() - suffix.size());
  return std::equal(tail.begin(), tail.end(), suffix.begin(), [](char a, char b) {
    return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b;  // `suffix` is lower case
  });
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

template <size_t N>
std::optional<std::string_view> EndingExtension(std::string_view name,
                                                const std::array<std::string_view, N>& list) {
  for (std::string_view extension : list) {
    // The extension must follow something: ".json" alone is a hidden file, not a dump.
    if (name.size() > extension.size() && EndsWithNoCase(name, extension)) return extension;
  }
  return std::nullopt;
}

// Removes format and compression extensions from the end, as many as there are.
std::string_view StripDumpExtensions(std::string_view name, bool* stripped) {
  *stripped = false;
  while (std::optional<std::string_view> extension = EndingExtension(name, kDumpExtensions)) {
    name.remove_suffix(extension->size());
    *stripped = true;
  }
  return name;
}

// The name after its last dot, or empty when it has none.
std::string_view LastExtension(std::string_view name) {
  size_t dot = name.rfind('.');
  return dot == std::string_view::npos || dot == 0 ? std::string_view() : name.substr(dot);
}

bool IsLogName(std::string_view stem) {
  if (EndingExtension(stem, kLogExtensions)) return true;
  // Rotated logs: "train.log.1".
  size_t digits = stem.size();
  while (digits > 0 && IsDigit(stem[digits - 1])) --digits;
  if (digits == stem.size() || digits == 0 || stem[digits - 1] != '.') return false;
  return EndingExtension(stem.substr(0, digits - 1), kLogExtensions).has_value();
}

bool IsCoreName(std::string_view stem) { return stem == "core" || StartsWith(stem, "core."); }

// What the name says about a file. Exactly one of `skip_reason` and `rank` is set.
struct NameVerdict {
  std::string skip_reason;
  SetAsideKind skip_kind = SetAsideKind::kNotADump;
  std::optional<int64_t> rank;
  bool confirm_by_content = false;  // the name alone does not make it a dump
};

NameVerdict Skip(std::string reason, SetAsideKind kind = SetAsideKind::kNotADump) {
  NameVerdict verdict;
  verdict.skip_reason = std::move(reason);
  verdict.skip_kind = kind;
  return verdict;
}

// Parses the decimal `digits` as a rank no larger than `max_rank`.
NameVerdict RankFromDigits(std::string_view digits, int64_t max_rank) {
  int64_t rank = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) {
    if (error == std::errc::result_out_of_range) {
      return Skip(fmt::format("number {} in the name is too large for a rank", digits));
    }
    return Skip(fmt::format("'{}' in the name is not a rank", digits));
  }
  if (rank > max_rank) {
    return Skip(
        fmt::format("number {} in the name is larger than any rank (max_rank {})", rank, max_rank));
  }
  NameVerdict verdict;
  verdict.rank = rank;
  return verdict;
}

// Name rules shared by the default and the prefix modes: files that are never dumps.
std::optional<NameVerdict> NotADumpByName(std::string_view name, std::string_view stem) {
  if (EndsWithNoCase(name, ".pipe") || EndsWithNoCase(stem, ".pipe")) {
    return Skip("trigger pipe", SetAsideKind::kSpecial);
  }
  if (IsLogName(stem)) return Skip("log file", SetAsideKind::kLogByName);
  if (IsCoreName(stem)) return Skip("core file", SetAsideKind::kCore);
  return std::nullopt;
}

NameVerdict JudgeNameByDefault(std::string_view name, int64_t max_rank) {
  if (name.front() == '.') return Skip("hidden file", SetAsideKind::kHidden);
  bool has_dump_extension = false;
  std::string_view stem = StripDumpExtensions(name, &has_dump_extension);
  if (std::optional<NameVerdict> skip = NotADumpByName(name, stem)) return *std::move(skip);

  size_t digits_begin = stem.size();
  while (digits_begin > 0 && IsDigit(stem[digits_begin - 1])) --digits_begin;
  std::string_view extension = LastExtension(stem);
  if (digits_begin == stem.size()) {
    if (!extension.empty() && extension.size() <= kMaxExtensionLength + 1) {
      return Skip(fmt::format("extension '{}' is not a dump format", extension));
    }
    bool has_digits = std::any_of(stem.begin(), stem.end(), IsDigit);
    return Skip(has_digits ? "name does not end with a rank" : "no rank in the name");
  }
  // "trace.bz2": the digits end an extension made of letters then digits.
  if (!extension.empty() && extension.size() <= kMaxExtensionLength + 1) {
    size_t extension_begin = stem.size() - extension.size();  // at the dot
    if (digits_begin > extension_begin + 1) {
      std::string_view letters =
          stem.substr(extension_begin + 1, digits_begin - extension_begin - 1);
      if (std::all_of(letters.begin(), letters.end(), IsAlpha)) {
        return Skip(fmt::format("extension '{}' is not a dump format", extension));
      }
    }
  }

  NameVerdict verdict = RankFromDigits(stem.substr(digits_begin), max_rank);
  verdict.confirm_by_content =
      verdict.rank.has_value() && !has_dump_extension &&
      std::none_of(kDumpPrefixes.begin(), kDumpPrefixes.end(),
                   [&](std::string_view prefix) { return StartsWith(name, prefix); });
  return verdict;
}

NameVerdict JudgeNameByPrefix(std::string_view name, std::string_view prefix, int64_t max_rank) {
  bool has_dump_extension = false;
  std::string_view stem = StripDumpExtensions(name, &has_dump_extension);
  if (std::optional<NameVerdict> skip = NotADumpByName(name, stem)) return *std::move(skip);
  if (!StartsWith(name, prefix)) {
    if (name.front() == '.') return Skip("hidden file", SetAsideKind::kHidden);
    return Skip(fmt::format("name does not start with prefix '{}'", prefix));
  }
  std::string_view digits = stem.size() > prefix.size() ? stem.substr(prefix.size()) : "";
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), IsDigit)) {
    return Skip(
        fmt::format("prefix '{}' is not followed by a rank and only dump extensions", prefix));
  }
  return RankFromDigits(digits, max_rank);
}

NameVerdict JudgeNameByPattern(const std::string& relative_path, std::string_view name,
                               const RE2& pattern, std::string_view pattern_text,
                               int64_t max_rank) {
  re2::StringPiece captured;
  if (!RE2::FullMatch(relative_path, pattern, &captured) &&
      !RE2::FullMatch(re2::StringPiece(name.data(), name.size()), pattern, &captured)) {
    return Skip(fmt::format("does not match rank pattern '{}'", pattern_text));
  }
  std::string_view digits(captured.data(), captured.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), IsDigit)) {
    return Skip(fmt::format("rank pattern '{}' captured '{}', not a rank", pattern_text, digits));
  }
  return RankFromDigits(digits, max_rank);
}

// The reason to skip a file that starts with `head` (its first bytes, at most 4 looked at), or
// nothing when that start could be a dump.
std::optional<std::string> NotADumpByHead(std::string_view head) {
  if (head.empty()) return std::nullopt;
  head = head.substr(0, 4);
  auto byte = [&](size_t i) { return static_cast<unsigned char>(head[i]); };
  auto starts_with = [&](std::initializer_list<unsigned char> magic) {
    return head.size() >= magic.size() &&
           std::equal(magic.begin(), magic.end(), head.begin(),
                      [](unsigned char m, char c) { return m == static_cast<unsigned char>(c); });
  };
  if (byte(0) == 0x80 /* pickle PROTO */ || head[0] == '{' || head[0] == '[' || head[0] == ' ' ||
      head[0] == '\t' || head[0] == '\n' || head[0] == '\r' ||
      starts_with({0xef, 0xbb, 0xbf} /* UTF-8 BOM */) ||
      starts_with({0x28, 0xb5, 0x2f, 0xfd} /* zstd */) || starts_with({0x1f, 0x8b} /* gzip */)) {
    return std::nullopt;
  }
  // Say what it looks like, never what it holds: the file may be anything a link pointed to.
  return fmt::format("content is not a pickle, JSON, zstd or gzip stream: {}",
                     DescribeNonDump(head));
}

// Reads at most 4 bytes. Returns the reason to skip the file, or nothing when its start could be
// a dump (or cannot be read: the loader then reports the real error).
std::optional<std::string> NotADumpByContent(const std::string& path) {
  // O_NONBLOCK: the file was regular when stat'ed, but must not hang us if it became a FIFO.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char head[4] = {};
  ssize_t got = ::read(fd, head, sizeof(head));
  ::close(fd);
  if (got <= 0) return std::nullopt;
  return NotADumpByHead(std::string_view(head, static_cast<size_t>(got)));
}

// Whether a folder on the way to `relative_path` ('/' separators) is hidden (".git/x"): the walk
// does not enter those.
bool InHiddenFolder(std::string_view relative_path) {
  size_t slash = relative_path.rfind('/');
  if (slash == std::string_view::npos) return false;
  std::string_view folders = relative_path.substr(0, slash);
  for (size_t begin = 0; begin <= folders.size();) {
    size_t end = std::min(folders.find('/', begin), folders.size());
    if (end > begin && folders[begin] == '.') return true;
    begin = end + 1;
  }
  return false;
}

std::string NonRegularReason(mode_t mode) {
  if (S_ISFIFO(mode)) return "FIFO (trigger pipe)";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  return "not a regular file";
}

struct Candidate {
  std::string path;
  std::string open_path;
  int64_t rank = -1;
  uint64_t size = 0;
  std::pair<dev_t, ino_t> identity;
  bool held = false;
};

// The absolute path `path` resolves to (every link followed), or nothing when it cannot be.
std::optional<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, void (*)(void*)> resolved(::realpath(path.c_str(), nullptr), std::free);
  if (resolved == nullptr) return std::nullopt;
  return std::string(resolved.get());
}

// Whether the resolved path `path` lies inside the resolved directory `root`.
bool IsInside(std::string_view path, std::string_view root) {
  if (root == "/") return true;
  return path.starts_with(root) && (path.size() == root.size() || path[root.size()] == '/');
}

class Walker {
 public:
  Walker(const DiscoverOptions& options, const RE2* pattern)
      : options_(options), pattern_(pattern) {
    // Only the file-name part of a prefix can match a file name.
    std::string_view prefix = options.prefix;
    size_t slash = prefix.rfind('/');
    prefix_ = slash == std::string_view::npos ? prefix : prefix.substr(slash + 1);
  }

  // Walks the directory `root` (already known to be one, identified by `root_stat`).
  absl::Status WalkTree(const std::string& root, const struct stat& root_stat) {
    visited_.insert({root_stat.st_dev, root_stat.st_ino});
    root_real_ = RealPath(root).value_or(root);
    // Depth-first with an explicit stack: deep trees cannot overflow the call stack.
    std::vector<std::pair<fs::path, std::string>> pending;
    if (std::error_code error = WalkDirectory(fs::path(root), "", &pending)) {
      return absl::PermissionDeniedError(
          fmt::format("cannot read directory '{}': {}", root, error.message()));
    }
    while (!pending.empty()) {
      auto [directory, relative] = std::move(pending.back());
      pending.pop_back();
      if (std::error_code error = WalkDirectory(directory, relative, &pending)) {
        SkipFile(directory.string(), fmt::format("cannot read directory: {}", error.message()),
                 SetAsideKind::kUnreadable);
      }
    }
    return absl::OkStatus();
  }

  // Judges one file; `relative_path` uses '/' separators. `open_path` is what the loader is to
  // open (the resolved target of a symlink, or `path`).
  void VisitFile(const std::string& path, const std::string& relative_path, const struct stat& info,
                 const std::string& open_path) {
    if (!S_ISREG(info.st_mode)) {
      return SkipFile(path, NonRegularReason(info.st_mode), SetAsideKind::kSpecial);
    }
    NameVerdict verdict = JudgeName(relative_path);
    if (!verdict.rank.has_value()) {
      return SkipFile(path, std::move(verdict.skip_reason), verdict.skip_kind);
    }
    if (verdict.confirm_by_content && info.st_size > 0) {
      if (std::optional<std::string> reason = NotADumpByContent(open_path)) {
        return SkipFile(path, std::move(*reason), SetAsideKind::kNotADump);
      }
    }
    candidates_.push_back({.path = path,
                           .open_path = open_path,
                           .rank = *verdict.rank,
                           .size = static_cast<uint64_t>(info.st_size),
                           .identity = {info.st_dev, info.st_ino}});
  }

  // Judges a file held in memory as if it were at `held.relative_path` under `root`. Its
  // identity is its place in the list, on a device no file has: distinct from every file.
  void VisitHeld(const std::string& root, const HeldFile& held, size_t index) {
    std::string path = (fs::path(root) / held.relative_path).string();
    if (InHiddenFolder(held.relative_path)) {
      return SkipFile(path, "hidden directory (not searched)", SetAsideKind::kHidden);
    }
    NameVerdict verdict = JudgeName(held.relative_path);
    if (!verdict.rank.has_value()) {
      return SkipFile(path, std::move(verdict.skip_reason), verdict.skip_kind);
    }
    if (verdict.confirm_by_content && held.size > 0) {
      if (std::optional<std::string> reason = NotADumpByHead(held.head)) {
        return SkipFile(path, std::move(*reason), SetAsideKind::kNotADump);
      }
    }
    candidates_.push_back({.path = path,
                           .open_path = "",
                           .rank = *verdict.rank,
                           .size = held.size,
                           .identity = {static_cast<dev_t>(-1), static_cast<ino_t>(index)},
                           .held = true});
  }

  // The verdict of rules 1-4 on a name alone (`relative_path`, '/' separators).
  NameVerdict JudgeName(const std::string& relative_path) const {
    std::string_view name = relative_path;
    if (size_t slash = name.rfind('/'); slash != std::string_view::npos) {
      name.remove_prefix(slash + 1);
    }
    if (pattern_ != nullptr) {
      return JudgeNameByPattern(relative_path, name, *pattern_, options_.rank_pattern,
                                options_.max_rank);
    }
    if (!prefix_.empty()) return JudgeNameByPrefix(name, prefix_, options_.max_rank);
    return JudgeNameByDefault(name, options_.max_rank);
  }

  void SkipFile(std::string path, std::string reason, SetAsideKind kind) {
    result_.skipped.push_back({.path = std::move(path), .reason = std::move(reason), .kind = kind});
  }

  // Sorts everything and settles ranks claimed more than once.
  Discovery Finish() && {
    std::sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.rank, a.path) < std::tie(b.rank, b.path);
    });
    for (size_t begin = 0, end = 0; begin < candidates_.size(); begin = end) {
      end = begin + 1;
      bool one_file = true;
      while (end < candidates_.size() && candidates_[end].rank == candidates_[begin].rank) {
        one_file &= candidates_[end].identity == candidates_[begin].identity;
        ++end;
      }
      const Candidate& first = candidates_[begin];
      if (one_file) {
        result_.files.push_back({first.path, first.rank, first.size, first.open_path, first.held});
        for (size_t i = begin + 1; i < end; ++i) {
          SkipFile(candidates_[i].path, fmt::format("same file as {}", first.path),
                   SetAsideKind::kSameFile);
        }
        continue;
      }
      // Distinct files for one rank: all go to the loader, which tells by content which is the
      // rank's dump (identical copies, a newer dump, a file that is no dump at all). Links to a
      // file already listed add nothing.
      RankConflict conflict;
      conflict.rank = first.rank;
      std::set<std::pair<dev_t, ino_t>> listed;
      for (size_t i = begin; i < end; ++i) {
        const Candidate& candidate = candidates_[i];
        auto same =
            std::find_if(candidates_.begin() + begin, candidates_.begin() + i,
                         [&](const Candidate& c) { return c.identity == candidate.identity; });
        if (same != candidates_.begin() + i) {
          SkipFile(candidate.path, fmt::format("same file as {}", same->path),
                   SetAsideKind::kSameFile);
          continue;
        }
        result_.files.push_back(
            {candidate.path, candidate.rank, candidate.size, candidate.open_path, candidate.held});
        conflict.paths.push_back(candidate.path);
      }
      result_.conflicts.push_back(std::move(conflict));
    }
    std::sort(result_.skipped.begin(), result_.skipped.end(),
              [](const SkippedFile& a, const SkippedFile& b) {
                return std::tie(a.path, a.reason) < std::tie(b.path, b.reason);
              });
    return std::move(result_);
  }

 private:
  // Visits the entries of `directory` and queues its subdirectories. Returns the error when the
  // directory cannot be opened at all.
  std::error_code WalkDirectory(const fs::path& directory, const std::string& relative,
                                std::vector<std::pair<fs::path, std::string>>* pending) {
    std::error_code error;
    fs::directory_iterator it(directory, error);
    if (error) return error;
    for (const fs::directory_iterator end; it != end;) {
      const fs::path& path = it->path();
      std::string name = path.filename().string();
      std::string child_relative = relative.empty() ? name : fmt::format("{}/{}", relative, name);
      VisitEntry(path.string(), child_relative, name, pending);
      if (it.increment(error); error) {
        SkipFile(directory.string(),
                 fmt::format("directory listing stopped early: {}", error.message()),
                 SetAsideKind::kUnreadable);
        break;
      }
    }
    return {};
  }

  void VisitEntry(const std::string& path, const std::string& relative, std::string_view name,
                  std::vector<std::pair<fs::path, std::string>>* pending) {
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0) {
      // Gone since the listing (a dump being rewritten): nothing to report it as.
      return SkipFile(path, fmt::format("cannot stat: {}", std::strerror(errno)),
                      SetAsideKind::kUnreadable);
    }
    if (S_ISLNK(info.st_mode)) {
      if (::stat(path.c_str(), &info) != 0) {
        return SkipFile(path, fmt::format("broken symlink: {}", std::strerror(errno)),
                        SetAsideKind::kLink);
      }
      // Like os.walk and find: links to directories can loop or leave the tree.
      if (S_ISDIR(info.st_mode)) {
        return SkipFile(path, "symlink to a directory (not followed)", SetAsideKind::kLink);
      }
      std::optional<std::string> target = RealPath(path);
      if (!target.has_value()) {
        return SkipFile(path, fmt::format("cannot resolve symlink: {}", std::strerror(errno)),
                        SetAsideKind::kLink);
      }
      if (!options_.follow_links_out_of_root && !IsInside(*target, root_real_)) {
        return SkipFile(path,
                        "symlink to a file outside the input directory (not followed; "
                        "fr-analyze --follow-links follows it)",
                        SetAsideKind::kLink);
      }
      return VisitFile(path, relative, info, *target);
    }
    if (S_ISDIR(info.st_mode)) {
      if (name.front() == '.') {
        return SkipFile(path, "hidden directory (not searched)", SetAsideKind::kHidden);
      }
      if (!visited_.insert({info.st_dev, info.st_ino}).second) {
        return SkipFile(path, "directory already searched under another path",
                        SetAsideKind::kSameFile);
      }
      pending->emplace_back(path, relative);
      return;
    }
    VisitFile(path, relative, info, path);
  }

  const DiscoverOptions& options_;
  const RE2* pattern_;       // null: no rank pattern
  std::string_view prefix_;  // file-name part of options_.prefix
  std::string root_real_;    // the root directory, every link resolved
  std::set<std::pair<dev_t, ino_t>> visited_;
  std::vector<Candidate> candidates_;
  Discovery result_;
};

absl::StatusOr<std::unique_ptr<RE2>> CompileRankPattern(const std::string& text) {
  if (text.empty()) return nullptr;
  RE2::Options options;
  options.set_log_errors(false);  // the error is returned, not printed
  auto pattern = std::make_unique<RE2>(text, options);
  if (!pattern->ok()) {
    return absl::InvalidArgumentError(
        fmt::format("rank pattern '{}' is not a valid regular expression (RE2 syntax): {}", text,
                    pattern->error()));
  }
  if (pattern->NumberOfCapturingGroups() != 1) {
    return absl::InvalidArgumentError(fmt::format(
        "rank pattern '{}' has {} capture groups; it needs exactly one, the rank (use (?:...) for "
        "other groups)",
        text, pattern->NumberOfCapturingGroups()));
  }
  return pattern;
}

}  // namespace

std::string HostOfDumpPath(std::string_view path, std::string_view root) {
  std::string_view relative = path;
  if (!root.empty() && relative.starts_with(root)) {
    relative.remove_prefix(root.size());
    while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  }
  // A per-host folder: the folder the file sits in.
  if (size_t slash = relative.rfind('/'); slash != std::string_view::npos) {
    std::string_view folder = relative.substr(0, slash);
    if (size_t parent = folder.rfind('/'); parent != std::string_view::npos) {
      folder.remove_prefix(parent + 1);
    }
    return std::string(folder);
  }
  // A host inside the name: what lies between a known dump prefix and the rank, with the same
  // extension rules that found the rank ("nccl_trace_rank_node02_0.zstd" is host node02).
  bool stripped = false;
  std::string_view stem = StripDumpExtensions(relative, &stripped);
  while (!stem.empty() && IsDigit(stem.back())) stem.remove_suffix(1);
  while (!stem.empty() && (stem.back() == '_' || stem.back() == '-')) stem.remove_suffix(1);
  for (std::string_view prefix : kDumpPrefixes) {
    prefix.remove_suffix(1);  // the separator: "rank" alone is a name without host
    if (StartsWith(stem, prefix)) {
      std::string_view host = stem.substr(prefix.size());
      while (!host.empty() && (host.front() == '_' || host.front() == '-')) host.remove_prefix(1);
      return std::string(host);
    }
  }
  return "";
}

bool IsDumpByName(std::string_view relative_path, const DiscoverOptions& options) {
  absl::StatusOr<std::unique_ptr<RE2>> pattern = CompileRankPattern(options.rank_pattern);
  if (!pattern.ok()) return false;
  if (relative_path.empty() || relative_path.back() == '/' || InHiddenFolder(relative_path)) {
    return false;
  }
  Walker walker(options, pattern->get());
  NameVerdict verdict = walker.JudgeName(std::string(relative_path));
  return verdict.rank.has_value() && !verdict.confirm_by_content;
}

absl::StatusOr<Discovery> DiscoverDumps(const std::string& root, const DiscoverOptions& options) {
  absl::StatusOr<std::unique_ptr<RE2>> pattern = CompileRankPattern(options.rank_pattern);
  if (!pattern.ok()) return pattern.status();

  struct stat info;
  if (root.empty() || ::stat(root.c_str(), &info) != 0) {
    int stat_errno = root.empty() ? ENOENT : errno;
    if (stat_errno == ENOENT || stat_errno == ENOTDIR) {
      return absl::NotFoundError(fmt::format("dump path '{}' does not exist", root));
    }
    return ErrnoToStatus(stat_errno, fmt::format("cannot access dump path '{}'", root));
  }

  Walker walker(options, pattern->get());
  if (!options.files.empty()) {
    for (const std::string& file : options.files) {
      fs::path path = fs::path(file).is_absolute() ? fs::path(file) : fs::path(root) / file;
      struct stat file_info;
      if (::stat(path.c_str(), &file_info) != 0) {
        return absl::NotFoundError(fmt::format("dump file '{}' does not exist", path.string()));
      }
      std::string relative = fs::path(path).lexically_relative(root).generic_string();
      if (relative.empty() || relative.starts_with("..")) relative = path.filename().string();
      walker.VisitFile(path.string(), relative, file_info, RealPath(path.string()).value_or(path));
    }
    return std::move(walker).Finish();
  }
  if (S_ISDIR(info.st_mode)) {
    if (absl::Status status = walker.WalkTree(root, info); !status.ok()) return status;
    for (size_t i = 0; i < options.held.size(); ++i) walker.VisitHeld(root, options.held[i], i);
  } else if (S_ISREG(info.st_mode)) {
    // A file named on its own is read wherever a link in its path leads: the user chose it.
    walker.VisitFile(root, fs::path(root).filename().string(), info, RealPath(root).value_or(root));
  } else {
    return absl::InvalidArgumentError(
        fmt::format("dump path '{}' is neither a directory nor a regular file ({})", root,
                    NonRegularReason(info.st_mode)));
  }
  return std::move(walker).Finish();
}

}  // namespace fr
