// A rank's sends/recvs with one peer, as pipeline schedules repeat them step after step; the
// expected break is where the test removed or added an op, counted from how it built the ops.
#include "fr/match/p2p_rhythm.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

// `steps` repetitions of one step's ops with the peer ('S' send, 'R' recv).
std::vector<bool> Repeat(const std::string& step, int steps) {
  std::vector<bool> ops;
  for (int s = 0; s < steps; ++s) {
    for (char c : step) ops.push_back(c == 'S');
  }
  return ops;
}

TEST(FindRhythmBreakTest, AWholeScheduleHasNoBreak) {
  // The last stage of a 4-microbatch GPipe step: four activations in, four gradients out.
  EXPECT_FALSE(FindRhythmBreak(Repeat("RRRRSSSS", 14)).has_value());
  // A middle stage's 1F1B step towards the next stage: warm-up sends, then send/recv pairs.
  EXPECT_FALSE(FindRhythmBreak(Repeat("SSRSRSRR", 9)).has_value());
}

TEST(FindRhythmBreakTest, AWindowCutMidStepOnBothEndsHasNoBreak) {
  // A wrapped ring buffer starts inside a step; the dump ends inside another.
  std::vector<bool> ops = Repeat("RRRRSSSS", 10);
  ops.erase(ops.begin(), ops.begin() + 3);
  ops.resize(ops.size() - 5);
  EXPECT_FALSE(FindRhythmBreak(ops).has_value());
}

TEST(FindRhythmBreakTest, ASkippedSendBreaksWhereTheNextStepBegins) {
  const int skipped_step = 12;
  std::vector<bool> ops = Repeat("RRRRSSSS", 16);
  // Drop the last send of step 12: its place is taken by step 13's first recv.
  const int64_t dropped = skipped_step * 8 + 7;
  ops.erase(ops.begin() + dropped);
  auto broken = FindRhythmBreak(ops);
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(broken->period, 8);
  EXPECT_EQ(broken->sends_per_period, 4);
  EXPECT_EQ(broken->position, dropped);
  EXPECT_EQ(broken->ops_in_rhythm, dropped);
  EXPECT_TRUE(broken->expected_send);
  EXPECT_FALSE(ops[broken->position]);  // a recv stands where a send belongs
}

TEST(FindRhythmBreakTest, AnExtraRecvBreaksWhereItStands) {
  std::vector<bool> ops = Repeat("SRSRSRSR", 10);
  const int64_t extra = 5 * 8 + 2;  // a recv before step 5's second send
  ops.insert(ops.begin() + extra, false);
  auto broken = FindRhythmBreak(ops);
  ASSERT_TRUE(broken.has_value());
  // With a period of 2 (send, recv) the extra recv is the first op out of turn.
  EXPECT_EQ(broken->period, 2);
  EXPECT_EQ(broken->position, extra);
  EXPECT_TRUE(broken->expected_send);
}

TEST(FindRhythmBreakTest, AHugeWindowIsReadInOnePass) {
  // A hostile or simply huge ring buffer: a million ops repeating until one missing send near
  // the end. Every period up to a third of the window is a candidate; each costs one lookup.
  const int steps = 125'000;
  std::vector<bool> ops = Repeat("RRRRSSSS", steps);
  const int64_t dropped = static_cast<int64_t>(steps - 2) * 8 + 7;
  ops.erase(ops.begin() + dropped);
  auto broken = FindRhythmBreak(ops);
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(broken->period, 8);
  EXPECT_EQ(broken->position, dropped);
}

TEST(FindRhythmBreakTest, TooFewRepetitionsSayNothing) {
  // One step and a half: no rhythm is known, so no op can be off it.
  std::vector<bool> ops = Repeat("RRRRSSSS", 1);
  for (bool op : Repeat("RRRR", 1)) ops.push_back(op);
  ops.push_back(false);
  EXPECT_FALSE(FindRhythmBreak(ops).has_value());
  EXPECT_FALSE(FindRhythmBreak({}).has_value());
  EXPECT_FALSE(FindRhythmBreak({true}).has_value());
}

TEST(FindRhythmBreakTest, ABreakBeforeTwoRepetitionsIsNotARhythmBreak) {
  // Step 1 already differs: the window never showed a steady rhythm to break.
  std::vector<bool> ops = Repeat("RRRRSSSS", 1);
  for (bool op : Repeat("RRRSSS", 1)) ops.push_back(op);
  for (bool op : Repeat("RRRRSSSS", 2)) ops.push_back(op);
  EXPECT_FALSE(FindRhythmBreak(ops).has_value());
}

}  // namespace
}  // namespace fr
