// `fr-analyze entries DIR`: ranks side by side, aligned by process group and collective seq (not
// by record_id, which is per process and wraps differently on every rank).
//
//   group 6 (DP) [1,3,5,7]
//   seq   rank 1               rank 3               rank 5               rank 7
//   #36   all_reduce done      all_reduce done      all_reduce done      all_reduce done
//   #37   all_reduce sched     all_reduce sched     -                    all_reduce sched
#ifndef FR_REPORT_ENTRIES_VIEW_H_
#define FR_REPORT_ENTRIES_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/index/job_index.h"
#include "fr/model/loaded_trace.h"

namespace fr {

struct EntriesViewOptions {
  std::vector<int64_t> ranks;          // columns; empty: the first `max_columns` members
  std::vector<std::string> pg_filter;  // group names or descs; empty: all groups
  int max_columns = 8;
  int last_seqs = 20;  // rows per group: the newest seqs
};

std::string FormatEntriesView(const LoadedTrace& trace, const JobIndex& index,
                              const EntriesViewOptions& options);

}  // namespace fr

#endif  // FR_REPORT_ENTRIES_VIEW_H_
