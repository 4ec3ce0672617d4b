#include "weft/distribute/cluster/slurm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "weft/core/errors.h"

namespace weft::distribute::cluster_resolver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SlurmClusterResolver, ExpandsSlurmsHostListsAndTaskCounts) {
  EXPECT_THAT(expand_hostlist("node[01-03,07],login", "V"),
              ElementsAre("node01", "node02", "node03", "node07", "login"));
  EXPECT_THAT(expand_hostlist("rack[1-2]-n[9-10]", "V"),
              ElementsAre("rack1-n9", "rack1-n10", "rack2-n9", "rack2-n10"));
  EXPECT_THAT(expand_hostlist("a,b", "V"), ElementsAre("a", "b"));
  EXPECT_THAT(expand_tasks_per_node("2(x3),1", "V"), ElementsAre(2, 2, 2, 1));
  for (const char* bad : {"node[1-3", "node1-3]", "node[3-1]", "node[a-b]", "a,,b"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(expand_hostlist(bad, "SLURM_STEP_NODELIST"), InvalidArgument);
  }
  try {
    expand_tasks_per_node("2(x3", "SLURM_STEP_TASKS_PER_NODE");
    FAIL() << "a count without its ')' was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("SLURM_STEP_TASKS_PER_NODE '2(x3': '2(x3' is not N or N(xM)"));
  }
}

// Tasks are numbered node by node; the i-th task of a node listens at port_base + i.
TEST(SlurmClusterResolver, NumbersTheStepsTasksNodeByNode) {
  std::map<std::string, std::string> env = {{"SLURM_PROCID", "2"},
                                            {"SLURM_STEP_NUM_TASKS", "3"},
                                            {"SLURM_STEP_NODELIST", "n[1-2]"},
                                            {"SLURM_STEP_TASKS_PER_NODE", "2,1"}};
  SlurmClusterResolver workers(env, {});
  EXPECT_EQ(workers.cluster_spec().job_tasks("worker"),
            (std::vector<std::string>{"n1:8888", "n1:8889", "n2:8888"}));
  EXPECT_EQ(workers.task_type(), "worker");
  EXPECT_EQ(workers.task_id(), 2);
  SlurmClusterResolver jobs(env, {.jobs = {{"chief", 1}, {"worker", 2}}, .port_base = 2000});
  EXPECT_EQ(jobs.cluster_spec().job_tasks("chief"), (std::vector<std::string>{"n1:2000"}));
  EXPECT_EQ(jobs.cluster_spec().job_tasks("worker"),
            (std::vector<std::string>{"n1:2001", "n2:2000"}));
  EXPECT_EQ(jobs.task_type(), "worker");
  EXPECT_EQ(jobs.task_id(), 1);
  // Outside a step (an sbatch script), the job's variables.
  SlurmClusterResolver job({{"SLURM_PROCID", "0"},
                            {"SLURM_NTASKS", "2"},
                            {"SLURM_JOB_NODELIST", "solo"},
                            {"SLURM_TASKS_PER_NODE", "2"}},
                           {});
  EXPECT_EQ(job.cluster_spec().num_tasks("worker"), 2);
}

TEST(SlurmClusterResolver, NamesTheVariableThatIsMissingOrDisagrees) {
  std::map<std::string, std::string> env = {{"SLURM_PROCID", "0"},
                                            {"SLURM_STEP_NUM_TASKS", "4"},
                                            {"SLURM_STEP_NODELIST", "n[1-2]"},
                                            {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}};
  auto error = [](std::map<std::string, std::string> e, SlurmOptions o = {}) -> std::string {
    try {
      SlurmClusterResolver r(e, std::move(o));
    } catch (const InvalidArgument& x) {
      return x.what();
    }
    return "accepted";
  };
  EXPECT_EQ(error(env), "accepted");
  auto without = env;
  without.erase("SLURM_PROCID");
  EXPECT_THAT(error(without), HasSubstr("SlurmClusterResolver: SLURM_PROCID is not set; run "
                                        "the command under srun"));
  auto wrong = env;
  wrong["SLURM_STEP_TASKS_PER_NODE"] = "2";
  EXPECT_THAT(error(wrong), HasSubstr("SLURM_STEP_NODELIST names 2 nodes, "
                                      "SLURM_STEP_TASKS_PER_NODE counts tasks on 1"));
  wrong = env;
  wrong["SLURM_STEP_NUM_TASKS"] = "5";
  EXPECT_THAT(error(wrong), HasSubstr("counts 4 tasks, the step has 5"));
  wrong = env;
  wrong["SLURM_PROCID"] = "x";
  EXPECT_THAT(error(wrong), HasSubstr("SLURM_PROCID is 'x', not a count"));
  EXPECT_THAT(error(env, {.jobs = {{"worker", 3}}}),
              HasSubstr("the jobs have 3 tasks, the step 4"));
}

}  // namespace
}  // namespace weft::distribute::cluster_resolver
