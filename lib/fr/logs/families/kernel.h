// The log family of the kernel (dmesg, kern.log, syslog, journalctl): the GPU driver's Xid
// errors, the OOM killer, and the boot clock that dates dmesg's seconds since boot. Its patterns
// are rows of the table in lib/fr/logs/line_table.cc.
//
//   NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus
//   Out of memory: Killed process 22213 (nwg-displays) total-vm:35378480kB, anon-rss:25348912kB,
//   ...
#ifndef FR_LOGS_FAMILIES_KERNEL_H_
#define FR_LOGS_FAMILIES_KERNEL_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer returns false when the line is none of its own (the table then goes on).
class KernelLines {
 public:
  explicit KernelLines(LineContext* context) : context_(context) {}

  bool OnXid(std::string_view line, std::string_view body);
  // The OOM killer's two lines of one kill ("oom-kill:" summary, "Killed process") make one
  // event.
  bool OnHostOom(std::string_view line, std::string_view body);
  bool OnBootClock(std::string_view line, std::string_view body);

 private:
  LineContext* context_;
  // The last OOM kill's event (an index into the events, SIZE_MAX when none may take a second
  // line) and its line.
  size_t last_oom_event_ = SIZE_MAX;
  int64_t last_oom_line_ = 0;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_KERNEL_H_
