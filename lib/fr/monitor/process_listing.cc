// Process listings (`ps`) and the one thing they show about a dead job: workers outliving their
// launcher.
#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"
#include "fr/base/lines.h"
#include "fr/monitor/monitor_snapshots.h"

namespace fr {
namespace {

std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> words;
  for (size_t at = 0; at < line.size();) {
    size_t end = line.find_first_of(" \t\r", at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

bool IsCommandColumn(std::string_view word) {
  return word == "CMD" || word == "COMMAND" || word == "ARGS";
}

// A header names PID and ends with the command, which ps prints last (it may hold spaces).
bool IsHeader(const std::vector<std::string_view>& words) {
  return words.size() >= 2 && IsCommandColumn(words.back()) &&
         std::find(words.begin(), words.end(), "PID") != words.end();
}

int64_t Integer(std::string_view text) {
  int64_t value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && value >= 0 ? value : -1;
}

// The command starts an interpreter or program named like a Python one.
bool RunsPython(std::string_view command) {
  std::string_view program = command.substr(0, command.find(' '));
  if (size_t slash = program.rfind('/'); slash != std::string_view::npos) {
    program.remove_prefix(slash + 1);
  }
  return program.starts_with("python") || program.starts_with("pt_main_thread");
}

// The launchers that start and watch a job's workers on a host.
bool IsLauncher(std::string_view command) {
  for (std::string_view name : {"torchrun", "torch.distributed.run", "torch.distributed.launch",
                                "deepspeed.launcher", "torchx", "accelerate launch"}) {
    if (command.find(name) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

bool LooksLikeProcessListing(std::string_view head) {
  // The header is the first line, or follows a line or two (a `date`, a hostname).
  int read = 0;
  for (std::string_view line : Lines(head)) {
    if (IsHeader(Words(line))) return true;
    if (++read == 3) break;
  }
  return false;
}

absl::Status ParseProcessListing(const std::string& path, std::string_view text,
                                 const std::string& host, MonitorSnapshots* snapshots) {
  std::vector<std::string_view> columns;
  ProcessListing* listing = nullptr;
  int64_t line_number = 0;
  for (std::string_view line : Lines(text)) {
    ++line_number;
    ++snapshots->lines;
    std::vector<std::string_view> words = Words(line);
    if (words.empty()) continue;
    if (IsHeader(words)) {
      // Each header starts a listing: `ps` run again appends one.
      columns = words;
      listing = &snapshots->process_listings.emplace_back();
      listing->path = path;
      listing->host = host;
      listing->has_parents = std::find(words.begin(), words.end(), "PPID") != words.end();
      continue;
    }
    if (listing == nullptr || words.size() < columns.size()) {
      ++snapshots->unparsed_lines;
      continue;
    }
    ProcessInfo process;
    process.line = line_number;
    for (size_t i = 0; i + 1 < columns.size(); ++i) {
      if (columns[i] == "PID") process.pid = Integer(words[i]);
      if (columns[i] == "PPID") process.ppid = Integer(words[i]);
      if (columns[i] == "STAT" || columns[i] == "S") process.state = std::string(words[i]);
    }
    // The command: the rest of the line from its first word (it may hold any spaces).
    std::string_view first = words[columns.size() - 1];
    process.command = std::string(line.substr(static_cast<size_t>(first.data() - line.data())));
    while (!process.command.empty() &&
           (process.command.back() == '\r' || process.command.back() == ' ')) {
      process.command.pop_back();
    }
    if (process.pid < 0) {
      ++snapshots->unparsed_lines;
      continue;
    }
    listing->processes.push_back(std::move(process));
  }
  if (snapshots->process_listings.empty() || columns.empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: no ps header (a line naming PID and ending in CMD, COMMAND or ARGS)", path));
  }
  snapshots->files.push_back(path);
  return absl::OkStatus();
}

std::vector<MonitorFinding> FindProcessAnomalies(const MonitorSnapshots& snapshots) {
  // Workers outliving their launcher: torchrun starts nproc_per_node copies of one command, each
  // its child. With the launcher dead they are reparented (to init or a subreaper), so their parent
  // is no longer one of the listed processes, or is pid 1 when pid 1 is not a launcher itself (in a
  // container torchrun may be pid 1). Two or more such copies of one Python command are a job's
  // workers; one alone could be anything.
  MonitorFinding orphans;
  orphans.kind = "launcher_gone_workers_alive";
  std::set<std::string> hosts;
  size_t workers = 0;
  std::set<std::string> commands;
  for (const ProcessListing& listing : snapshots.process_listings) {
    if (!listing.has_parents) continue;
    std::map<int64_t, const ProcessInfo*> by_pid;
    for (const ProcessInfo& p : listing.processes) by_pid[p.pid] = &p;
    bool launcher_alive = std::any_of(
        listing.processes.begin(), listing.processes.end(),
        [](const ProcessInfo& p) { return IsLauncher(p.command) && !p.state.starts_with("Z"); });
    std::map<std::string, std::vector<const ProcessInfo*>> orphaned_by_command;
    for (const ProcessInfo& p : listing.processes) {
      if (!RunsPython(p.command) || IsLauncher(p.command) || p.state.starts_with("Z")) continue;
      auto parent = by_pid.find(p.ppid);
      bool parent_gone =
          parent == by_pid.end() || (p.ppid == 1 && !IsLauncher(parent->second->command));
      if (parent_gone) orphaned_by_command[p.command].push_back(&p);
    }
    for (const auto& [command, processes] : orphaned_by_command) {
      if (processes.size() < 2) continue;
      hosts.insert(listing.host);
      workers += processes.size();
      commands.insert(command);
      for (const ProcessInfo* p : processes) {
        std::string where = listing.host.empty() ? "" : listing.host + " ";
        orphans.evidence.push_back(
            fmt::format("{}{}:{}: pid {} (parent {} {}), state {}: {}", where, listing.path,
                        p->line, p->pid, p->ppid, p->ppid == 1 ? "is init" : "not listed",
                        p->state.empty() ? "?" : p->state, p->command.substr(0, 200)));
      }
      if (launcher_alive) {
        orphans.evidence.push_back(fmt::format(
            "{}: a launcher is listed, but not as these processes' parent", listing.path));
      }
    }
  }
  if (workers == 0) return {};
  orphans.hosts.assign(hosts.begin(), hosts.end());
  orphans.summary = fmt::format(
      "{} worker process(es) on {} host(s) live on after their launcher died (their parent is "
      "gone, so they were reparented): nothing will restart, signal or reap them, and they keep "
      "their GPUs. The launcher's death is the event to explain; the workers must be killed "
      "before the job is restarted.",
      workers, hosts.size());
  return {std::move(orphans)};
}

}  // namespace fr
