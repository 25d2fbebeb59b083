// Why the job died, from its logs: the earliest anomalous event on the job's corrected clock
// (not the most frequent one), its kind, the initiating rank(s) and host(s), the lines it rests
// on, and how it joins the flight recorder's verdict (docs/report-contract.md, "root cause").
//
//   JobClock clock = AlignClocks(&logs, hints);
//   ExplainFromLogs(logs, clock, &judgment, &report);   // judgment: JudgeDumps(trace, options)
//   report.verdict().root_cause().kind();   // "host_oom"
//
// Every rank's watchdog prints a timeout and every victim an abort, so frequency points away
// from the cause; the initiating fault is one line on one host, before the cascade. Faults are
// ranked by corrected time; a kill from outside (time limit, preemption) after the job had
// already stalled is a consequence of the stall, not its cause. When only timeouts are visible,
// the culprit is the rank that never reached the collective the others time out in: the one
// whose watchdog names an earlier sequence number, whose last enqueued work is earlier, or that
// printed no timeout at all, and with dumps, the flight recorder's culprit.
#ifndef FR_VERDICT_ROOT_CAUSE_H_
#define FR_VERDICT_ROOT_CAUSE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "fr/clock/job_clock.h"
#include "fr/logs/log_event.h"
#include "fr/report.pb.h"
#include "fr/verdict/judgment.h"

namespace fr {

// What started the failure, by the fix it needs. The report contract's strings are the names
// (RootCauseKindName); the logic uses the enum.
enum class RootCauseKind : uint8_t {
  kXid,                // GPU / driver fault (NVRM Xid): drain the node
  kHostOom,            // the kernel's OOM killer
  kCudaOom,            // torch.OutOfMemoryError
  kHostKill,           // killed from outside (time limit, preemption, cancel, node failure)
  kTransportError,     // NCCL network / IB / socket error first seen on one rank or host
  kPythonException,    // a traceback that stopped a rank
  kCudaError,          // illegal memory access, device-side assert ...
  kSegfault,           // a native crash
  kInitFailure,        // the job never formed: the store or rendezvous unreachable, NCCL init
  kNonFinite,          // a rank's loss went NaN or inf first
  kCollectiveTimeout,  // only timeouts visible: the rank that never reached the collective
  kNone,               // the logs show no failure
  kUnknown,            // the cascade without its initiating event
};

// "xid", "host_oom", ... "unknown": the report contract's names.
std::string_view RootCauseKindName(RootCauseKind kind);

// Ranks the logs say died, once identities are resolved (ResolveIdentities): a worker the
// launcher reported dead by its own failure (not the SIGTERM the launcher itself sent), or a
// rank's crash, exception (not one raised because communication failed, nor one it survived)
// or OOM kill. Ascending.
std::vector<int64_t> RanksTheLogsSayDied(const LogSet& logs);

// What the logs decided, as values: the root cause's kind and the verdict's class after the
// join (the report holds the same, as words for people).
struct LogsAnswer {
  RootCauseKind kind = RootCauseKind::kNone;
  FailureClass failure_class = FailureClass::kNone;
};

// Fills report->verdict().root_cause(), report->timeline() and report->log_files(), and joins
// the logs' answer with the verdict the dumps gave (`dumps`, the judgment `report` was written
// from; nullptr when there are no dumps): with logs alone the verdict's culprits, victims, class
// and summary come from the logs; with both, the culprits are kept when the two agree (the
// summary then says why the culprit stopped), and a disagreement is stated. The join decides on
// the judgment's values, never on what the report says.
LogsAnswer ExplainFromLogs(const LogSet& logs, const JobClock& clock, const Judgment* dumps,
                           report::Report* report);

}  // namespace fr

#endif  // FR_VERDICT_ROOT_CAUSE_H_
