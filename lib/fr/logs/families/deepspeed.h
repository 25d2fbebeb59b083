// The log family of DeepSpeed's launcher (`deepspeed`, `python -m deepspeed.launcher.launch`),
// which logs through Python's logging: the first worker it saw exit, and its kills of the rest.
// Its patterns are rows of the table in lib/fr/logs/line_table.cc.
//
//   [2024-03-20 20:31:29,210] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3353707
//   [2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u',
//   'main.py', '--local_rank=0', ...] exits with return code = 1
#ifndef FR_LOGS_FAMILIES_DEEPSPEED_H_
#define FR_LOGS_FAMILIES_DEEPSPEED_H_

#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer returns false when the line is none of its own (the table then goes on).
class DeepSpeedLines {
 public:
  explicit DeepSpeedLines(LineContext* context) : context_(context) {}

  bool OnDeepSpeedExit(std::string_view line, std::string_view body);
  bool OnDeepSpeedKill(std::string_view line, std::string_view body);
  // Marks the file as DeepSpeed's and makes no event: always false.
  bool OnDeepSpeedCommand(std::string_view line, std::string_view body);

 private:
  LineContext* context_;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_DEEPSPEED_H_
