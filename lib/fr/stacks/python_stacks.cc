#include "fr/stacks/python_stacks.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <map>
#include <set>
#include <utility>

#include "fmt/format.h"
#include "fr/base/lines.h"

namespace fr {
namespace {

// A job has at most this many ranks (the same bound as the loader's): a header claiming more is
// not a rank.
// Frames kept per thread: Python's recursion limit is 1000 by default; faulthandler itself stops
// at 100 and prints "...".
constexpr size_t kMaxFrames = 1000;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return error == std::errc() && end == s.data() + s.size();
}

// "=== Rank 2: http://vm:60641/handler/dump_traceback? ===" -> rank 2 and the address.
bool ParseRankHeader(std::string_view line, int64_t* rank, std::string* address) {
  constexpr std::string_view kOpen = "=== Rank ";
  constexpr std::string_view kClose = " ===";
  if (!line.starts_with(kOpen) || !line.ends_with(kClose)) return false;
  line.remove_prefix(kOpen.size());
  line.remove_suffix(kClose.size());
  size_t colon = line.find(':');
  if (colon == std::string_view::npos || !ParseInt(line.substr(0, colon), rank)) return false;
  *address = std::string(Trim(line.substr(colon + 1)));
  return true;
}

// "Thread 0x00007f1c25a8fb80 (most recent call first):" or "Current thread 0x... (...):".
bool ParseThreadHeader(std::string_view line, PythonThread* thread) {
  constexpr std::string_view kTail = " (most recent call first):";
  if (!line.ends_with(kTail)) return false;
  line.remove_suffix(kTail.size());
  bool current = false;
  if (line.starts_with("Current thread ")) {
    current = true;
    line.remove_prefix(15);
  } else if (line.starts_with("Thread ")) {
    line.remove_prefix(7);
  } else {
    return false;
  }
  thread->id = std::string(line);
  thread->current = current;
  return true;
}

// `  File "train.py", line 214 in train` (faulthandler's frame line).
bool ParseFrameLine(std::string_view line, PythonFrame* frame) {
  line = Trim(line);
  if (!line.starts_with("File \"")) return false;
  line.remove_prefix(6);
  size_t quote = line.rfind("\", line ");
  if (quote == std::string_view::npos) return false;
  std::string_view rest = line.substr(quote + 8);
  size_t in = rest.find(" in ");
  int64_t number = 0;
  if (in == std::string_view::npos || !ParseInt(rest.substr(0, in), &number)) return false;
  frame->file = std::string(line.substr(0, quote));
  frame->line = number;
  frame->function = std::string(rest.substr(in + 4));
  return true;
}

// What a failed fetch says, as PyTorch's frontend words it: requests' or aiohttp's exception
// after "Timeout:", "ConnectionError:", "ClientConnectorError:" and the like, or "Error: 503".
RankAnswer AnswerOf(std::string_view error) {
  auto has = [&](std::string_view word) { return error.find(word) != std::string_view::npos; };
  if (has("refused") || has("Connect call failed") || has("Cannot connect to host")) {
    return RankAnswer::kRefused;
  }
  if (has("Timeout") || has("timed out") || has("Error: 408")) return RankAnswer::kTimedOut;
  return RankAnswer::kFailed;
}

// "stacks_20261203_095248.txt" -> that time, read as UTC; -1 when the name has no such time.
int64_t TimeFromName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // The last "_YYYYmmdd_HHMMSS" in the name.
  for (size_t at = name.size(); at-- > 0;) {
    if (name[at] != '_' || at + 16 > name.size()) continue;
    std::string_view day = name.substr(at + 1, 8);
    if (name[at + 9] != '_') continue;
    std::string_view clock = name.substr(at + 10, 6);
    int64_t d = 0, c = 0;
    if (!ParseInt(day, &d) || !ParseInt(clock, &c)) continue;
    std::tm tm{};
    tm.tm_year = static_cast<int>(d / 10000) - 1900;
    tm.tm_mon = static_cast<int>(d / 100 % 100) - 1;
    tm.tm_mday = static_cast<int>(d % 100);
    tm.tm_hour = static_cast<int>(c / 10000);
    tm.tm_min = static_cast<int>(c / 100 % 100);
    tm.tm_sec = static_cast<int>(c % 100);
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60) {
      continue;
    }
    time_t seconds = timegm(&tm);
    if (seconds < 0) continue;
    return int64_t{seconds} * 1'000'000'000;
  }
  return -1;
}

bool IsStandardLibrary(std::string_view file) {
  return file.find("/lib/python3") != std::string_view::npos ||
         file.find("site-packages/") != std::string_view::npos ||
         file.find("dist-packages/") != std::string_view::npos || file.starts_with("<frozen ");
}

std::string_view AfterPackages(std::string_view file) {
  for (std::string_view marker : {"site-packages/", "dist-packages/"}) {
    if (size_t at = file.rfind(marker); at != std::string_view::npos) {
      return file.substr(at + marker.size());
    }
  }
  return {};
}

}  // namespace

bool LooksLikeDebugServerSnapshot(std::string_view head, std::string_view path) {
  if (LooksLikeStackSnapshot(head, path)) return true;
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // The frontend's other periodic files: <handler>_<YYYYmmdd_HHMMSS>.txt.
  bool named = false;
  for (std::string_view kind : {"fr_trace_", "torchcomms_fr_trace_", "torchcomms_health_check_",
                                "wait_counters_", "waitcounterhandler_", "tcpstore_", "pyspy_"}) {
    named = named || (name.starts_with(kind) && TimeFromName(name) >= 0 && name.ends_with(".txt"));
  }
  size_t start = head.find_first_not_of(" \t\r\n");
  std::string_view text = start == std::string_view::npos ? "" : head.substr(start);
  return named && (text.starts_with("PARTIAL DATA: ") || text.starts_with("=== "));
}

bool LooksLikeStackSnapshot(std::string_view head, std::string_view path) {
  size_t start = head.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return false;
  head.remove_prefix(start);
  bool stacks_inside = head.find("dump_traceback") != std::string_view::npos ||
                       head.find(" (most recent call first):") != std::string_view::npos;
  if (head.starts_with("=== Rank ")) return stacks_inside;
  if (head.starts_with("PARTIAL DATA: ")) {
    // So do the frontend's other snapshots (the health check's); a stacks snapshot says whose
    // handler it called, or is named for it when its header alone fills the head.
    size_t slash = path.rfind('/');
    std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    return stacks_inside || name.starts_with("stacks_");
  }
  return false;
}

absl::Status ParseStackSnapshot(const std::string& path, std::string_view text,
                                StackSnapshots* stacks) {
  StackSnapshot snapshot;
  snapshot.path = path;
  snapshot.time_ns = TimeFromName(path);
  // Failures named in the PARTIAL DATA header, by rank: they say why better than "Error: 503".
  std::map<int64_t, std::string> header_errors;
  std::map<int64_t, RankStacks> ranks;
  RankStacks* rank = nullptr;
  PythonThread* thread = nullptr;
  bool in_header = false;
  int64_t line_number = 0;
  int64_t unparsed = 0;
  for (std::string_view raw : Lines(text)) {
    std::string_view line = Trim(raw);
    ++line_number;
    if (line.empty()) {
      thread = nullptr;
      continue;
    }
    int64_t number = -1;
    std::string address;
    if (ParseRankHeader(line, &number, &address)) {
      if (number < 0 || number > kMaxRank) {
        return absl::InvalidArgumentError(
            fmt::format("{}:{}: rank {} is out of range", path, line_number, number));
      }
      // One block per rank: a second header for a rank is text that claims to be another
      // rank's stacks (a worker's answer quoting a header), and the file cannot be trusted.
      if (ranks.contains(number)) {
        return absl::InvalidArgumentError(fmt::format(
            "{}:{}: a second \"=== Rank {}\" block: one rank's stacks would be mixed with "
            "text claiming to be them",
            path, line_number, number));
      }
      in_header = false;
      rank = &ranks[number];
      rank->rank = number;
      rank->address = std::move(address);
      thread = nullptr;
      continue;
    }
    if (line.starts_with("PARTIAL DATA: ")) {
      in_header = true;
      continue;
    }
    if (in_header && line.starts_with("Rank ")) {
      // "  Rank 2: ConnectionError: ..."
      size_t colon = line.find(':');
      int64_t failed = -1;
      if (colon != std::string_view::npos && ParseInt(line.substr(5, colon - 5), &failed)) {
        header_errors[failed] = std::string(Trim(line.substr(colon + 1)));
        continue;
      }
    }
    if (rank == nullptr) {
      ++unparsed;
      continue;
    }
    PythonThread header;
    if (ParseThreadHeader(line, &header)) {
      rank->threads.push_back(std::move(header));
      thread = &rank->threads.back();
      continue;
    }
    PythonFrame frame;
    if (thread != nullptr && ParseFrameLine(line, &frame)) {
      if (thread->frames.size() < kMaxFrames) thread->frames.push_back(std::move(frame));
      continue;
    }
    if (line.starts_with("Error: ") && rank->threads.empty()) {
      rank->answer = AnswerOf(line);
      rank->error = std::string(line);
      continue;
    }
    // "<no Python frame>", faulthandler's "..." for deep stacks, and anything else.
    if (line != "<no Python frame>" && line != "...") ++unparsed;
  }
  if (ranks.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: no \"=== Rank N: ... ===\" block: not a debug server's stacks snapshot", path));
  }
  for (auto& [number, stacks_of_rank] : ranks) {
    if (auto error = header_errors.find(number); error != header_errors.end()) {
      stacks_of_rank.error = error->second;
      stacks_of_rank.answer = AnswerOf(error->second);
    }
    snapshot.ranks.push_back(std::move(stacks_of_rank));
  }
  stacks->unparsed_lines += unparsed;
  stacks->files.push_back(path);
  auto later = std::upper_bound(stacks->snapshots.begin(), stacks->snapshots.end(), snapshot,
                                [](const StackSnapshot& a, const StackSnapshot& b) {
                                  return std::make_pair(a.time_ns, a.path) <
                                         std::make_pair(b.time_ns, b.path);
                                });
  stacks->snapshots.insert(later, std::move(snapshot));
  return absl::OkStatus();
}

const PythonThread* MainThread(const RankStacks& rank) {
  for (const PythonThread& thread : rank.threads) {
    if (!thread.frames.empty() && thread.frames.back().function == "<module>") return &thread;
  }
  for (auto it = rank.threads.rbegin(); it != rank.threads.rend(); ++it) {
    if (!it->frames.empty()) return &*it;
  }
  return nullptr;
}

StackPlace PlaceOf(const PythonThread* main) {
  if (main == nullptr || main->frames.empty()) return StackPlace::kNoPython;
  std::string_view file = main->frames.front().file;
  std::string_view in_torch = AfterPackages(file);
  if (in_torch.empty()) {
    // A source checkout of torch, run in place.
    if (size_t at = file.rfind("/torch/"); at != std::string_view::npos) {
      in_torch = file.substr(at + 1);
    }
  }
  // A module of torch's own packages ("torch/distributed/...", "torch/autograd/..."), not a
  // user's file that happens to sit in a folder named torch.
  if (!in_torch.starts_with("torch/") || in_torch.find('/', 6) == std::string_view::npos) {
    return StackPlace::kOutside;
  }
  // The launcher's wrappers (`@record`) sit at the outermost frames, never innermost while the
  // program runs; the debug server's own handlers run on the "Current thread".
  if (in_torch.starts_with("torch/distributed/") &&
      !in_torch.starts_with("torch/distributed/elastic/") &&
      !in_torch.starts_with("torch/distributed/debug/")) {
    return StackPlace::kCommunication;
  }
  return StackPlace::kTorch;
}

std::string_view StackPlaceName(StackPlace place) {
  switch (place) {
    case StackPlace::kCommunication:
      return "in torch.distributed";
    case StackPlace::kTorch:
      return "in torch";
    case StackPlace::kOutside:
      return "outside communication";
    case StackPlace::kNoPython:
      return "no Python frame";
  }
  return "";
}

std::string DescribeFrame(const PythonFrame& frame) {
  std::string_view file = AfterPackages(frame.file);
  if (file.empty()) {
    file = frame.file;
    // The last three parts of a long path: enough to find it, short enough to read.
    size_t cut = file.size();
    for (int parts = 0; parts < 3 && cut != std::string_view::npos && cut > 0; ++parts) {
      cut = file.rfind('/', cut - 1);
    }
    if (cut != std::string_view::npos && cut > 0) file.remove_prefix(cut + 1);
  }
  return fmt::format("{} ({}:{})", frame.function, file, frame.line);
}

namespace {

// Two snapshots further apart than this are not one watch of one hang (the debug server writes
// one every few seconds to minutes; `live --watch` as often as asked).
constexpr int64_t kSeriesGapNs = int64_t{3600} * 1'000'000'000;

// The longest time a rank other than `held` may have spent in `at` (same file and function
// anywhere in its main thread) before it left it: from the first snapshot it was seen there to
// the snapshot after the last. Over the snapshots, newest backwards, of the same processes (the
// held rank's main thread `thread_id`) taken close together; -1 when none was seen there and
// left, 0 without times.
int64_t PeersInFrameNs(const StackSnapshots& stacks, int64_t held, const PythonFrame& at,
                       const std::string& thread_id) {
  // rank -> (first time seen in `at`, time of the snapshot after the last one it was seen in)
  std::map<int64_t, std::pair<int64_t, int64_t>> seen;
  std::set<int64_t> still_there;  // seen in `at` in the newest snapshot: not done with it
  int64_t later_ns = stacks.snapshots.back().time_ns;
  for (size_t i = stacks.snapshots.size(); i-- > 0;) {
    const StackSnapshot& snapshot = stacks.snapshots[i];
    if (snapshot.time_ns >= 0 && later_ns >= 0 && later_ns - snapshot.time_ns > kSeriesGapNs) {
      break;
    }
    int64_t after_ns = std::max<int64_t>(later_ns, 0);  // the next snapshot: it had left by then
    later_ns = snapshot.time_ns;
    bool same_process = true;
    for (const RankStacks& rank : snapshot.ranks) {
      const PythonThread* main = MainThread(rank);
      if (rank.rank == held && main != nullptr && main->id != thread_id) same_process = false;
    }
    if (!same_process) break;
    for (const RankStacks& rank : snapshot.ranks) {
      const PythonThread* main = MainThread(rank);
      if (rank.rank == held || main == nullptr) continue;
      bool inside = std::any_of(
          main->frames.begin(), main->frames.end(),
          [&](const PythonFrame& f) { return f.function == at.function && f.file == at.file; });
      if (!inside) continue;
      if (i + 1 == stacks.snapshots.size()) still_there.insert(rank.rank);
      int64_t t = std::max<int64_t>(snapshot.time_ns, 0);
      auto [it, added] = seen.try_emplace(rank.rank, t, std::max(after_ns, t));
      if (!added) it->second.first = std::min(it->second.first, t);
    }
  }
  int64_t longest = -1;
  for (const auto& [rank, span] : seen) {
    if (still_there.contains(rank)) continue;
    longest = std::max(longest, span.second - span.first);
  }
  return longest;
}

}  // namespace

StackJudgement JudgeStacks(const StackSnapshots& stacks) {
  StackJudgement judged;
  judged.snapshots = static_cast<int>(stacks.snapshots.size());
  if (stacks.snapshots.empty()) return judged;
  const StackSnapshot& newest = stacks.snapshots.back();
  judged.newest_path = newest.path;

  // Groups of identical main threads, and who waits inside communication.
  std::map<std::pair<int, std::vector<std::string>>, StackGroup> groups;
  std::map<int64_t, StackPlace> place_of;
  std::map<int64_t, const PythonThread*> main_of;
  for (const RankStacks& rank : newest.ranks) {
    if (rank.threads.empty() && rank.answer != RankAnswer::kAnswered) {
      judged.no_answer.push_back({rank.rank, rank.answer, rank.error});
      continue;
    }
    const PythonThread* main = MainThread(rank);
    StackPlace place = PlaceOf(main);
    place_of[rank.rank] = place;
    main_of[rank.rank] = main;
    std::vector<std::string> key;
    if (main != nullptr) {
      for (const PythonFrame& frame : main->frames) {
        key.push_back(fmt::format("{}\n{}\n{}", frame.file, frame.line, frame.function));
      }
    }
    StackGroup& group = groups[{static_cast<int>(place), key}];
    group.place = place;
    if (group.ranks.empty() && main != nullptr) group.frames = main->frames;
    group.ranks.push_back(rank.rank);
  }
  for (auto& [key, group] : groups) judged.groups.push_back(std::move(group));
  std::stable_sort(judged.groups.begin(), judged.groups.end(),
                   [](const StackGroup& a, const StackGroup& b) {
                     if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
                     return a.ranks.front() < b.ranks.front();
                   });
  const StackGroup* largest_waiting = nullptr;
  for (const StackGroup& group : judged.groups) {
    if (group.place != StackPlace::kCommunication) continue;
    judged.waiting.insert(judged.waiting.end(), group.ranks.begin(), group.ranks.end());
    if (largest_waiting == nullptr) largest_waiting = &group;
  }
  std::sort(judged.waiting.begin(), judged.waiting.end());
  if (largest_waiting != nullptr && !largest_waiting->frames.empty()) {
    judged.waiting_in = DescribeFrame(largest_waiting->frames.front());
  }

  // Held by: outside communication while at least two ranks, and most of those that answered
  // with a Python stack, wait inside it. A rank inside torch but not communicating (a CUDA sync,
  // autograd) is not where the others wait either, but it is in the framework's hands, not stuck
  // in the user's code; it is named only when it is the one rank not waiting.
  size_t answered = place_of.size();
  size_t waiting = judged.waiting.size();
  if (waiting >= 2 && 2 * waiting > answered) {
    for (const auto& [rank, place] : place_of) {
      if (place == StackPlace::kOutside ||
          (place == StackPlace::kTorch && waiting + 1 == answered)) {
        judged.held_by.push_back(rank);
        const PythonThread* main = main_of[rank];
        const PythonFrame* at = &main->frames.front();
        for (const PythonFrame& frame : main->frames) {
          if (!IsStandardLibrary(frame.file)) {
            at = &frame;
            break;
          }
        }
        judged.held_at.push_back(*at);
      }
    }
  }
  if (judged.held_by.empty()) return judged;

  // How long they have been where they are: the run of snapshots, newest backwards, in which
  // every held rank's main thread and every waiting rank's place stay the same.
  auto main_thread = [](const StackSnapshot& snapshot, int64_t rank) -> const PythonThread* {
    auto it = std::lower_bound(snapshot.ranks.begin(), snapshot.ranks.end(), rank,
                               [](const RankStacks& r, int64_t wanted) { return r.rank < wanted; });
    if (it == snapshot.ranks.end() || it->rank != rank) return nullptr;
    const PythonThread* main = MainThread(*it);
    return main == nullptr || main->frames.empty() ? nullptr : main;
  };
  auto main_frames = [&](const StackSnapshot& snapshot,
                         int64_t rank) -> const std::vector<PythonFrame>* {
    const PythonThread* main = main_thread(snapshot, rank);
    return main == nullptr ? nullptr : &main->frames;
  };
  judged.unchanged_snapshots = 1;
  int64_t oldest_same_ns = newest.time_ns;
  int64_t later_ns = newest.time_ns;
  for (size_t i = stacks.snapshots.size() - 1; i-- > 0;) {
    const StackSnapshot& earlier = stacks.snapshots[i];
    // Snapshots are one series only when taken close together of the same processes: a stale
    // snapshot of yesterday's job (other worker processes, so other thread ids) says nothing
    // about how long today's ranks have been where they are.
    if (earlier.time_ns >= 0 && later_ns >= 0 && later_ns - earlier.time_ns > kSeriesGapNs) break;
    bool other_process = false;
    for (int64_t rank : judged.held_by) {
      const PythonThread* then = main_thread(earlier, rank);
      if (then != nullptr && then->id != main_of[rank]->id) other_process = true;
    }
    if (other_process) break;
    bool same = true;
    bool seen = false;
    for (int64_t rank : judged.held_by) {
      const std::vector<PythonFrame>* then = main_frames(earlier, rank);
      if (then == nullptr) continue;
      seen = true;
      if (*then != main_of[rank]->frames) {
        same = false;
        break;
      }
    }
    for (int64_t rank : judged.waiting) {
      if (!same) break;
      const std::vector<PythonFrame>* then = main_frames(earlier, rank);
      if (then == nullptr) continue;
      PythonThread probe;
      probe.frames = *then;
      if (PlaceOf(&probe) != StackPlace::kCommunication) same = false;
    }
    if (!seen) continue;  // a snapshot without them says nothing either way
    if (!same) {
      // They were elsewhere one snapshot before the newest: moving, not stuck.
      judged.moving = judged.unchanged_snapshots == 1;
      break;
    }
    ++judged.unchanged_snapshots;
    oldest_same_ns = earlier.time_ns;
    later_ns = earlier.time_ns;
  }
  if (newest.time_ns >= 0 && oldest_same_ns >= 0) {
    judged.unchanged_ns = newest.time_ns - oldest_same_ns;
  }
  judged.peers_in_frame_ns = PeersInFrameNs(stacks, judged.held_by.front(), judged.held_at.front(),
                                            main_of[judged.held_by.front()]->id);
  return judged;
}

}  // namespace fr
