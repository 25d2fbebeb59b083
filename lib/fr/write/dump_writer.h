// Writes flight-recorder dumps the way PyTorch does, byte for byte: the pickle of
// torch::jit::Pickler for every dump version, and the JSON variant. Used by tests, benchmarks, the
// job simulator and the built-in example; fr-analyze never needs PyTorch to produce test data.
//
//   DumpSpec spec = ...;
//   std::string bytes = WriteDumpPickle(spec);   // what rank 3's nccl_trace_rank_3 would hold
//   std::string text = WriteDumpJson(spec);      // what _dump_nccl_trace_json would return
#ifndef FR_WRITE_DUMP_WRITER_H_
#define FR_WRITE_DUMP_WRITER_H_

#include <string>

#include "fr/decode/document.h"
#include "fr/write/dump_spec.h"

namespace fr {

// The pickle PyTorch of `spec.version` writes for `spec`.
std::string WriteDumpPickle(const DumpSpec& spec);

// The JSON variant (keys sorted, compact, no frames, string pg_status, 0 for missing times).
std::string WriteDumpJson(const DumpSpec& spec);

// The logical content of a decoded document as JSON, the way Python's json.dumps would print the
// result of pickle.load: tuples as arrays, non-string dict keys as strings, floats printed so they
// read back exactly. Used by `fr-analyze dump FILE --format json`.
std::string WriteLogicalJson(const Document& document);

}  // namespace fr

#endif  // FR_WRITE_DUMP_WRITER_H_
