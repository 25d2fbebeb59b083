#include "fr/logs/families/process_group_nccl.h"

#include <cstdint>
#include <string>

#include "fr/logs/group_tag.h"
#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

void ProcessGroupNcclLines::SetGroup(LogEvent* event, std::string_view body) {
  GroupTag tag;
  if (!ParseGroupTag(body, &tag)) return;
  event->process_group = std::string(tag.name);
}

bool ProcessGroupNcclLines::OnWatchdogTimeout(std::string_view line, std::string_view body) {
  LogEvent* e = context_->Emit(LogEventKind::kWatchdogTimeout, line);
  e->seq = IntAfter(body, "SeqNum=");
  e->op = std::string(WordAfter(body, "OpType=", ", )"));
  e->numel_in = IntAfter(body, "NumelIn=");
  e->numel_out = IntAfter(body, "NumelOut=");
  e->timeout_ms = IntAfter(body, "Timeout(ms)=");
  e->ran_for_ms = IntAfter(body, "ran for ");
  SetGroup(e, body);
  return true;
}

bool ProcessGroupNcclLines::OnWatchdogStuck(std::string_view line, std::string_view body) {
  SetGroup(context_->Emit(LogEventKind::kWatchdogStuck, line), body);
  return true;
}

// "Received a dump signal due to a collective timeout from  rank 2 ..." (2.4+), "... from this
// local rank ...", and 2.3's "Received a timeout signal from this local rank" / "Received a
// global timeout from another process".
bool ProcessGroupNcclLines::OnDumpSignal(std::string_view line, std::string_view body) {
  if (!Contains(body, "Received a dump signal") && !Contains(body, "Received a timeout signal") &&
      !Contains(body, "Received a global timeout")) {
    return false;
  }
  LogEvent* e = context_->Emit(LogEventKind::kDumpSignal, line);
  size_t from = body.find(" from ");
  if (from != std::string_view::npos) {
    std::string_view rest = TrimLeft(body.substr(from + 6));
    if (ConsumeLiteral(&rest, "rank")) {
      SkipSpaces(&rest);
      int64_t peer;
      if (ConsumeInt(&rest, &peer)) e->peer_rank = RankOrUnknown(peer);
    } else if (StartsWith(rest, "this local rank")) {
      e->reason = "local";
    }
  }
  e->last_enqueued_seq = IntAfter(body, "ast enqueued NCCL work: ");
  e->last_completed_seq = IntAfter(body, "ast completed NCCL work: ");
  SetGroup(e, body);
  return true;
}

// "Timeout at NCCL work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609." and
// "Exception (either an error or timeout) detected by watchdog at work: 610, ...".
bool ProcessGroupNcclLines::OnWorkTimeoutSeqs(std::string_view line, std::string_view body) {
  size_t at = body.find("Timeout at NCCL work: ");
  size_t key_size = 22;
  if (at == std::string_view::npos) {
    at = body.find("detected by watchdog at work: ");
    key_size = 30;
  }
  if (at == std::string_view::npos) return false;
  LogEvent* e = context_->Emit(LogEventKind::kWorkTimeoutSeqs, line);
  std::string_view rest = body.substr(at + key_size);
  int64_t seq;
  if (ConsumeInt(&rest, &seq)) e->seq = seq;
  e->last_enqueued_seq = IntAfter(body, "last enqueued NCCL work: ");
  e->last_completed_seq = IntAfter(body, "last completed NCCL work: ");
  SetGroup(e, body);
  return true;
}

bool ProcessGroupNcclLines::OnProcessTakenDown(std::string_view line, std::string_view body) {
  SetGroup(context_->Emit(LogEventKind::kProcessTakenDown, line), body);
  return true;
}

bool ProcessGroupNcclLines::OnCollectiveMismatch(std::string_view line, std::string_view body) {
  size_t at = body.find("Detected mismatch between collectives");
  std::string_view rest = body.substr(at);
  // "Rank N is running collective: CollectiveFingerPrint(SequenceNumber=S, OpType=OP": each side.
  std::string sides;
  for (int side = 0; side < 2; ++side) {
    size_t rank_at = rest.find("Rank ");
    if (rank_at == std::string_view::npos) break;
    rest.remove_prefix(rank_at);
    int64_t rank = IntAfter(rest, "Rank ");
    std::string_view op = WordAfter(rest, "OpType=", " ,)");
    int64_t seq = IntAfter(rest, "SequenceNumber=");
    if (rank < 0 || op.empty()) break;
    if (!sides.empty()) sides += ", ";
    sides += Cat({"rank ", std::to_string(rank), " runs ", op});
    if (seq >= 0) sides += Cat({" (seq ", std::to_string(seq), ")"});
    rest.remove_prefix(5);
  }
  LogEvent* e = context_->Emit(LogEventKind::kPythonException, line);
  e->reason = EventText(Cat(
      {"RuntimeError (collectives differ across ranks", sides.empty() ? "" : ": ", sides, ")"}));
  e->reports_mismatch = true;
  return true;
}

}  // namespace fr::logs_internal
