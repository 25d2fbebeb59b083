// Deep logical equality of decoded values, as Python's == would judge them after pickle.load
// (with the difference that a tuple never equals a list, so that decoders are held to the exact
// container kinds). For round-trip and differential tests.
#ifndef FR_DECODE_DOCUMENT_EQUAL_H_
#define FR_DECODE_DOCUMENT_EQUAL_H_

#include <string>

#include "fr/decode/document.h"

namespace fr {

// Empty when equal, otherwise a path to the first difference and the two values there, e.g.
// "root['entries'][3]['state']: 'completed' != 'scheduled'".
std::string DescribeDifference(const Document& a, ValueId a_root, const Document& b,
                               ValueId b_root);

}  // namespace fr

#endif  // FR_DECODE_DOCUMENT_EQUAL_H_
