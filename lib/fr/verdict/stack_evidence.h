// Live Python stacks (lib/fr/stacks) joined to the dumps' verdict.
//
// The stacks add what the flight recorder cannot see: where a rank's main thread is while its
// peers wait. Rules:
//   - every rank's main thread, grouped by identical stacks, goes into the report
//     (`Report.live_stacks`), as py-spy users expect;
//   - a rank outside communication while most wait inside torch.distributed, unchanged over
//     snapshots spanning at least kStalledSpanNs (or the caller's span) while they wait, is
//     where the job stopped: with no failure from the dumps it becomes `missing_participant`
//     (high confidence from kSureSpanNs); a single snapshot, or one whose outlier moves, is only
//     a finding (a healthy job's ranks are caught in compute at random);
//   - a worker that refused the connection is gone: the dumps' analysis treats it as dead
//     (its peers' waits then end in its death), and with no other failure it is the culprit;
//   - when the dumps already name culprits, the stacks either agree (their live frame is added)
//     or the disagreement is stated in the verdict.
#ifndef FR_VERDICT_STACK_EVIDENCE_H_
#define FR_VERDICT_STACK_EVIDENCE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "fr/stacks/python_stacks.h"
#include "fr/verdict/judgment.h"

namespace fr {

constexpr int64_t kStalledSpanNs = int64_t{10} * 1'000'000'000;
constexpr int64_t kSureSpanNs = int64_t{30} * 1'000'000'000;

// Ranks whose worker refused the connection in the newest snapshot, ascending.
std::vector<int64_t> RanksWhoseWorkerIsGone(const StackSnapshots& stacks);

// Weighs the stacks with the dumps' judgment: adds their findings (FindingTopic::kStacks) and
// the judged stacks to `judgment`, and, when the dumps found no failure and the stacks show one,
// makes the verdict (missing_participant). `stalled_ns`: how long an outlier must stay unchanged
// for a verdict (kStalledSpanNs unless `fr-analyze live --stall` says otherwise); high confidence
// from max(it, kSureSpanNs). `dumps_loaded`: whether any dump was read. Returns whether the
// stacks made the verdict. Only report_writer.cc turns any of it into the report.
bool JoinStackEvidence(const StackSnapshots& stacks, int64_t stalled_ns, bool dumps_loaded,
                       Judgment* judgment);

}  // namespace fr

#endif  // FR_VERDICT_STACK_EVIDENCE_H_
