#include "fr/logs/families/ray.h"

#include "fr/logs/text_scan.h"

namespace fr::logs_internal {

// The controller prints each attempt's rank map ("- (ip=10.0.0.2, pid=15904) world_rank=2,
// local_rank=2, node_rank=0"), and quotes a failed rank's traceback after "[Rank 2 Error
// Snippet]:".
void RayLines::NameWorker(LinePrefix* prefix) {
  std::string_view body = prefix->body;
  if (StartsWith(body, "- (ip=") && Contains(body, ") world_rank=")) {
    int64_t pid = IntAfter(body, "pid=");
    int64_t rank = IntAfter(body, "world_rank=");
    if (pid >= 0 && pid <= INT32_MAX && RankOrUnknown(rank) >= 0) {
      ray_ranks_[static_cast<int32_t>(pid)] = {rank, std::string(WordAfter(body, "(ip=", ",) "))};
    }
    return;
  }
  if (prefix->format == kFormatRay && prefix->rank < 0 && prefix->pid >= 0) {
    if (auto it = ray_ranks_.find(prefix->pid); it != ray_ranks_.end()) {
      prefix->rank = it->second.first;
      if (prefix->host.empty()) prefix->host = it->second.second;
    }
  }
  if (StartsWith(body, "[Rank ") && EndsWith(body, " Error Snippet]:")) {
    std::string_view ranks = body.substr(6, body.size() - 6 - 16);
    int64_t rank = -1;
    // "[Rank 0,2 Error Snippet]:" quotes one traceback for several ranks: no single owner.
    ray_snippet_rank_ = ConsumeInt(&ranks, &rank) && ranks.empty() ? RankOrUnknown(rank) : -1;
    return;
  }
  if (body.empty()) ray_snippet_rank_ = -1;
  if (prefix->rank < 0 && ray_snippet_rank_ >= 0) prefix->rank = ray_snippet_rank_;
}

int64_t RayLines::WorkerKey(const LinePrefix& prefix) const {
  if (prefix.format != kFormatRay || prefix.pid < 0 || !ray_ranks_.contains(prefix.pid)) {
    return -1;
  }
  return (int64_t{1} << 41) + prefix.pid;
}

// "... Worker PID: 24206 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly
// exits with a connection error code 2. End of file. Some common causes include: (1) the
// process was killed by the OOM killer ..., (3) the worker crashed unexpectedly due to SIGSEGV
// ..." (the raylet's and the controller's words for a worker that died). What follows "Some
// common causes include" is Ray's stock advice, printed for every such death: it is never
// evidence of how the process died.
bool RayLines::OnRayWorkerExit(std::string_view line, std::string_view body) {
  std::string_view type = WordAfter(body, "Worker exit type: ", " ");
  if (type.empty() || StartsWith(type, "INTENDED")) return false;
  LogEvent* e = context_->Emit(LogEventKind::kWorkerFailed, line);
  context_->MarkLauncher(e, Launcher::kRay);
  int64_t pid = IntAfter(body, "Worker PID: ");
  if (pid >= 0 && pid <= INT32_MAX) {
    e->pid = static_cast<int32_t>(pid);
    if (auto it = ray_ranks_.find(e->pid); e->rank < 0 && it != ray_ranks_.end()) {
      e->rank = it->second.first;
      if (e->host.empty()) e->host = it->second.second;
    }
  }
  e->reason = Cat({"Ray worker exit: ", type});
  return true;
}

}  // namespace fr::logs_internal
