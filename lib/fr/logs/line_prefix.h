// The tokenizer half of the log stage: splits one log line into the prefixes that launchers,
// loggers and the kernel put in front of it (who printed it, when) and the message body that
// the log families' recognizers (families/, line_table.h) look at. Internal to lib/fr/logs.
//
//   LinePrefix prefix;
//   ParseLinePrefix("0: [rank0]:[E1201 12:03:04.123456 ProcessGroupNCCL.cpp:616] boom", &prefix);
//   // prefix.rank == 0, prefix.time.kind == kNoYear, prefix.body == "boom"
//
// Prefixes nest (srun -l around torchrun around glog), so they are peeled in a loop; each parser
// looks at a few leading bytes and gives up at once, which keeps lines that carry no prefix cheap.
#ifndef FR_LOGS_LINE_PREFIX_H_
#define FR_LOGS_LINE_PREFIX_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "fr/logs/log_event.h"

namespace fr::logs_internal {

// Which line formats a prefix showed; LogFile::format is the most common one over a file.
enum LineFormat : uint8_t {
  kFormatText = 0,  // nothing recognized
  kFormatSlurm,     // srun -l "37: "
  kFormatTorchrun,  // "[rank3]:" / "[default3]:"
  kFormatGlog,      // "E1201 12:03:04.123456 1234 file.cc:12] "
  kFormatPython,    // "2026-12-01 12:03:04,123 " (Python logging), torchelastic "[...] "
  kFormatNccl,      // "host:pid:tid [dev] NCCL INFO "
  kFormatDmesg,     // "[ 1234.567890] "
  kFormatSyslog,    // "Dec  1 12:03:04 host ident: " / RFC3339 "... host ident: "
  kFormatOpenMpi,   // mpirun --tag-output "[1,3]<stderr>:" (job 1, rank 3)
  kFormatRay,       // Ray's "(RayTrainWorker pid=15904) " / "(raylet, ip=10.0.0.2) "
  kFormatCount,
};
const char* LineFormatName(LineFormat format);

struct LinePrefix {
  int64_t rank = -1;        // srun -l task or torchrun "[rankN]:"
  int64_t local_rank = -1;  // torchrun "[defaultN]:"
  int32_t pid = -1;         // NCCL "host:pid:tid"
  int32_t cuda_dev = -1;    // NCCL "[dev]"
  std::string_view host;    // NCCL or syslog host
  LogTime time;
  LineFormat format = kFormatText;  // the innermost prefix that was recognized
  char nccl_level = 0;              // 'I' / 'W' for "NCCL INFO" / "NCCL WARN" lines, else 0
  // Launchers whose prefixes the line carries, bit (1 << Launcher): srun -l, mpirun's tags,
  // Ray's worker prefix, torchrun's "[defaultN]:" (not "[rankN]:", which torch prints itself).
  uint32_t launchers = 0;
  std::string_view body;  // what is left after the prefixes
};

// Fills `out` from `line` (no trailing newline or carriage return).
void ParseLinePrefix(std::string_view line, LinePrefix* out);

// mpirun --tag-output tags every write, not every line: faulthandler's fragments come out as
// `  File [1,2]<stderr>:"[1,2]<stderr>:/x.py[1,2]<stderr>:"`, and a write without its newline
// runs into the next tag (`loss 0.1940[1,0]<stdout>:step 4`). For a line that starts with such a
// tag, the line without every later tag (in `scratch`); otherwise `line` itself.
std::string_view WithoutRepeatedMpiTags(std::string_view line, std::string* scratch);

// torchrun's --tee copies a worker's output line by line, and a line it reads before the worker
// finished writing it (faulthandler writes "Fatal Python error: " and "Segmentation fault" apart)
// is copied without its newline, so the next copy runs into it: `[default2]:Fatal Python error:
// [default2]:Segmentation fault`, or another worker's `[default2]:Fatal Python error:
// [default0]:step 3`. For a line that starts with such a tag ("[<role><local rank>]:", any role
// but torch's own "rank") and holds another, true and the logical lines in `pieces`: the same
// worker's later tags taken out, another worker's tag starting a line of its own. False (and
// `pieces` untouched) when `line` is one line as it is.
bool SplitTeeCopies(std::string_view line, std::vector<std::string>* pieces);

// Ray colours its prefixes (`\x1b[36m(RayTrainWorker pid=15904)\x1b[0m`) and folds repeats into
// a suffix (`\x1b[32m [repeated 3x across cluster]\x1b[0m`): the line without both (in
// `scratch`), or `line` itself when it has neither.
std::string_view WithoutAnsiAndRepeats(std::string_view line, std::string* scratch);

// The length of an Open MPI tag "[J,R]<stdout>:" / "<stderr>:" / "<stddiag>:" at the start of
// `s`, with its rank; 0 when `s` does not start with one.
size_t MpiTagLength(std::string_view s, int64_t* rank = nullptr);

// "2026-12-01 12:03:04,123", "2026-12-01T12:03:04.123Z", "...+01:00", "...+0100" at the start of
// `*s`; advances past it. kUtc when a zone is given (converted to UTC), kLocal otherwise.
// Torchrun's error table writes "2026-12-01_12:03:04", also accepted.
bool ConsumeIsoTime(std::string_view* s, LogTime* time);

// Nanoseconds since the epoch of a civil date and time (UTC), or false when out of range.
bool CivilToNs(int year, int month, int day, int hour, int minute, int second, int64_t nanos,
               int64_t* ns);

}  // namespace fr::logs_internal

#endif  // FR_LOGS_LINE_PREFIX_H_
