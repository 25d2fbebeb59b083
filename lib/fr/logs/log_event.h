// What the log stage hands on: one LogEvent per line (or multi-line block) that matters for the
// verdict, out of logs the job already printed (docs/logs.md, "Stages").
// Most lines of a log (NCCL INFO chatter, training progress) produce nothing; memory is bounded
// by the events kept, never by the bytes read.
//
// Times are kept as written (LogTime): a glog prefix has no year and is host-local, dmesg counts
// seconds since boot, torchrun and Slurm print full local dates. The clock stage
// (lib/fr/clock) resolves them and fills LogEvent::time_ns on one corrected UTC clock.
#ifndef FR_LOGS_LOG_EVENT_H_
#define FR_LOGS_LOG_EVENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/base/rank.h"

namespace fr {

// What a line says happened. The first group are initiating faults (root-cause candidates),
// the second the cascade every victim prints, the third facts that tie ranks, hosts, devices
// and clocks together.
enum class LogEventKind : uint8_t {
  // Faults.
  kXid,              // NVRM: Xid (PCI:0000:3b:00): 79, ...
  kHostOom,          // kernel OOM killer: "Out of memory: Killed process 1234 (python)", oom-kill:
  kCudaOom,          // torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...
  kCudaError,        // illegal memory access, unhandled cuda error, device-side assert
  kSegfault,         // Fatal Python error: Segmentation fault, SIGSEGV
  kPythonException,  // the last line of a traceback: "ValueError: ..."
  kTransportError,   // NCCL WARN network / IB / socket errors, ncclSystemError, ncclRemoteError
  kNonFiniteLoss,    // a NaN / inf loss line
  kInitFailure,      // the store or rendezvous unreachable: "The client socket has timed out
                     // after 600000ms while trying to connect to (10.0.0.1, 29500)."
  kHostKill,         // Slurm CANCELLED AT ... DUE TO TIME LIMIT / PREEMPTION / NODE FAILURE
  // The cascade.
  kWatchdogTimeout,   // Watchdog caught collective operation timeout: WorkNCCL(SeqNum=...)
  kWorkTimeoutSeqs,   // Timeout at NCCL work: N, last enqueued NCCL work: M, last completed ...
  kWatchdogStuck,     // heartbeat monitor timed out / watchdog thread stuck
  kDumpSignal,        // Received a dump signal ... from rank N
  kProcessTakenDown,  // "we are taking the entire process down" and kin
  kRemotePeerGone,    // "remote process exited or there was a network error" (a victim's view)
  kWorkerFailed,      // torchrun: "failed (exitcode: -9) local_rank: 3 (pid: ...)"; Slurm task N
  kRootCauseTable,    // torchrun ChildFailedError "Root Cause (first observed failure)" block
  kSignalSent,        // torchrun: "Sending process 1234 closing signal SIGTERM"
  kSlurmOomEvent,     // Slurm: "Detected 1 oom_kill event in StepId=..."
  // Identity and clock anchors.
  kNcclInit,           // NCCL INFO ... rank R nranks N cudaDev D ... busId B ... Init COMPLETE
  kRendezvous,         // torchrun rendezvous complete / workers started
  kCollectiveEnqueue,  // reserved: a line that names a collective's enqueue time
  kBootClock,      // kernel at boot: "rtc_cmos 00:04: setting system clock to <ISO> UTC (<epoch>)"
  kLauncherStart,  // torchrun's start banner ("Setting OMP_NUM_THREADS ..."), printed by every
                   // host's agent at nearly the same moment under srun/pdsh
  kHostAddress,    // NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>: the address peers name this
                   // host by in their transport errors
  kNcclVersion,    // NCCL INFO NCCL version 2.22.3+cuda12.2 (`reason`: the version)
};

// The launcher whose own words a line is: its prefixes on the workers' lines, its reports of a
// worker's death. Ordered outermost first (Slurm starts torchrun, not the other way round).
enum class Launcher : uint8_t {
  kNone,
  kSlurm,      // srun -l "37: ", "srun: error: node05: task 37: Killed"
  kOpenMpi,    // mpirun --tag-output "[1,3]<stderr>:", "mpirun noticed that process rank 2 ..."
  kDeepSpeed,  // "[launch.py:321:sigkill_handler] [...] exits with return code = -9"
  kRay,        // "(RayTrainWorker pid=15904) ", "Worker exit type: SYSTEM_ERROR"
  kTorchrun,   // "[default3]:", "failed (exitcode: -9) local_rank: 3", ChildFailedError's table
  kCount,
};

// "slurm", "mpirun", "deepspeed", "ray", "torchrun"; "" for kNone.
const char* LauncherName(Launcher launcher);

constexpr uint32_t LauncherBit(Launcher launcher) {
  return uint32_t{1} << static_cast<int>(launcher);
}

// A time as the line wrote it, before any correction.
struct LogTime {
  enum class Kind : uint8_t {
    kNone,       // the line has no time (a continuation line, a bare traceback)
    kUtc,        // a full date with a zone or 'Z': `ns` is ns since the epoch, UTC
    kLocal,      // a full date in the host's local time, zone unknown: `ns` as if it were UTC
    kNoYear,     // glog "E1201 12:03:04.123456": month, day and `ns` = ns since local midnight
    kSinceBoot,  // dmesg "[ 1234.567890]": `ns` = ns since the host booted
  };
  Kind kind = Kind::kNone;
  int64_t ns = 0;
  int8_t month = 0;  // kNoYear only, 1-12
  int8_t day = 0;    // kNoYear only, 1-31
};

inline constexpr int64_t kNoTime = INT64_MIN;

struct LogEvent {
  LogEventKind kind = LogEventKind::kPythonException;
  // Where it was read: an index into LogSet::files, and the 1-based line number (the first line
  // of a multi-line block).
  int32_t file = -1;
  int64_t line = 0;
  // Who printed it, as far as the line, its prefix, its file's path or its host's NCCL init
  // lines say; -1 / empty when unknown.
  int64_t rank = -1;
  int64_t local_rank = -1;
  std::string host;
  int32_t pid = -1;
  LogTime raw_time;
  // For a line without a time of its own: the time of the nearest earlier line of the file that
  // had one (a lower bound on when it was printed), else kind kNone.
  LogTime nearby_time;
  // ... and of the nearest later line that had one (an upper bound), else kind kNone.
  LogTime next_time;
  // Filled by the clock stage: the corrected UTC time, or kNoTime. `time_inferred` when the line
  // had no time of its own and it was inferred (a traceback: from the worker's reported death, or
  // bounded by the timed lines around it: then `time_ns` is the lower bound and
  // `time_upper_ns` the upper one, kNoTime when none).
  int64_t time_ns = kNoTime;
  bool time_inferred = false;
  int64_t time_upper_ns = kNoTime;
  // Set by the clock stage: the line's own date was impossible (after the analysis ran), so it
  // is neither dated nor used as evidence (JobClock::impossible_times names it).
  bool impossible_time = false;
  // Set by the clock stage: `rank` is the line's local rank, taken as the global rank because
  // the logs show one torchrun agent and nothing else (no dumps, no second host): right for a
  // single-node job, wrong for one node's log of several, so a verdict on it is not certain.
  bool rank_assumed = false;
  // The rank ProcessGroupNCCL's tag names ("[Rank 3]" before 2.2, "[PG ID 2 PG GUID 9 Rank 4]"
  // after): the rank within that group, -1 when the line has no tag. Only in the default group
  // is it the global rank.
  enum class GroupTagKind : uint8_t { kNone, kUnnamedGroup, kDefaultGroup, kOtherGroup };
  int64_t group_rank = -1;
  GroupTagKind group_tag = GroupTagKind::kNone;
  // Set by the clock stage: `rank` is the group tag's rank, taken as the global rank because the
  // logs show no process group but the default one (a DDP job's); wrong when the job made others.
  bool rank_from_group_tag = false;
  // The line as written (without a trailing newline), cut to at most 512 bytes.
  std::string text;

  // Details, by kind; -1 / empty when the line does not carry them.
  int64_t seq = -1;  // watchdog: SeqNum; kWorkTimeoutSeqs: the timed-out work
  int64_t last_enqueued_seq = -1;
  int64_t last_completed_seq = -1;
  std::string op;             // OpType, e.g. "ALLREDUCE"
  std::string process_group;  // the group's name or desc when the line gives it
  int64_t timeout_ms = -1;
  int64_t ran_for_ms = -1;
  int64_t numel_in = -1;
  int64_t numel_out = -1;
  int32_t xid = -1;
  std::string bus_id;  // normalized "0000:3b:00" (domain:bus:device), lower case
  int32_t cuda_dev = -1;
  int64_t nranks = -1;
  int32_t exit_code = INT32_MIN;  // a process exit code; torchrun's -9 means signal 9
  int32_t signal = -1;            // SIGKILL = 9, SIGSEGV = 11 ...
  int64_t bytes = -1;             // bytes requested (CUDA OOM) or killed process's rss (host OOM)
  int64_t peer_rank = -1;         // kDumpSignal: the rank that asked; transport: the peer, if named
  std::string peer_address;       // transport: the peer as NCCL names it ("10.0.0.5<45678>");
                                  // kHostAddress: this host's own address ("10.0.0.5")
  // kNcclInit: the rank within that communicator (equal to the global rank only for the world
  // communicator, which is why it is not put in `rank`) and the communicator's id.
  int64_t comm_rank = -1;
  std::string comm_id;
  // kBootClock: the wall-clock time the line states (ns since the epoch, UTC), which with the
  // line's seconds since boot places the host's boot on its clock.
  int64_t stated_ns = kNoTime;
  // kPythonException: lines its writer printed after the traceback (in the same file): a
  // process that kept printing handled and logged the exception; it did not die of it.
  int32_t lines_after = 0;
  // kNonFiniteLoss: finite losses its writer printed after it: training went on (a dynamic
  // loss scaler skips the step and lowers the scale), so the NaN stopped nothing.
  int32_t finite_losses_after = 0;
  // kPythonException: raised in the launcher itself (its outermost frame is torchrun's or the
  // elastic agent's code, or its line is the agent's log), not in a worker.
  bool in_launcher = false;
  // kPythonException: the error is a check that the ranks' collectives differ (Gloo's size
  // enforce, c10d's "Detected mismatch between collectives"): the rank that raised it detected
  // another's deviation, which the dumps can name.
  bool reports_mismatch = false;
  // kPythonException from a traceback: its frames, innermost first, "function (file:line)";
  // at most kMaxTracebackFrames, the innermost kept.
  std::vector<std::string> stack;
  // A launcher's report of a worker's death (kWorkerFailed, kRootCauseTable): whose words.
  Launcher launcher = Launcher::kNone;
  // kInitFailure: what could not be done, as the end of "the job never formed: rank 3 could not
  // ..." ("form the NCCL communicator"); empty: reach the rendezvous store.
  std::string failed_step;
  std::string reason;  // kHostKill: "time limit" | "preemption" | "node failure" |
                       // "cancelled"; exceptions: the exception type; Xid: its message
};

struct LogFile {
  std::string path;
  // What the file was recognized as: "torchrun", "slurm", "glog", "dmesg", "kern.log",
  // "journald", "nccl", "python", "mixed" ... (the most common line format).
  std::string format;
  // The host and rank every line of the file belongs to when its path or content says so (a
  // per-host kernel log, a torchrun --log-dir "attempt_0/3/stderr.log"), else empty / -1.
  std::string host;
  int64_t rank = -1;
  int64_t local_rank = -1;
  // The highest local rank its path or any line's prefix names ("[default3]:"), -1 when none:
  // how many workers a launcher started, at least.
  int64_t highest_local_rank = -1;
  int64_t bytes = 0;
  int64_t lines = 0;
  // When the file was last written (ns since the epoch), or kNoTime (stdin, or not known): a
  // log's mtime is when its last line was written, which dates lines that carry no year.
  int64_t mtime_ns = INT64_MIN;
  // Bounds that cut what was read (never fatal): events past the per-file cap (counted, not
  // kept), lines longer than the line cap (only their head was looked at).
  int64_t events_dropped = 0;
  int64_t long_lines = 0;
  // The launchers whose prefixes or reports the file holds: bit (1 << Launcher).
  uint32_t launchers = 0;
};

// Every log of a job, parsed.
struct LogSet {
  std::vector<LogFile> files;
  std::vector<LogEvent> events;  // in file order, then line order
  // Files that looked like logs but could not be read, with the reason (path: error).
  std::vector<std::string> errors;
  // Every file offered as a log (given, or found beside the dumps) that was not read as one,
  // with why, so that a report can say what became of each file.
  struct SetAside {
    std::string path;
    std::string reason;  // "binary data: ...", "an ELF core file or executable", a read error
  };
  std::vector<SetAside> set_aside;
};

// The size of the job's world communicator as the NCCL init lines agree on it: the `nranks`
// whose lines name the most distinct communicator ranks (the larger size on a tie: a host's
// lines show as many of its world ranks as of its local communicators' ranks). One line's claim
// cannot outvote the others. -1 when no init line was read.
int32_t WorldCommunicatorSize(const std::vector<LogEvent>& events);

// The report's name of a kind ("xid", "watchdog_timeout", ...): lower snake case of the enum.
const char* LogEventKindName(LogEventKind kind);

}  // namespace fr

#endif  // FR_LOGS_LOG_EVENT_H_
