// The log family of Slurm: srun's report of each task that failed, slurmstepd's OOM events, and
// a job or step cancelled from outside. Its patterns are rows of the table in
// lib/fr/logs/line_table.cc.
//
//   slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks
//   have been OOM Killed.
//   srun: error: sdumont6156: task 0: Out Of Memory
#ifndef FR_LOGS_FAMILIES_SLURM_H_
#define FR_LOGS_FAMILIES_SLURM_H_

#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer returns false when the line is none of its own (the table then goes on).
class SlurmLines {
 public:
  explicit SlurmLines(LineContext* context) : context_(context) {}

  bool OnSrunTask(std::string_view line, std::string_view body);
  bool OnSlurmOom(std::string_view line, std::string_view body);
  bool OnSlurmCancel(std::string_view line, std::string_view body);

 private:
  LineContext* context_;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_SLURM_H_
