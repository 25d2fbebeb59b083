// Why the job died, from its logs: the earliest anomalous event on the job's corrected clock
// (not the most frequent one), its kind, the initiating rank(s) and host(s), the lines it rests
// on, and how it joins the flight recorder's verdict (docs/report-contract.md, "root cause").
//
//   JobClock clock = AlignClocks(&logs, hints);
//   ExplainFromLogs(logs, clock, /*have_dumps=*/true, &report);
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

#include "fr/clock/job_clock.h"
#include "fr/logs/log_event.h"
#include "fr/report.pb.h"

namespace fr {

// Fills report->verdict().root_cause(), report->timeline() and report->log_files(), and joins
// the logs' answer with the verdict the dumps gave (`have_dumps`): with logs alone the verdict's
// culprits, victims, class and summary come from the logs; with both, the culprits are kept when
// the two agree (the summary then says why the culprit stopped), and a disagreement is stated.
void ExplainFromLogs(const LogSet& logs, const JobClock& clock, bool have_dumps,
                     report::Report* report);

}  // namespace fr

#endif  // FR_VERDICT_ROOT_CAUSE_H_
