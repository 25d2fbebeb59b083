#include "fr/verdict/message_strings.h"

#include <string>
#include <string_view>
#include <vector>

namespace fr {

void RewriteStrings(google::protobuf::Message* message, std::string (*rewrite)(std::string_view)) {
  const google::protobuf::Reflection* reflection = message->GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(*message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    using google::protobuf::FieldDescriptor;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          reflection->SetRepeatedString(message, field, i,
                                        rewrite(reflection->GetRepeatedString(*message, field, i)));
        }
      } else {
        reflection->SetString(message, field, rewrite(reflection->GetString(*message, field)));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_map()) {
        // Maps hold counters keyed by oddity names, which may quote a key from a file.
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          RewriteStrings(reflection->MutableRepeatedMessage(message, field, i), rewrite);
        }
      } else if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          RewriteStrings(reflection->MutableRepeatedMessage(message, field, i), rewrite);
        }
      } else {
        RewriteStrings(reflection->MutableMessage(message, field), rewrite);
      }
    }
  }
}

}  // namespace fr
