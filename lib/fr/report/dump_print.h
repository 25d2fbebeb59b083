// `fr-analyze dump FILE`: one dump decoded for printing as Python's json.dumps(pickle.load(f))
// prints it (WriteLogicalJson), within an output budget.
//
//   FR_ASSIGN_OR_RETURN(Document document, DecodeForPrinting(input));
//   std::string text = WriteLogicalJson(document);  // bounded by PrintedSizeLimit
//
// The printed form is a tree: a value the pickle shares (a memo hit, 2 bytes of input) is printed
// in full wherever it is referenced, which is what pickle.load returns. Lists that hold the
// previous list twice, forty deep, make a 300-byte pickle print terabytes. So the printed size is
// computed first, once per distinct value (time and memory proportional to the document), and a
// document that would print more than PrintedSizeLimit(input size) is refused with an error that
// names the value that expands too far, its size and the limit. Printing shared values once with
// a reference marker was not chosen: the output would no longer be what pickle.load returns,
// which is the contract of `dump` that scripts compare against.
#ifndef FR_REPORT_DUMP_PRINT_H_
#define FR_REPORT_DUMP_PRINT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fr/decode/document.h"
#include "fr/read/input_file.h"

namespace fr {

// The budget of printed bytes: this many per input byte, and at least kMinPrintedBytes. A real
// dump prints about 10 times its pickle (keys and repeated strings are 2- or 5-byte memo hits in
// the pickle, printed in full), a dump made mostly of deep stacks up to some 40 times (each memo
// hit on a frame dict prints its name, file path and line); the factor leaves room above that.
inline constexpr uint64_t kPrintedBytesPerInputByte = 256;
inline constexpr uint64_t kMinPrintedBytes = uint64_t{64} << 20;

uint64_t PrintedSizeLimit(uint64_t input_size);

// An upper bound of WriteLogicalJson(document).size(), exact for documents of plain ASCII strings,
// ints, None, bools and dicts without repeated keys (float widths and escapes are bounded, not
// computed). Saturates at 2^62.
uint64_t PrintedJsonSizeBound(const Document& document);

// OK when PrintedJsonSizeBound(document) <= limit; otherwise ResourceExhausted naming the first
// value (by byte offset) found to print more than `limit` bytes, e.g.
//   "byte 57: this value prints as up to 412316860420 bytes of JSON, over the limit of 67108864
//   bytes (...)".
// Stops at that value, so a refused document costs no more than an accepted one.
absl::Status CheckPrintedSize(const Document& document, uint64_t limit);

// Decodes `input` (pickle or JSON) and checks CheckPrintedSize against
// PrintedSizeLimit(input size). Running out of memory is ResourceExhausted, not an abort.
absl::StatusOr<Document> DecodeForPrinting(const InputFile& input);

}  // namespace fr

#endif  // FR_REPORT_DUMP_PRINT_H_
