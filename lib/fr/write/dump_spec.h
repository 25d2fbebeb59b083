// The logical content of one rank's flight-recorder dump, as plain C++ values: what the writer
// serialises in any dump version and the simulator produces. Fields a version does not have are
// simply not written for it (see fr/write/dump_document.h).
#ifndef FR_WRITE_DUMP_SPEC_H_
#define FR_WRITE_DUMP_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fr {

struct FrameSpec {
  std::string name;
  std::string filename;
  int64_t line = 0;
};

struct EntrySpec {
  int64_t record_id = 0;
  int64_t pg_id = 0;
  std::string pg_name;            // process_group[0], key of pg_config
  std::string pg_desc;            // process_group[1]
  int64_t collective_seq_id = 0;  // written as seq_id by 1.x
  int64_t p2p_seq_id = 0;
  int64_t op_id = 0;
  std::string profiling_name;   // "nccl:all_reduce", "nccl:send 0->1", ...
  int64_t time_created_ns = 0;  // written in microseconds before 1.1
  std::optional<double> duration_ms;
  std::vector<std::vector<int64_t>> input_sizes;
  std::vector<std::string> input_dtypes;
  std::vector<std::vector<int64_t>> output_sizes;
  std::vector<std::string> output_dtypes;
  std::string state = "scheduled";  // scheduled | started | completed
  std::optional<int64_t> time_discovered_started_ns;
  std::optional<int64_t> time_discovered_completed_ns;
  bool retired = false;
  int64_t timeout_ms = 600000;
  bool is_p2p = false;
  std::string thread_name = "pt_main_thread";
  std::string thread_id = "140000000000000";
  // Indices into DumpSpec::frames, innermost first. PyTorch writes each distinct frame dict once
  // and shares it between entries.
  std::vector<uint32_t> frames;
};

struct ProcessGroupSpec {
  std::string name;            // "0", "1", ... or a user-given name
  std::string desc;            // "default_pg", "DP", ...
  std::vector<int64_t> ranks;  // global ranks
  int64_t pg_id = 0;           // key in 1.4's int-keyed pg_config and of pg_status
};

struct PgStatusSpec {
  int64_t last_enqueued_collective = -1;
  int64_t last_started_collective = -1;
  int64_t last_completed_collective = -1;
};

struct DumpSpec {
  // "" for the 2023 bare-list format, otherwise "1.0", "1.1", "1.4", "2.0" ... "2.10".
  std::string version = "2.10";
  std::vector<ProcessGroupSpec> process_groups;
  std::map<int64_t, PgStatusSpec> pg_status;  // by pg_id
  std::string comm_lib_version = "2.21.5";    // nccl_version before 2.10
  std::vector<FrameSpec> frames;
  bool has_entries = true;     // false: the "entries" key is absent (collectives excluded)
  bool include_stacks = true;  // false: no "frames" key (the dump retried without stacks)
  std::vector<EntrySpec> entries;
  std::optional<std::map<std::string, std::map<std::string, std::string>>> nccl_comm_state;
};

}  // namespace fr

#endif  // FR_WRITE_DUMP_SPEC_H_
