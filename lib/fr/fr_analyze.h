// fr-analyze's public API in one header: what the command line (tools/) and the Python bindings
// (python/src/) call, and where a program that links the `fr` library starts. It declares
// nothing of its own; it names the stages a caller uses, in the order data flows through them
// (docs/architecture.md has the whole journey).
//
//   #include "fr/fr_analyze.h"
//
//   // 1. Load: discover the dumps under a directory (by content), read, decode, normalize.
//   FR_ASSIGN_OR_RETURN(fr::LoadedTrace trace, fr::LoadTrace("/shared/job42"));
//   // 2. The job's logs beside the dumps (torchrun, Slurm, glog, NCCL, kernel), if any.
//   fr::LogSet logs = fr::ReadLogsBeside(trace);
//   // 3. Analyze: index, match, the wait-for graph, the verdict, the root cause from the logs.
//   fr::AnalyzeOptions options;
//   options.source = "/shared/job42";
//   fr::Diagnosis diagnosis = fr::Diagnose(trace, &logs, options);
//   const fr::report::Report& report = diagnosis.report;   // or fr::Analyze: the report alone
//   // 4. Write: text, JSON (the contract of proto/fr/report.proto), protobuf, pictures.
//   std::string text = fr::FormatReportText(report);
//   fr::Timeline timeline = fr::BuildTimeline(trace, logs, report);
//   std::string perfetto = fr::WritePerfettoTrace(timeline);
//   std::string html = fr::WriteHtmlReport(report, timeline);
//   bool failed = diagnosis.failed;   // exit status 1 of `fr-analyze analyze`
//
// Errors are absl::Status values naming the file and the byte offset or key; one bad file among
// many is a RejectedFile in the trace, never an error of the load. Nothing here executes code from
// a file or needs PyTorch.
//
// Test tooling (the torch-exact writers in fr/write, the job simulator in fr/simulate) is not
// part of this API or of the `fr` library; it is the `fr_testing` target.
#ifndef FR_FR_ANALYZE_H_
#define FR_FR_ANALYZE_H_

// Load and its inputs: files, bytes, decoded documents.
#include "fr/decode/json_decoder.h"    // DecodeJson: one dump's bytes as a Document
#include "fr/decode/pickle_decoder.h"  // DecodePickle: the safe pickle VM
#include "fr/load/load.h"              // LoadTrace, LoadTraceFromBytes, LoadDumpFile, AssembleTrace
#include "fr/model/loaded_trace.h"     // LoadedTrace: what the analysis reads
#include "fr/read/input_file.h"        // ReadInputFile: bytes, decompressed, with their encoding
#include "fr/summary/rank_summary.h"   // a rank's normalized dump as bytes (Dask workers)

// The job's logs.
#include "fr/clock/job_clock.h"  // one clock for every host's log times
#include "fr/logs/log_parser.h"  // ParseLogFiles, ParseLogText, ParseLogStream -> LogSet

// Analysis.
#include "fr/index/job_index.h"  // BuildJobIndex: groups across ranks, by seq
#include "fr/verdict/analyze.h"  // Analyze, Diagnose, ReadLogsBeside

// Output.
#include "fr/html/html_report.h"         // WriteHtmlReport
#include "fr/report/collective_table.h"  // per group x seq: who issued, started, completed
#include "fr/report/dump_print.h"        // one decoded dump as pickle.load would see it
#include "fr/report/entries_table.h"     // every entry as columns (pandas)
#include "fr/report/entries_view.h"      // ranks side by side by group and seq
#include "fr/report/load_summary.h"      // what was loaded, as text / JSON / LoadSummary
#include "fr/report/report_format.h"     // FormatReportText, FormatReportJson, FormatReportProto
#include "fr/timeline/timeline.h"        // BuildTimeline, WritePerfettoTrace, WriteChromeTraceJson

#endif  // FR_FR_ANALYZE_H_
