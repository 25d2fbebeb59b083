// Every log family's parser for one file, and the one place that says in which order they look
// at a line: first the families that follow something begun on earlier lines (torchrun's error
// table, Python's tracebacks), then NCCL's own leveled lines, then one table of needles and
// recognizers, each family's rows where its needles must come. Internal to lib/fr/logs.
//
//   LineFamilies families(&context);        // context: the file's LineContext
//   families.NameWriter(&prefix);           // per line, once its prefix is parsed
//   families.HandleLine(line, prefix.body);
//   ...
//   families.Finish();                      // at the end of the file
//
// A new family: its class in lib/fr/logs/families/<family>.h (constructed from the
// LineContext), a member here, and its rows in the table in line_table.cc (docs/architecture.md,
// "A new log family").
#ifndef FR_LOGS_LINE_TABLE_H_
#define FR_LOGS_LINE_TABLE_H_

#include <string_view>
#include <tuple>

#include "fr/logs/families/deepspeed.h"
#include "fr/logs/families/kernel.h"
#include "fr/logs/families/nccl.h"
#include "fr/logs/families/open_mpi.h"
#include "fr/logs/families/process_group_nccl.h"
#include "fr/logs/families/python.h"
#include "fr/logs/families/ray.h"
#include "fr/logs/families/slurm.h"
#include "fr/logs/families/store.h"
#include "fr/logs/families/torchrun.h"
#include "fr/logs/line_context.h"
#include "fr/logs/line_prefix.h"

namespace fr::logs_internal {

class LineFamilies {
 public:
  // `context` is the file's; it must outlive the families.
  explicit LineFamilies(LineContext* context);
  LineFamilies(const LineFamilies&) = delete;
  LineFamilies& operator=(const LineFamilies&) = delete;

  // Who printed the current line, where only a family knows (Ray Train's workers, by pid):
  // fills in `prefix`, the current line's, before anything else looks at it.
  void NameWriter(LinePrefix* prefix) { ray_.NameWorker(prefix); }

  // Whether blank lines matter (they are part of a traceback being followed); the parser skips
  // them otherwise.
  bool WantsBlankLines() const { return python_.following_tracebacks(); }

  // The current line (`body`: what its prefixes leave), to the families in their order; at most
  // one event comes of it, besides what it ends (a traceback, a table entry).
  void HandleLine(std::string_view line, std::string_view body);

  // The end of the file: what is still open (a table entry, tracebacks) makes its events.
  void Finish();

 private:
  // The pattern table (line_table.cc) names a recognizer by its member pointer; this finds the
  // family object it is called on.
  template <typename Family>
  Family& Get() {
    return std::get<Family&>(std::tie(process_group_nccl_, nccl_, kernel_, slurm_, store_,
                                      torchrun_, deepspeed_, ray_, open_mpi_, python_));
  }
  template <auto kRecognizer>
  static bool Call(LineFamilies& families, std::string_view line, std::string_view body);
  void Dispatch(std::string_view line, std::string_view body);

  ProcessGroupNcclLines process_group_nccl_;
  NcclLines nccl_;
  KernelLines kernel_;
  SlurmLines slurm_;
  StoreLines store_;
  TorchrunLines torchrun_;
  DeepSpeedLines deepspeed_;
  RayLines ray_;
  OpenMpiLines open_mpi_;
  PythonLines python_;  // after ray_: it names a Ray worker's lines by pid
};

}  // namespace fr::logs_internal

#endif  // FR_LOGS_LINE_TABLE_H_
