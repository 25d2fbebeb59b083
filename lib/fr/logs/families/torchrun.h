// The log family of torchrun's elastic agent: a worker that failed, the signals it sends and
// receives, the rendezvous, and its ChildFailedError table, whose "[N]:" entries span many
// lines. Its patterns are rows of the table in lib/fr/logs/line_table.cc; the table it follows
// line by line (line_table.cc's LineFamilies::HandleLine).
//
//   E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869]
//   failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python
//   Root Cause (first observed failure):
//   [0]:
//     time      : 2023-05-19_16:39:58
//     host      : n136-117-136.byted.org
//     rank      : 0 (local_rank: 0)
//     exitcode  : 1 (pid: 78970)
#ifndef FR_LOGS_FAMILIES_TORCHRUN_H_
#define FR_LOGS_FAMILIES_TORCHRUN_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer returns false when the line is none of its own (the table then goes on).
class TorchrunLines {
 public:
  explicit TorchrunLines(LineContext* context) : context_(context) {}

  bool OnWorkerFailed(std::string_view line, std::string_view body);
  bool OnSignalSent(std::string_view line, std::string_view body);
  bool OnLauncherSignalled(std::string_view line, std::string_view body);
  bool OnRendezvous(std::string_view line, std::string_view body);
  bool OnLauncherStart(std::string_view line, std::string_view body);
  // "Root Cause (first observed failure):" or "Failures:": the error table begins.
  bool OnTableStart(std::string_view line, std::string_view body);
  // An entry of the table pasted without the table's head ("  rank      : 0 (local_rank: 0)"
  // and its fields below): read as an entry of the failures, since which section it came from
  // was cut.
  bool OnHeadlessTableEntry(std::string_view line, std::string_view body);

  // Whether the error table is open: its next lines go to TableLine first.
  bool in_table() const { return table_section_ != TableSection::kNone; }
  // A line while the table is open; false when it is not part of it (then the table may be
  // over, and the line is read as any other).
  bool TableLine(std::string_view body);
  // Emits the entry being read and closes the table (at its rule, or the end of the file).
  void FlushTable();

 private:
  // One entry of the ChildFailedError table.
  struct TableEntry {
    bool open = false;
    int64_t first_line = 0;
    std::string host, text;
    int64_t rank = -1, local_rank = -1, exit_code = INT32_MIN, pid = -1, signal = -1;
    LogTime time;
  };
  enum class TableSection { kNone, kFailures, kRootCause };

  void FlushTableEntry();

  LineContext* context_;
  TableSection table_section_ = TableSection::kNone;
  TableEntry table_entry_;
  // Lines in the table that were no part of it: a cut-off table must not swallow the log.
  int table_idle_lines_ = 0;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_TORCHRUN_H_
