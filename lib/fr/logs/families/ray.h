// The log family of Ray Train (2.60): its controller's map of each attempt's workers (pid to
// rank), the rank whose error it quotes, and the raylet's word on a worker that died. A
// worker's own lines name only its pid ("(RayTrainWorker pid=15904)"), so this family also says
// who printed them. Its pattern is a row of the table in lib/fr/logs/line_table.cc.
//
//   (TrainController pid=4080) - (ip=192.0.2.2, pid=4285) world_rank=2, local_rank=2,
//   node_rank=0
//   (TrainController pid=4080) [Rank 2 Error Snippet]:
#ifndef FR_LOGS_FAMILIES_RAY_H_
#define FR_LOGS_FAMILIES_RAY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "fr/logs/line_context.h"
#include "fr/logs/line_prefix.h"

namespace fr::logs_internal {

class RayLines {
 public:
  explicit RayLines(LineContext* context) : context_(context) {}

  // Reads the controller's rank map and error snippets from every line, and gives `prefix` (the
  // current line's, before anything else looks at it) the rank and host of the worker it names.
  void NameWorker(LinePrefix* prefix);

  // A Ray Train worker's process, by its pid: Ray starts a new process for each rank on every
  // attempt (FailureConfig retries), so the rank alone would take a retried rank's lines as the
  // failed process going on (its exception "handled"). -1 for other lines; the controller's
  // quote of a rank's error ("[Rank 2 Error Snippet]:") keeps that rank.
  int64_t WorkerKey(const LinePrefix& prefix) const;

  // The table's recognizer: false when the line is none of its own.
  bool OnRayWorkerExit(std::string_view line, std::string_view body);

 private:
  LineContext* context_;
  // pid -> (world rank, ip) from the controller's rank map (pids change per attempt).
  std::map<int64_t, std::pair<int64_t, std::string>> ray_ranks_;
  // The rank whose error snippet is being quoted, or -1.
  int64_t ray_snippet_rank_ = -1;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_RAY_H_
