// The log family of Open MPI's mpirun (4.1): the rank it saw die of a signal, and the first
// process it saw exit non-zero, whose "Exit code:" comes a line after its "Process name:". Its
// patterns are rows of the table in lib/fr/logs/line_table.cc.
//
//   mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 11 (Segmentation
//   fault).
//     Process name: [[21288,1],2]
//     Exit code:    1
#ifndef FR_LOGS_FAMILIES_OPEN_MPI_H_
#define FR_LOGS_FAMILIES_OPEN_MPI_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fr/logs/line_context.h"

namespace fr::logs_internal {

// Each recognizer returns false when the line is none of its own (the table then goes on).
class OpenMpiLines {
 public:
  explicit OpenMpiLines(LineContext* context) : context_(context) {}

  bool OnMpirunNoticed(std::string_view line, std::string_view body);
  bool OnMpiProcessName(std::string_view line, std::string_view body);
  // Amends the event of the "Process name:" line just before; false when there is none.
  bool OnMpiExitCode(std::string_view line, std::string_view body);

 private:
  // The line is mpirun's own, not a worker's output quoting it.
  bool FromLauncherStream(std::string_view body) const;

  LineContext* context_;
  // The event of the last "Process name: [[J,S],R]" line, whose "Exit code:" follows it, and
  // that line (-1 once its exit code was read).
  size_t mpi_exit_event_ = 0;
  int64_t mpi_exit_line_ = -1;
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_FAMILIES_OPEN_MPI_H_
