// The `weft` command explains itself: a refused flag says what it accepts, an unknown command is
// named with the commands there are, more threads than cores are capped with one warning, --help
// shows the defaults, and no message points at the project's plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>

#include "tests/cli_helpers.h"

namespace weft_cli_test {
namespace {

using testing::HasSubstr;
using testing::Not;

TEST(CliMessages, ARefusedFlagSaysWhatItAccepts) {
  struct Case {
    const char* args;
    const char* message;
  } cases[] = {
      {"train --epochs 0", "weft: --epochs must be at least 1, got 0\n"},
      {"train --epochs 2.5", "weft: --epochs must be a whole number, got \"2.5\"\n"},
      {"train --batch-size -3", "weft: --batch-size must be at least 1, got -3\n"},
      {"train --lr 0", "weft: --lr must be greater than 0, got 0\n"},
      {"train --heartbeat-timeout 1.5", "weft: --heartbeat-timeout must be at least 2, got 1.5\n"},
      {"train --model resnet",
       "weft: --model must be one of mlp, cnn, lstm, transformer; got \"resnet\"\n"},
      {"train --replicas 300", "weft: --replicas must be from 1 to 256, got 300\n"},
      {"train --save-freq often",
       "weft: --save-freq must be \"epoch\" or a number of steps of at least 1, got \"often\"\n"},
      {"train --profile-steps 6:3",
       "weft: --profile-steps must be a range of steps A:B (1 <= A <= B, counted from 1 across "
       "epochs), got 6:3\n"},
      {"launch -n 0 -- weft train", "weft: --workers must be from 1 to 1024, got 0\n"},
      {"predict m --input x.npy --output y.npy --batch-size 0",
       "weft: --batch-size must be at least 1, got 0\n"},
  };
  for (const Case& c : cases) {
    Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.args;
    EXPECT_EQ(r.output, c.message) << c.args;
  }
}

TEST(CliMessages, AnUnknownCommandIsNamedWithTheCommandsThereAre) {
  const std::string commands =
      "the commands are bench, evaluate, info, inspect, launch, predict, profile, report, "
      "server, train (weft --help says what each does)\n";
  Result r = run("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output, "weft: unknown command \"frobnicate\"; " + commands);
  r = run("");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output, "weft: a command is needed; " + commands);
}

TEST(CliMessages, MoreThreadsThanCoresAreCappedWithOneWarning) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int cores = CPU_COUNT(&set);
  fs::path dir = fs::temp_directory_path() / ("weft_cli_messages_" + std::to_string(getpid()));
  write_dataset(dir / "data", 300, 100);
  fs::path json = dir / "m.json";
  Result r = run("train --epochs 1 --quiet --dataset " + (dir / "data").string() + " --threads " +
                 std::to_string(cores * 4) + " --metrics-json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  std::string warning = "weft: warning: --threads " + std::to_string(cores * 4) +
                        " is more than the " + std::to_string(cores) + " core";
  EXPECT_THAT(r.output, HasSubstr(warning));
  EXPECT_EQ(r.output.find(warning), r.output.rfind(warning)) << "warned more than once";
  EXPECT_EQ(read_json(json)["threads"], cores);
  // Within the cores: no warning, the count as given.
  r = run("train --epochs 1 --quiet --dataset " + (dir / "data").string() +
          " --threads 1 --metrics-json " + json.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("warning")));
  EXPECT_EQ(read_json(json)["threads"], 1);
  fs::remove_all(dir);
}

TEST(CliMessages, HelpShowsTheDefaults) {
  Result r = run("train --help");
  EXPECT_EQ(r.status, 0);
  for (const char* shown : {"--epochs INT:at least 1=3", "--batch-size INT:at least 1=128",
                            "learning rate (default: 1e-3; lstm 5e-3, transformer 3e-3)",
                            "--seed INT=0", "--model TEXT:{mlp, cnn, lstm, transformer}=mlp",
                            "--optimizer TEXT:{adam, sgd, rmsprop, "
                            "adamw}=adam"}) {
    EXPECT_THAT(r.output, HasSubstr(shown));
  }
  r = run("predict --help");
  EXPECT_THAT(r.output, HasSubstr("--batch-size INT:at least 1=32"));
}

TEST(CliMessages, WhatIsMissingIsSaidWithWhatToUseInstead) {
  Result r = run("train --strategy parameter_server --ps-mode sync --mixed-precision f16");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output,
            "weft: FailedPrecondition: --mixed-precision f16 is not supported with --ps-mode "
            "sync: each worker's part of a step would check its own gradients for overflow, "
            "while the step must be skipped as one (use --ps-mode async, or bf16, which needs "
            "no loss scale)\n");
  EXPECT_THAT(r.output, Not(HasSubstr("issue")));
  r = run("train --profile-steps 2:3");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output,
            "weft: InvalidArgument: --profile-steps 2:3 needs --logdir: the traces go under it\n");
}

}  // namespace
}  // namespace weft_cli_test
