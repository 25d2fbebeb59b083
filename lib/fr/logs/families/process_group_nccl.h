// The log family of torch's ProcessGroupNCCL (glog lines, often behind "[rankN]:"): the
// watchdog's cascade when a collective times out, in the order torch prints it. Its patterns are
// rows of the table in lib/fr/logs/line_table.cc.
//
//   [rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught
//   collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, ...)
//   ran for 600020 milliseconds before timing out.
#ifndef FR_LOGS_FAMILIES_PROCESS_GROUP_NCCL_H_
#define FR_LOGS_FAMILIES_PROCESS_GROUP_NCCL_H_

#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer takes the whole line (the event's text) and its body (the message after the
// prefixes), and returns false when the line is none of its own (the table then goes on).
class ProcessGroupNcclLines {
 public:
  explicit ProcessGroupNcclLines(LineContext* context) : context_(context) {}

  bool OnWatchdogTimeout(std::string_view line, std::string_view body);
  bool OnWatchdogStuck(std::string_view line, std::string_view body);
  bool OnDumpSignal(std::string_view line, std::string_view body);
  bool OnWorkTimeoutSeqs(std::string_view line, std::string_view body);
  bool OnProcessTakenDown(std::string_view line, std::string_view body);
  // TORCH_DISTRIBUTED_DEBUG=DETAIL's check before each collective (ProcessGroupWrapper): "Detected
  // mismatch between collectives on ranks. Rank 1 is running collective:
  // CollectiveFingerPrint(SequenceNumber=101, OpType=ALLGATHER, ...), but Rank 7 is running
  // collective: CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE)...". PyTorch raises it as a
  // RuntimeError on the rank that checked: the ranks diverged, and that error ends the job.
  bool OnCollectiveMismatch(std::string_view line, std::string_view body);

 private:
  // The process group the line's "[PG ...]" tag names (the line's ranks are read from the tag
  // for every event, in LineContext::EmitAs).
  void SetGroup(LogEvent* event, std::string_view body);

  LineContext* context_;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_PROCESS_GROUP_NCCL_H_
