// The JSON writer against protobuf's own JSON parser: what fr-analyze prints must read back, with
// protobuf's parser, as exactly the message it came from; and 64-bit integers must be JSON
// numbers, as the report contract says (a seq id past 2^32 stays itself).
#include "fr/report/proto_json.h"

#include <string>

#include "fr/report.pb.h"
#include "fr/report/report_format.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::HasSubstr;

report::Report SampleReport() {
  report::Report report;
  report.set_schema_version(1);
  auto* verdict = report.mutable_verdict();
  verdict->set_failure_class("missing_participant");
  verdict->add_culprit_ranks(37);
  verdict->set_collective_seq_id(int64_t{4294967332});  // 2^32 + 36
  verdict->set_summary("quote \" backslash \\ newline \n escape \x1b tab \t h\xc3\xa9");
  verdict->mutable_process_group()->set_name("3");
  verdict->mutable_process_group()->set_desc("DP");
  verdict->mutable_process_group()->add_ranks(5);
  verdict->mutable_process_group()->add_ranks(37);
  auto* edge = verdict->add_chains()->add_edges();
  edge->set_waiter(5);
  edge->set_waits_for(37);
  edge->set_seq_id(-1);
  report.mutable_inputs()->set_dump_time_ns(int64_t{1796111792346662041});
  auto* finding = report.add_findings();
  finding->set_kind("op_mismatch");
  finding->set_majority_rank(0);  // set to its default: still printed, it has presence
  finding->add_stack("<module> (train.py:12)");
  auto* straggler = report.add_stragglers();
  straggler->set_median_lateness_ms(12.5);
  straggler->set_fraction_last(1.0 / 3.0);
  (*report.mutable_stats()->mutable_counters())["zeta"] = int64_t{1} << 40;
  (*report.mutable_stats()->mutable_counters())["alpha"] = 2;
  return report;
}

TEST(ProtoJsonTest, ReadsBackThroughProtobufsParserAsTheSameMessage) {
  report::Report report = SampleReport();
  std::string json = ProtoToJson(report);
  report::Report parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(report, parsed)) << json;
}

TEST(ProtoJsonTest, SixtyFourBitIntegersAreNumbers) {
  std::string json = ProtoToJson(SampleReport());
  EXPECT_THAT(json, HasSubstr("\"collective_seq_id\": 4294967332"));
  EXPECT_THAT(json, HasSubstr("\"dump_time_ns\": 1796111792346662041"));
  EXPECT_THAT(json, HasSubstr("\"zeta\": 1099511627776"));
  EXPECT_THAT(json, HasSubstr("\"seq_id\": -1"));
}

TEST(ProtoJsonTest, EveryFieldIsPrintedButUnsetOptionalsAndMapsAreSorted) {
  std::string json = ProtoToJson(SampleReport());
  EXPECT_THAT(json, HasSubstr("\"victim_ranks\": []"));  // default: printed
  EXPECT_THAT(json, HasSubstr("\"majority_rank\": 0"));  // optional, set
  EXPECT_LT(json.find("\"alpha\""), json.find("\"zeta\""));
  report::Report report = SampleReport();
  report.mutable_findings(0)->clear_majority_rank();
  EXPECT_THAT(ProtoToJson(report), ::testing::Not(HasSubstr("majority_rank")));
  EXPECT_EQ(ProtoToJson(report).back(), '\n');
}

// Whatever bytes reached a string (a damaged worker summary, a file name), every rendering of the
// report is UTF-8: Python decodes the JSON strictly, and protobuf's readers refuse the binary
// message otherwise.
TEST(ProtoJsonTest, StringsThatAreNotUtf8AreWrittenAsValidUtf8) {
  report::Report report = SampleReport();
  report.mutable_findings(0)->set_stack(0, "train\xfdstep (train.py:12)");
  (*report.mutable_stats()->mutable_counters())["key\xc3"] = 1;
  std::string json = ProtoToJson(report);
  EXPECT_THAT(json, HasSubstr("\"train\xef\xbf\xbdstep (train.py:12)\""));
  EXPECT_THAT(json, HasSubstr("\"key\xef\xbf\xbd\": 1"));
  report::Report parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  report::Report from_proto;
  ASSERT_TRUE(from_proto.ParseFromString(FormatReportProto(report)));
  EXPECT_EQ(from_proto.findings(0).stack(0), "train\xef\xbf\xbdstep (train.py:12)");
}

}  // namespace
}  // namespace fr
