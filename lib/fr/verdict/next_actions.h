// What to do next, per failure class: concrete steps an engineer can take on the culprit, plus
// what to change so that the next dump carries the evidence this one lacked.
#ifndef FR_VERDICT_NEXT_ACTIONS_H_
#define FR_VERDICT_NEXT_ACTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/verdict/failure_class.h"

namespace fr {

struct NextActionContext {
  FailureClass failure_class = FailureClass::kNone;
  std::vector<int64_t> culprits;
  bool culprit_dump_missing = false;
  bool timing_known = false;  // TORCH_NCCL_ENABLE_TIMING was on
  // The backend can record start events (NCCL and friends; Gloo records none, with or without
  // TORCH_NCCL_ENABLE_TIMING), so advising timing helps.
  bool timing_recordable = true;
  bool buffer_wrapped = false;  // entries rolled out of a ring buffer
  std::vector<int64_t> ranks_missing;
  bool has_stragglers = false;
  // The logs say why the culprit stopped (it died: an exception, a crash, an OOM kill): the
  // steps that look for where it hangs or what it swallowed would contradict them.
  bool stop_explained = false;
  // The culprits are themselves blocked in a collective that the peers they wait for never reach:
  // they left the program's order, rather than stopping outside communication.
  bool culprit_waits_elsewhere = false;
  // The culprits left no dump and their launcher reported every other worker's failure but
  // not theirs: they exited on their own (status 0), not by a crash.
  bool culprit_exited_cleanly = false;
};

std::vector<std::string> NextActions(const NextActionContext& context);

}  // namespace fr

#endif  // FR_VERDICT_NEXT_ACTIONS_H_
