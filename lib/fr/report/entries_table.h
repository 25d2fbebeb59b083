// Every entry of every rank as columns: what Python's Trace.entries_df() turns into a pandas
// DataFrame without touching a row in Python (a 4096-rank x 2000-entry trace is 8M rows).
// Strings and lists repeat across rows, so they are categorical: per row an int32 code into one
// list of distinct values per column, made once.
//
//   EntriesTable table = BuildEntriesTable(trace);
//   table.op.categories[table.op.codes[row]];   // "all_reduce"
#ifndef FR_REPORT_ENTRIES_TABLE_H_
#define FR_REPORT_ENTRIES_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fr/model/loaded_trace.h"

namespace fr {

struct CategoryColumn {
  std::vector<int32_t> codes;           // one per row
  std::vector<std::string> categories;  // distinct values in order of first appearance
};

// Rows: ranks ascending, each rank's entries oldest first. Integers are kUnknown (-1) where the
// dump did not record the value; duration_ms is NaN then.
struct EntriesTable {
  size_t rows = 0;
  std::vector<int32_t> rank;
  std::vector<int64_t> record_id, pg_id, collective_seq_id, p2p_seq_id, op_id, peer_rank,
      time_created_ns, time_discovered_started_ns, time_discovered_completed_ns, timeout_ms;
  std::vector<double> duration_ms;
  std::vector<uint8_t> is_p2p, retired, state_from_batch;
  CategoryColumn process_group, pg_desc, op, op_kind, profiling_name, state, thread_name,
      input_sizes, input_dtypes, output_sizes, output_dtypes;
  // The stack, innermost first, one "name (file:line)" per line; "" without stacks.
  CategoryColumn frames;
};

EntriesTable BuildEntriesTable(const LoadedTrace& trace);

}  // namespace fr

#endif  // FR_REPORT_ENTRIES_TABLE_H_
