#include "fr/logs/line_prefix.h"

#include <array>
#include <cctype>
#include <string>

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {
namespace {

constexpr int64_t kNsPerSecond = 1000000000;

// Days since 1970-01-01 of a proleptic Gregorian date (the usual era-based formula: shift the
// year to start in March so that the leap day is the last day of the year).
int64_t DaysFromCivil(int64_t year, int month, int day) {
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

// Month from its English abbreviation ("Dec" -> 12), 0 when not one.
int MonthFromName(std::string_view name) {
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (name.size() != 3) return 0;
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (name == kMonths[i]) return static_cast<int>(i) + 1;
  }
  return 0;
}

// "HH:MM:SS" with an optional ".fff" or ",fff" fraction (up to 9 digits kept).
bool ConsumeClock(std::string_view* s, int* hour, int* minute, int* second, int64_t* nanos) {
  std::string_view t = *s;
  if (!ConsumeDigits(&t, 2, hour) || !ConsumeLiteral(&t, ":") || !ConsumeDigits(&t, 2, minute) ||
      !ConsumeLiteral(&t, ":") || !ConsumeDigits(&t, 2, second)) {
    return false;
  }
  if (*hour > 23 || *minute > 59 || *second > 60) return false;
  *nanos = 0;
  if (!t.empty() && (t[0] == '.' || t[0] == ',') && t.size() > 1 && IsDigit(t[1])) {
    t.remove_prefix(1);
    int64_t scale = kNsPerSecond / 10;
    while (!t.empty() && IsDigit(t[0])) {
      *nanos += (t[0] - '0') * scale;
      scale /= 10;
      t.remove_prefix(1);
    }
  }
  *s = t;
  return true;
}

int64_t ClockNs(int hour, int minute, int second, int64_t nanos) {
  return ((hour * 60 + minute) * int64_t{60} + second) * kNsPerSecond + nanos;
}

// srun -l: optional padding, the task number, ": ".
bool ConsumeSrunPrefix(std::string_view* s, LinePrefix* out) {
  std::string_view t = TrimLeft(*s);
  int64_t task;
  if (t.empty() || !IsDigit(t[0])) return false;
  std::string_view digits = t;
  if (!ConsumeInt(&t, &task) || digits.size() - t.size() > 7) return false;
  if (!ConsumeLiteral(&t, ": ")) return false;
  out->rank = task;  // at most 7 digits
  *s = t;
  return true;
}

}  // namespace

size_t MpiTagLength(std::string_view s, int64_t* rank) {
  std::string_view t = s;
  int64_t job = 0, task = 0;
  if (!ConsumeLiteral(&t, "[") || t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &job) ||
      !ConsumeLiteral(&t, ",") || t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &task) ||
      task > INT32_MAX || !ConsumeLiteral(&t, "]<")) {
    return 0;
  }
  if (!ConsumeLiteral(&t, "stdout>:") && !ConsumeLiteral(&t, "stderr>:") &&
      !ConsumeLiteral(&t, "stddiag>:")) {
    return 0;
  }
  if (rank != nullptr) *rank = task;
  return s.size() - t.size();
}

std::string_view WithoutRepeatedMpiTags(std::string_view line, std::string* scratch) {
  size_t first = MpiTagLength(line);
  if (first == 0 || line.find("]<std", first) == std::string_view::npos) return line;
  scratch->assign(line.substr(0, first));
  size_t at = first;
  while (at < line.size()) {
    size_t open = line.find('[', at);
    if (open == std::string_view::npos) open = line.size();
    scratch->append(line.substr(at, open - at));
    if (open == line.size()) break;
    size_t tag = MpiTagLength(line.substr(open));
    if (tag > 0) {
      at = open + tag;
    } else {
      scratch->push_back('[');
      at = open + 1;
    }
  }
  return *scratch;
}

namespace {

// "[default2]:" -> its length, role "default" and local rank 2; 0 when `s` does not start with
// one. torch's own "[rank2]:" is not a tee tag.
size_t TeeTagLength(std::string_view s, std::string_view* role, int64_t* rank) {
  if (s.empty() || s[0] != '[') return 0;
  size_t letters = 1;
  while (letters < s.size() && letters <= 32 &&
         (std::isalpha(static_cast<unsigned char>(s[letters])) || s[letters] == '_')) {
    ++letters;
  }
  if (letters == 1 || letters > 32) return 0;
  std::string_view name = s.substr(1, letters - 1);
  if (name == "rank") return 0;
  std::string_view t = s.substr(letters);
  int64_t number;
  if (t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &number) || !ConsumeLiteral(&t, "]:")) {
    return 0;
  }
  *role = name;
  *rank = number;
  return s.size() - t.size();
}

}  // namespace

bool SplitTeeCopies(std::string_view line, std::vector<std::string>* pieces) {
  std::string_view role;
  int64_t rank = -1;
  size_t first = TeeTagLength(line, &role, &rank);
  std::string needle = first == 0 ? std::string() : "[" + std::string(role);
  if (first == 0 || line.find(needle, first) == std::string_view::npos) return false;
  pieces->clear();
  pieces->emplace_back(line.substr(0, first));
  size_t at = first;
  while (at < line.size()) {
    size_t open = line.find(needle, at);
    if (open == std::string_view::npos) open = line.size();
    pieces->back().append(line.substr(at, open - at));
    if (open == line.size()) break;
    std::string_view next_role;
    int64_t next_rank = -1;
    size_t tag = TeeTagLength(line.substr(open), &next_role, &next_rank);
    if (tag == 0 || next_role != role) {
      pieces->back().push_back('[');
      at = open + 1;
    } else if (next_rank == rank) {
      at = open + tag;  // the same worker's line, continued
    } else {
      pieces->emplace_back(line.substr(open, tag));  // another worker's line begins
      rank = next_rank;
      at = open + tag;
    }
  }
  return true;
}

std::string_view WithoutAnsiAndRepeats(std::string_view line, std::string* scratch) {
  constexpr std::string_view kRepeated = " [repeated ";
  bool ansi = line.find('\x1b') != std::string_view::npos;
  // Without escapes, only a line ending in Ray's fold marker changes: most lines stop here, before
  // the search backwards through the whole line (a fifth of reading a large job's logs).
  if (!ansi && !line.ends_with("cluster]")) return line;
  size_t repeated = line.rfind(kRepeated);
  bool folded = repeated != std::string_view::npos &&
                line.find("x across cluster]", repeated) != std::string_view::npos;
  if (!ansi && !folded) return line;
  std::string clean;
  clean.reserve(line.size());
  for (size_t at = 0; at < line.size();) {
    // CSI: ESC '[' parameters (digits and ';') and one final letter.
    if (line[at] == '\x1b' && at + 1 < line.size() && line[at + 1] == '[') {
      size_t end = at + 2;
      while (end < line.size() && (IsDigit(line[end]) || line[end] == ';')) ++end;
      if (end < line.size() && std::isalpha(static_cast<unsigned char>(line[end]))) {
        at = end + 1;
        continue;
      }
    }
    clean.push_back(line[at++]);
  }
  size_t fold = clean.rfind(kRepeated);
  if (fold != std::string::npos && clean.find("x across cluster]", fold) != std::string::npos &&
      clean.ends_with("cluster]")) {
    clean.erase(fold);
  }
  *scratch = std::move(clean);
  return *scratch;
}

namespace {

// Ray's worker prefix: "(RayTrainWorker pid=15904) ", "(TrainController pid=1, ip=10.0.0.2) ",
// "(raylet) ", "(raylet, ip=10.0.0.2) ".
bool ConsumeRayPrefix(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  if (!ConsumeLiteral(&t, "(")) return false;
  size_t name = 0;
  while (name < t.size() && (std::isalnum(static_cast<unsigned char>(t[name])) || t[name] == '_' ||
                             t[name] == '.' || t[name] == ':')) {
    ++name;
  }
  if (name == 0 || name > 64) return false;
  t.remove_prefix(name);
  int64_t pid = -1;
  std::string_view host;
  while (ConsumeLiteral(&t, ", ") || ConsumeLiteral(&t, " ")) {
    if (ConsumeLiteral(&t, "pid=")) {
      if (t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &pid) || pid > INT32_MAX) return false;
    } else if (ConsumeLiteral(&t, "ip=")) {
      size_t end = t.find_first_of(",) ");
      if (end == std::string_view::npos || end == 0) return false;
      host = t.substr(0, end);
      t.remove_prefix(end);
    } else {
      return false;
    }
  }
  if (!ConsumeLiteral(&t, ") ") && !ConsumeLiteral(&t, ")")) return false;
  if (pid >= 0) out->pid = static_cast<int32_t>(pid);
  if (!host.empty()) out->host = host;
  *s = t;
  return true;
}

// pdsh (DeepSpeed's multi-node launcher, and `pdsh -w` itself) puts "<host>: " before every line
// of a remote command: "worker-1: Traceback ...", "10.0.0.12: [rank9]: ...". A host name holds a
// digit (node05, gpu-a100-3, an address) and no underscore (DNS names cannot); without one,
// "Word: " is far more often a message ("RuntimeError: ", "torch.OutOfMemoryError: ") than a
// host.
bool ConsumePdshHost(std::string_view* s, LinePrefix* out) {
  constexpr size_t kLongestHost = 63;
  std::string_view t = *s;
  // Pasted into an issue, the lines are often indented.
  size_t indent = 0;
  while (indent < t.size() && indent < 16 && t[indent] == ' ') ++indent;
  t.remove_prefix(indent);
  size_t n = 0;
  bool digit = false, letter_or_dot = false;
  while (n < t.size() && n <= kLongestHost) {
    char c = t[n];
    if (IsDigit(c)) {
      digit = true;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.') {
      letter_or_dot = true;
    } else if (c != '-' || n == 0) {
      break;
    }
    ++n;
  }
  // All digits is srun's task label; a trailing dot or dash is a sentence, not a host.
  if (n == 0 || n > kLongestHost || !digit || !letter_or_dot || t[n - 1] == '.' ||
      t[n - 1] == '-' || n + 2 > t.size() || t[n] != ':' || t[n + 1] != ' ') {
    return false;
  }
  std::string_view rest = t.substr(n + 2);
  if (rest.find_first_not_of(' ') == std::string_view::npos) return false;
  // An exception's qualified name with a digit in it ("torch.distributed.c10d.FooError: ").
  std::string_view name = t.substr(0, n);
  for (std::string_view suffix : {"Error", "Exception", "Warning", "Exit", "Interrupt"}) {
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      return false;
    }
  }
  out->host = t.substr(0, n);
  *s = rest;
  return true;
}

// mpirun --tag-output: "[1,3]<stderr>:" (no space follows).
bool ConsumeMpiTag(std::string_view* s, LinePrefix* out) {
  int64_t rank = -1;
  size_t length = MpiTagLength(*s, &rank);
  if (length == 0) return false;
  out->rank = RankOrUnknown(rank);
  s->remove_prefix(length);
  return true;
}

// torchrun's per-worker prefixes "[rank3]:" and "[default3]:", then one optional space.
bool ConsumeTorchrunPrefix(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  bool local;
  if (ConsumeLiteral(&t, "[rank")) {
    local = false;
  } else if (ConsumeLiteral(&t, "[default")) {
    local = true;
  } else {
    return false;
  }
  int64_t rank;
  if (t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &rank) || RankOrUnknown(rank) < 0 ||
      !ConsumeLiteral(&t, "]:")) {
    return false;
  }
  (local ? out->local_rank : out->rank) = rank;
  ConsumeLiteral(&t, " ");
  *s = t;
  return true;
}

bool ConsumeNcclPrefix(std::string_view* s, LinePrefix* out);

// A launcher's bare rank tag before NCCL's own prefix: "[155] host:pid:tid [3] NCCL WARN ..."
// (an MPI job's output tagged with its global rank, pasted from NVIDIA/nccl#302). Only before an
// NCCL line: a bracketed number alone is too common in other output to be taken for a rank.
bool ConsumeRankTagBeforeNccl(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  int64_t rank;
  if (!ConsumeLiteral(&t, "[") || t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &rank) ||
      RankOrUnknown(rank) < 0 || !ConsumeLiteral(&t, "] ")) {
    return false;
  }
  std::string_view rest = t;
  LinePrefix probe;
  if (!ConsumeNcclPrefix(&rest, &probe)) return false;
  out->rank = rank;
  *s = t;
  return true;
}

// glog: "[E1201 12:03:04.123456 1234 file.cc:616] " (torch 2.x puts it in brackets, month not
// zero-padded: "E321"), "E0325 20:57:27.620000 2606 api.py:869] ", and torch 1.x's
// "[E ProcessGroupNCCL.cpp:458] " without a time.
bool ConsumeGlogPrefix(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  ConsumeLiteral(&t, "[");
  if (t.size() < 4) return false;
  char level = t[0];
  if (level != 'I' && level != 'W' && level != 'E' && level != 'F') return false;
  t.remove_prefix(1);
  LogTime time;
  if (!t.empty() && IsDigit(t[0])) {
    size_t digits = 0;
    while (digits < t.size() && IsDigit(t[digits])) ++digits;
    if (digits != 3 && digits != 4) return false;
    int month, day;
    std::string_view date = t.substr(0, digits);
    if (!ConsumeDigits(&date, digits - 2, &month) || !ConsumeDigits(&date, 2, &day)) return false;
    if (month < 1 || month > 12 || day < 1 || day > 31) return false;
    t.remove_prefix(digits);
    if (!ConsumeLiteral(&t, " ")) return false;
    int hour, minute, second;
    int64_t nanos;
    if (!ConsumeClock(&t, &hour, &minute, &second, &nanos)) return false;
    time.kind = LogTime::Kind::kNoYear;
    time.month = static_cast<int8_t>(month);
    time.day = static_cast<int8_t>(day);
    time.ns = ClockNs(hour, minute, second, nanos);
    SkipSpaces(&t);
    // The thread id column, absent in torch's bracketed form.
    size_t tid_end = 0;
    while (tid_end < t.size() && IsDigit(t[tid_end])) ++tid_end;
    if (tid_end > 0 && tid_end < t.size() && t[tid_end] == ' ') {
      t.remove_prefix(tid_end);
      SkipSpaces(&t);
    }
  } else if (!ConsumeLiteral(&t, " ")) {
    return false;
  }
  // The source location "file.cc:616]": no spaces, a colon, then the bracket.
  size_t end = t.find_first_of(" ]");
  if (end == std::string_view::npos || t[end] != ']') return false;
  if (t.substr(0, end).find(':') == std::string_view::npos) return false;
  t.remove_prefix(end + 1);
  ConsumeLiteral(&t, " ");
  out->time = time;
  out->format = kFormatGlog;
  *s = t;
  return true;
}

// "host ident: " or "host ident[pid]: " after a syslog time.
bool ConsumeSyslogHost(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  size_t host_end = t.find(' ');
  if (host_end == 0 || host_end == std::string_view::npos || host_end > 255) return false;
  std::string_view host = t.substr(0, host_end);
  t.remove_prefix(host_end + 1);
  size_t ident_end = t.find(": ");
  if (ident_end == 0 || ident_end == std::string_view::npos || ident_end > 128) return false;
  if (t.substr(0, ident_end).find(' ') != std::string_view::npos) return false;
  t.remove_prefix(ident_end + 2);
  out->host = host;
  *s = t;
  return true;
}

// dmesg "[ 1234.567890] " (seconds since boot).
bool ConsumeDmesgTime(std::string_view* s, LogTime* time) {
  std::string_view t = *s;
  if (!ConsumeLiteral(&t, "[")) return false;
  SkipSpaces(&t);
  int64_t seconds;
  if (t.empty() || !IsDigit(t[0]) || !ConsumeInt(&t, &seconds) || !ConsumeLiteral(&t, ".")) {
    return false;
  }
  int64_t nanos = 0, scale = kNsPerSecond / 10;
  size_t digits = 0;
  while (!t.empty() && IsDigit(t[0])) {
    nanos += (t[0] - '0') * scale;
    scale /= 10;
    t.remove_prefix(1);
    ++digits;
  }
  if (digits == 0 || !ConsumeLiteral(&t, "]")) return false;
  if (seconds > INT64_MAX / kNsPerSecond - 1) return false;
  ConsumeLiteral(&t, " ");
  time->kind = LogTime::Kind::kSinceBoot;
  time->ns = seconds * kNsPerSecond + nanos;
  *s = t;
  return true;
}

// dmesg -T "[Thu Mar 14 01:57:54 2019] " (local wall time).
bool ConsumeDmesgWallTime(std::string_view* s, LogTime* time) {
  std::string_view t = *s;
  if (!ConsumeLiteral(&t, "[") || t.size() < 24 || t[3] != ' ') return false;
  t.remove_prefix(4);
  int month = MonthFromName(t.substr(0, 3));
  if (month == 0) return false;
  t.remove_prefix(3);
  SkipSpaces(&t);
  int64_t day;
  if (!ConsumeInt(&t, &day) || !ConsumeLiteral(&t, " ")) return false;
  int hour, minute, second;
  int64_t nanos, year;
  if (!ConsumeClock(&t, &hour, &minute, &second, &nanos) || !ConsumeLiteral(&t, " ") ||
      !ConsumeInt(&t, &year) || !ConsumeLiteral(&t, "]")) {
    return false;
  }
  int64_t ns;
  if (!CivilToNs(static_cast<int>(year), month, static_cast<int>(day), hour, minute, second, nanos,
                 &ns)) {
    return false;
  }
  ConsumeLiteral(&t, " ");
  time->kind = LogTime::Kind::kLocal;
  time->ns = ns;
  *s = t;
  return true;
}

// BSD syslog / journalctl short: "Dec  1 12:03:04 node05 kernel: ".
bool ConsumeSyslogShort(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  if (t.size() < 16 || t[3] != ' ') return false;
  int month = MonthFromName(t.substr(0, 3));
  if (month == 0) return false;
  t.remove_prefix(4);
  SkipSpaces(&t);
  int64_t day;
  if (!ConsumeInt(&t, &day) || day < 1 || day > 31 || !ConsumeLiteral(&t, " ")) return false;
  int hour, minute, second;
  int64_t nanos;
  if (!ConsumeClock(&t, &hour, &minute, &second, &nanos) || !ConsumeLiteral(&t, " ")) {
    return false;
  }
  if (!ConsumeSyslogHost(&t, out)) return false;
  out->time.kind = LogTime::Kind::kNoYear;
  out->time.month = static_cast<int8_t>(month);
  out->time.day = static_cast<int8_t>(day);
  out->time.ns = ClockNs(hour, minute, second, nanos);
  out->format = kFormatSyslog;
  *s = t;
  return true;
}

// An ISO time at the start of a line: Python logging, or RFC3339 syslog / journalctl -o
// short-iso when a 'T' separates date and time and "host ident: " follows.
bool ConsumeIsoPrefix(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  if (t.size() < 19 || !IsDigit(t[0]) || t[4] != '-') return false;
  bool t_separator = t[10] == 'T';
  LogTime time;
  if (!ConsumeIsoTime(&t, &time)) return false;
  // Python logging puts " - " or " " after the time; syslog the host.
  ConsumeLiteral(&t, " ");
  LinePrefix host;
  if (t_separator && ConsumeSyslogHost(&t, &host)) {
    out->host = host.host;
    out->format = kFormatSyslog;
  } else {
    out->format = kFormatPython;
  }
  out->time = time;
  *s = t;
  return true;
}

// torchelastic's logging format "[2026-12-01 12:03:04,123] ".
bool ConsumeBracketedIso(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  if (t.size() < 21 || t[0] != '[' || !IsDigit(t[1]) || t[5] != '-') return false;
  t.remove_prefix(1);
  LogTime time;
  if (!ConsumeIsoTime(&t, &time) || !ConsumeLiteral(&t, "]")) return false;
  ConsumeLiteral(&t, " ");
  out->time = time;
  out->format = kFormatPython;
  *s = t;
  return true;
}

// NCCL's "host:pid:tid [dev] " then an optional source location, then "NCCL INFO " / "NCCL WARN ".
bool ConsumeNcclPrefix(std::string_view* s, LinePrefix* out) {
  std::string_view t = *s;
  size_t space = t.find(' ');
  if (space == std::string_view::npos || space < 5 || space > 300) return false;
  std::string_view id = t.substr(0, space);
  size_t tid_colon = id.rfind(':');
  if (tid_colon == std::string_view::npos || tid_colon == 0) return false;
  size_t pid_colon = id.rfind(':', tid_colon - 1);
  if (pid_colon == std::string_view::npos || pid_colon == 0) return false;
  std::string_view pid_text = id.substr(pid_colon + 1, tid_colon - pid_colon - 1);
  std::string_view tid_text = id.substr(tid_colon + 1);
  int64_t pid, tid;
  if (!ConsumeInt(&pid_text, &pid) || !pid_text.empty() || !ConsumeInt(&tid_text, &tid) ||
      !tid_text.empty()) {
    return false;
  }
  t.remove_prefix(space + 1);
  int64_t dev;
  if (!ConsumeLiteral(&t, "[") || !ConsumeInt(&t, &dev) || !ConsumeLiteral(&t, "] ")) {
    return false;
  }
  // An optional "file.cc:123 " source location sits between the device and the level, "NCCL
  // INFO" / "NCCL WARN"; NCCL before 2.3 wrote the level alone ("[0] include/socket.h:360 WARN
  // Call to connect failed").
  std::string_view level;
  if (size_t at = t.find("NCCL "); at != std::string_view::npos && at <= 128) {
    level = t.substr(at + 5);
  } else {
    size_t first_space = t.find(' ');
    std::string_view head = first_space == std::string_view::npos ? t : t.substr(0, first_space);
    // The level directly, or after a "file:line" location.
    bool located =
        head.find(':') != std::string_view::npos && first_space != std::string_view::npos;
    level = located ? t.substr(first_space + 1) : t;
    if (!StartsWith(level, "INFO ") && !StartsWith(level, "WARN ")) return false;
  }
  char level_char;
  if (StartsWith(level, "INFO")) {
    level_char = 'I';
  } else if (StartsWith(level, "WARN")) {
    level_char = 'W';
  } else {
    return false;
  }
  out->host = id.substr(0, pid_colon);
  out->pid = pid > INT32_MAX ? -1 : static_cast<int32_t>(pid);
  out->cuda_dev = dev > INT32_MAX ? -1 : static_cast<int32_t>(dev);
  out->nccl_level = level_char;
  out->format = kFormatNccl;
  t = level.substr(4);
  ConsumeLiteral(&t, " ");
  *s = t;
  return true;
}

}  // namespace

const char* LineFormatName(LineFormat format) {
  switch (format) {
    case kFormatText:
      return "text";
    case kFormatSlurm:
      return "slurm";
    case kFormatTorchrun:
      return "torchrun";
    case kFormatGlog:
      return "glog";
    case kFormatPython:
      return "python";
    case kFormatNccl:
      return "nccl";
    case kFormatDmesg:
      return "dmesg";
    case kFormatSyslog:
      return "syslog";
    case kFormatOpenMpi:
      return "openmpi";
    case kFormatRay:
      return "ray";
    case kFormatCount:
      break;
  }
  return "text";
}

bool CivilToNs(int year, int month, int day, int hour, int minute, int second, int64_t nanos,
               int64_t* ns) {
  if (year < 1900 || year > 2200 || month < 1 || month > 12 || day < 1 || day > 31) return false;
  int64_t days = DaysFromCivil(year, month, day);
  *ns = (days * 86400) * kNsPerSecond + ClockNs(hour, minute, second, nanos);
  return true;
}

bool ConsumeIsoTime(std::string_view* s, LogTime* time) {
  std::string_view t = *s;
  int year, month, day, hour, minute, second;
  int64_t nanos;
  if (!ConsumeDigits(&t, 4, &year) || !ConsumeLiteral(&t, "-") || !ConsumeDigits(&t, 2, &month) ||
      !ConsumeLiteral(&t, "-") || !ConsumeDigits(&t, 2, &day) || t.empty() ||
      (t[0] != ' ' && t[0] != 'T' && t[0] != '_')) {
    return false;
  }
  t.remove_prefix(1);
  if (!ConsumeClock(&t, &hour, &minute, &second, &nanos)) return false;
  int64_t ns;
  if (!CivilToNs(year, month, day, hour, minute, second, nanos, &ns)) return false;
  LogTime::Kind kind = LogTime::Kind::kLocal;
  if (ConsumeLiteral(&t, "Z")) {
    kind = LogTime::Kind::kUtc;
  } else if (!t.empty() && (t[0] == '+' || t[0] == '-') && t.size() >= 5 && IsDigit(t[1])) {
    int sign = t[0] == '-' ? -1 : 1;
    std::string_view z = t.substr(1);
    int zone_hours, zone_minutes;
    if (ConsumeDigits(&z, 2, &zone_hours) && (ConsumeLiteral(&z, ":") || true) &&
        ConsumeDigits(&z, 2, &zone_minutes) && zone_hours < 24 && zone_minutes < 60) {
      // Local = UTC + offset, so UTC = local - offset.
      ns -= sign * (zone_hours * 60 + zone_minutes) * 60 * kNsPerSecond;
      kind = LogTime::Kind::kUtc;
      t = z;
    }
  }
  time->kind = kind;
  time->ns = ns;
  time->month = 0;
  time->day = 0;
  *s = t;
  return true;
}

void ParseLinePrefix(std::string_view line, LinePrefix* out) {
  *out = LinePrefix();
  std::string_view t = line;
  // A log pasted into an issue as a Markdown quote: "> node201:127799:127863 [0] ... NCCL WARN".
  // (">>> " is Python's prompt, not a quote.)
  for (int quotes = 0; quotes < 3 && t.starts_with("> "); ++quotes) t.remove_prefix(2);
  // Each pass peels one prefix; real lines carry at most four (srun, torchrun, glog or a time,
  // NCCL), and the bound keeps a hostile line of repeated prefixes linear.
  for (int pass = 0; pass < 6 && !t.empty(); ++pass) {
    char c = t[0];
    LinePrefix& p = *out;
    if (c == '(' && pass == 0 && ConsumeRayPrefix(&t, &p)) {
      p.format = kFormatRay;
      p.launchers |= LauncherBit(Launcher::kRay);
      continue;
    }
    if (c == '[') {
      if (pass == 0 && ConsumeMpiTag(&t, &p)) {
        p.format = kFormatOpenMpi;
        p.launchers |= LauncherBit(Launcher::kOpenMpi);
        continue;
      }
      if (pass == 0 && ConsumeRankTagBeforeNccl(&t, &p)) continue;
      if (ConsumeTorchrunPrefix(&t, &p)) {
        if (p.format == kFormatText || p.format == kFormatSlurm) p.format = kFormatTorchrun;
        if (p.local_rank >= 0) p.launchers |= LauncherBit(Launcher::kTorchrun);
        continue;
      }
      if (ConsumeGlogPrefix(&t, &p)) continue;
      if (ConsumeBracketedIso(&t, &p)) continue;
      if (ConsumeDmesgTime(&t, &p.time)) {
        p.format = kFormatDmesg;
        continue;
      }
      if (ConsumeDmesgWallTime(&t, &p.time)) {
        p.format = kFormatDmesg;
        continue;
      }
      break;
    }
    if (IsDigit(c) || c == ' ') {
      if (pass == 0 && ConsumeSrunPrefix(&t, &p)) {
        p.format = kFormatSlurm;
        p.launchers |= LauncherBit(Launcher::kSlurm);
        // srun pads its label ("14: " and " 0:  "): a bracketed prefix may follow the padding.
        size_t bracket = t.find_first_not_of(' ');
        if (bracket != std::string_view::npos && bracket <= 2 && t[bracket] == '[') {
          t.remove_prefix(bracket);
        }
        continue;
      }
      if (ConsumeIsoPrefix(&t, &p)) continue;
    }
    if (c == 'I' || c == 'W' || c == 'E' || c == 'F') {
      if (ConsumeGlogPrefix(&t, &p)) continue;
    }
    if (pass == 0 && (IsIdentChar(c) || c == ' ') && ConsumePdshHost(&t, &p)) continue;
    if (c >= 'A' && c <= 'Z' && ConsumeSyslogShort(&t, &p)) {
      // "kernel: [ 1234.5] " keeps the wall time of syslog; the boot time adds nothing.
      LogTime boot;
      ConsumeDmesgTime(&t, &boot);
      continue;
    }
    if (p.nccl_level == 0 && ConsumeNcclPrefix(&t, &p)) break;
    break;
  }
  out->body = t;
}

}  // namespace fr::logs_internal
