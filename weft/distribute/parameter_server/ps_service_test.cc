// A parameter server and its client in one process, over real gRPC on 127.0.0.1: values and
// optimizer updates round-trip bit for bit against the same optimizer run locally, staged pushes
// change nothing until their commit, a commit sent again is dropped, tensors larger than a
// message travel in chunks, and calls without the token, over the size limit or to another
// address are refused. A raw gRPC stub plays the misbehaving callers.
#include "weft/distribute/parameter_server/ps_service.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <random>

#include "weft/checkpoint/checkpoint_io.h"
#include "weft/core/errors.h"
#include "weft/distribute/parameter_server/ps.pb.h"
#include "weft/distribute/parameter_server/ps_client.h"
#include "weft/ops/shape_ops.h"
#include "weft/optim/adam.h"
#include "weft/optim/sgd.h"
#include "weft/testing/raw_grpc.h"
#include "weft/testing/tls_files.h"

namespace weft::distribute::parameter_server {
namespace {

namespace pb = ::weft::ps;
using ::testing::HasSubstr;

constexpr const char* kToken = "0123456789abcdef";

ServiceOptions options(std::string token = kToken) {
  ServiceOptions o;
  o.token = std::move(token);
  o.call_timeout = std::chrono::milliseconds(10000);
  return o;
}

Tensor random_tensor(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (auto& x : v) x = normal(rng);
  return Tensor::from_vector(v, shape);
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

std::string adam_config(double lr) {
  return optim::Adam(optim::AdamOptions{.learning_rate = lr}).get_config().to_json();
}

grpc::Status raw_call(const std::string& address, const std::string& method,
                      const std::string& payload, const char* token) {
  return weft::testing::raw_call(address, "/weft.ps.ParameterServer/" + method, payload, token);
}

const VariableSpec kKernel{.id = 0, .name = "dense/kernel", .dtype = kFloat32, .shape = {3, 4}};
const VariableSpec kBias{.id = 1, .name = "dense/bias", .dtype = kFloat32, .shape = {4}};

TEST(ParameterServer, CommittedUpdatesMatchTheSameOptimizerRunLocally) {
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  ParameterServerClient client("ps:0", server.address(), options());
  client.create({kKernel, kBias}, adam_config(0.01));
  // Readable once it has a value.
  EXPECT_FALSE(client.readable({kKernel}));
  EXPECT_THAT([&] { client.pull({kKernel}); },
              ::testing::ThrowsMessage<FailedPrecondition>(
                  HasSubstr("variable 0 (dense/kernel, float32 (3, 4)) on ps:0 has no value yet")));
  EXPECT_EQ(client.incarnation(), server.incarnation());

  Tensor k0 = random_tensor({3, 4}, 1), b0 = random_tensor({4}, 2);
  client.push(1, PushKind::kValue, {kKernel, kBias}, {k0, b0});
  // Staged only: nothing changes until the commit (the variables have no value yet).
  EXPECT_FALSE(client.readable({kBias}));
  EXPECT_EQ(server.staged_closures(), 1u);
  EXPECT_TRUE(client.commit(1));
  EXPECT_EQ(server.staged_closures(), 0u);
  EXPECT_TRUE(client.readable({kKernel, kBias}));
  std::vector<Tensor> pulled = client.pull({kKernel, kBias});
  EXPECT_EQ(values(pulled[0]), values(k0));
  EXPECT_EQ(values(pulled[1]), values(b0));

  // The same Adam, locally, on the same values and gradients: the same bits, slots included.
  // Step 0 is closure 2's; steps 1 and 2 are closure 3's (two steps staged, applied in order).
  optim::Adam local(optim::AdamOptions{.learning_rate = 0.01});
  Variable kernel(k0, "dense/kernel"), bias(b0, "dense/bias");
  for (int step = 2; step >= 0; --step) {  // pushed last step first: the commit orders them
    Tensor gk = random_tensor({3, 4}, 10 + step), gb = random_tensor({4}, 20 + step);
    GradientStep at{.optimizer = "", .learning_rate = 0.01, .iterations = step};
    at.index = static_cast<uint32_t>(step == 0 ? 0 : step - 1);
    client.push(step == 0 ? 2 : 3, PushKind::kGradient, {kKernel, kBias}, {gk, gb}, at);
  }
  EXPECT_TRUE(client.commit(2));
  EXPECT_TRUE(client.commit(3));
  for (int step = 0; step < 3; ++step) {
    Tensor gk = random_tensor({3, 4}, 10 + step), gb = random_tensor({4}, 20 + step);
    local.apply_gradients({{gk, kernel}, {gb, bias}});
  }
  pulled = client.pull({kKernel, kBias});
  EXPECT_EQ(values(pulled[0]), values(kernel));
  EXPECT_EQ(values(pulled[1]), values(bias));
  std::vector<Tensor> slots = server.slots(kKernel.id);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(values(slots[0]), values(local.get_slot(kernel, "m")));
  EXPECT_EQ(values(slots[1]), values(local.get_slot(kernel, "v")));

  // The slots read and write as variables of their own (a checkpoint's save and restore):
  // `slot` k + 1 is slot k. A value only, staged until its commit.
  VariableSpec v_slot = kKernel;
  v_slot.slot = 2;
  EXPECT_EQ(values(client.pull({v_slot})[0]), values(local.get_slot(kernel, "v")));
  Tensor v1 = random_tensor({3, 4}, 30);
  client.push(4, PushKind::kValue, {v_slot}, {v1});
  EXPECT_EQ(values(server.slots(kKernel.id)[1]), values(local.get_slot(kernel, "v")));
  EXPECT_TRUE(client.commit(4));
  EXPECT_EQ(values(server.slots(kKernel.id)[1]), values(v1));
  EXPECT_EQ(values(server.value(kKernel.id)), values(kernel)) << "the value was written";
  EXPECT_THAT([&] { client.push(5, PushKind::kGradient, {v_slot}, {v1}); },
              ::testing::ThrowsMessage<InvalidArgument>(HasSubstr(
                  "slot 1 of variable 0 (dense/kernel, float32 (3, 4)) takes values only")));
  v_slot.slot = 3;
  EXPECT_THAT([&] { client.pull({v_slot}); },
              ::testing::ThrowsMessage<FailedPrecondition>(
                  HasSubstr("variable 0 (dense/kernel, float32 (3, 4)) has no slot 2 (it has 2")));
}

TEST(ParameterServer, ACommitSentAgainIsDroppedAndAnAbortDropsWhatWasStaged) {
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  ParameterServerClient client("ps:0", server.address(), options());
  client.create({kBias}, "");
  // The optimizer comes with the gradient here (its algorithm's config), not at creation.
  const GradientStep sgd{.optimizer = optim::SGD(0.5).algorithm().get_config().to_json(),
                         .learning_rate = 0.5};
  Tensor ones = Tensor::from_vector<float>({1, 1, 1, 1}, {4});
  client.push(7, PushKind::kGradient, {kBias}, {ones}, sgd);
  EXPECT_TRUE(client.commit(7));
  EXPECT_TRUE(server.applied(7));
  const std::vector<float> once(4, -0.5f);
  EXPECT_EQ(values(client.pull({kBias})[0]), once);
  // A retry of the whole closure (its push and commit sent again) changes nothing.
  client.push(7, PushKind::kGradient, {kBias}, {ones}, sgd);
  EXPECT_FALSE(client.commit(7));
  EXPECT_EQ(values(client.pull({kBias})[0]), once);
  EXPECT_EQ(server.staged_closures(), 0u);

  client.push(8, PushKind::kGradient, {kBias}, {ones}, sgd);
  client.abort(8);
  EXPECT_EQ(server.staged_closures(), 0u);
  EXPECT_FALSE(server.applied(8));
  // A push of the aborted run that arrives late (its worker was given up while it ran) is
  // dropped, not staged for ever.
  client.push(8, PushKind::kGradient, {kBias}, {ones}, sgd);
  EXPECT_EQ(server.staged_closures(), 0u);
  EXPECT_TRUE(client.commit(8));  // nothing staged any more
  EXPECT_EQ(values(client.pull({kBias})[0]), once);

  // An addition (the optimizer's iterations count) is staged and applied the same way.
  const VariableSpec iterations{.id = 9, .name = "iterations", .dtype = kInt64, .shape = {}};
  client.create({iterations}, "");
  client.push(10, PushKind::kAdd, {iterations}, {Tensor::scalar(1, kInt64)});
  EXPECT_EQ(server.value(9).item<int64_t>(), 0);
  EXPECT_TRUE(client.commit(10));
  client.push(11, PushKind::kAdd, {iterations}, {Tensor::scalar(2, kInt64)});
  EXPECT_TRUE(client.commit(11));
  EXPECT_FALSE(client.commit(11));
  EXPECT_EQ(server.value(9).item<int64_t>(), 3);

  // Closures committed together as one step (synchronous training): their gradients summed,
  // applied once; the addition counted once.
  client.push(13, PushKind::kGradient, {kBias}, {ones}, sgd);
  client.push(13, PushKind::kAdd, {iterations}, {Tensor::scalar(1, kInt64)});
  client.push(14, PushKind::kGradient, {kBias}, {full({4}, 3.0f)}, sgd);
  client.push(14, PushKind::kAdd, {iterations}, {Tensor::scalar(1, kInt64)});
  EXPECT_TRUE(client.commit(13, {14}));
  EXPECT_EQ(values(client.pull({kBias})[0]), std::vector<float>(4, -0.5f - 0.5f * 4.0f));
  EXPECT_EQ(server.value(9).item<int64_t>(), 4);
  EXPECT_TRUE(server.applied(14));
  EXPECT_EQ(server.staged_closures(), 0u);

  // Another optimizer's gradient for a variable Sgd updates is refused, naming both.
  const GradientStep adam{.optimizer = adam_config(0.01), .learning_rate = 0.01};
  try {
    client.push(12, PushKind::kGradient, {kBias}, {ones}, adam);
    FAIL() << "a second optimizer was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("from the optimizer {\"amsgrad\""));
    EXPECT_THAT(e.what(), HasSubstr("while it is updated by {\"class_name\":\"SGD\""));
  }
}

TEST(ParameterServer, TensorsLargerThanAMessageTravelInChunks) {
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  ParameterServerClient client("ps:0", server.address(), options());
  // 2.5 M floats (10 MB: three calls) between two small variables.
  const VariableSpec big{.id = 5, .name = "embedding", .dtype = kFloat32, .shape = {2500, 1000}};
  client.create({kKernel, big, kBias}, "");
  Tensor k = random_tensor({3, 4}, 1), e = random_tensor({2500, 1000}, 2),
         b = random_tensor({4}, 3);
  client.push(1, PushKind::kValue, {kKernel, big, kBias}, {k, e, b});
  EXPECT_TRUE(client.commit(1));
  EXPECT_EQ(values(server.value(big.id)), values(e));
  std::vector<Tensor> pulled = client.pull({kKernel, big, kBias});
  EXPECT_EQ(values(pulled[0]), values(k));
  EXPECT_EQ(values(pulled[1]), values(e));
  EXPECT_EQ(values(pulled[2]), values(b));
  // Rows alone (an embedding lookup's), in the order asked, repeats and runs of consecutive rows
  // included; 1 200 rows of 4 000 bytes take two calls.
  std::vector<int64_t> rows{2499, 7, 8, 9, 7, 0};
  for (int64_t r = 1000; r < 2200; ++r) rows.push_back(r);
  Tensor got = client.pull_rows(big, rows);
  ASSERT_EQ(got.shape(), (Shape{static_cast<int64_t>(rows.size()), 1000}));
  EXPECT_EQ(values(got), values(gather(e, Tensor::from_vector<int64_t>(rows))));
  EXPECT_THROW(client.pull_rows(big, {2500}), InvalidArgument);

  // One message over the limit is refused by gRPC itself, before the server sees it.
  pb::PushRequest huge;
  huge.set_closure_id(2);
  auto* chunk = huge.add_chunks();
  chunk->set_id(big.id);
  chunk->set_data(std::string(kMaxMessageBytes + 1, 'x'));
  grpc::Status s = raw_call(server.address(), "Push", huge.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // A pull asking for more than a chunk's bytes in one call is refused naming the limit.
  pb::PullRequest greedy;
  auto* range = greedy.add_ranges();
  range->set_id(big.id);
  range->set_length(kChunkBytes + 4);
  s = raw_call(server.address(), "Pull", greedy.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("over the limit of 4194304 per call"));
  EXPECT_EQ(server.staged_closures(), 0u);
}

TEST(ParameterServer, BadRequestsAreRefusedNamingWhatIsWrong) {
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  ParameterServerClient client("ps:0", server.address(), options());
  client.create({kKernel, kBias}, "");
  try {
    client.pull({VariableSpec{.id = 9, .name = "ghost", .shape = {2}}});
    FAIL() << "an unknown variable was pulled";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("parameter server ps:0 at " + server.address()));
    EXPECT_THAT(e.what(), HasSubstr("holds no variable 9"));
  }
  VariableSpec other = kBias;
  other.shape = {5};
  try {
    client.create({other}, "");
    FAIL() << "a second definition was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("id 1 is already variable 1 (dense/bias, float32 (4,)), not "
                                    "variable 1 (dense/bias, float32 (5,))"));
  }
  EXPECT_THROW(client.push(1, PushKind::kValue, {kBias}, {random_tensor({5}, 1)}), InvalidArgument);
  try {
    client.push(1, PushKind::kGradient, {kBias}, {random_tensor({4}, 1)});
    FAIL() << "a gradient without an optimizer was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("a gradient for variable 1 (dense/bias, float32 (4,)) without an "
                          "optimizer to apply it"));
  }
  // A closure whose push did not arrive whole cannot commit; its error names the variable.
  pb::PushRequest half;
  half.set_closure_id(3);
  half.set_kind(pb::VALUE);
  auto* chunk = half.add_chunks();
  chunk->set_id(kKernel.id);
  chunk->set_data(std::string(24, '\0'));
  ASSERT_TRUE(raw_call(server.address(), "Push", half.SerializeAsString(), kToken).ok());
  try {
    client.commit(3);
    FAIL() << "an incomplete closure committed";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("closure 3 cannot commit: variable 0 (dense/kernel, "
                                    "float32 (3, 4)) got 24 of its 48 bytes"));
  }
  chunk->set_offset(8);  // overlaps the first piece without being it
  grpc::Status s = raw_call(server.address(), "Push", half.SerializeAsString(), kToken);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("overlap a piece already pushed"));
  chunk->set_offset(40);  // past the end
  s = raw_call(server.address(), "Push", half.SerializeAsString(), kToken);
  EXPECT_THAT(s.error_message(), HasSubstr("bytes [40, 64) are outside variable 0"));
  EXPECT_EQ(values(server.value(kKernel.id)), std::vector<float>(12, 0.0f));
  // The optimizer may come after the variables (a model is built before it is compiled): they
  // get its slots then.
  EXPECT_TRUE(server.slots(kKernel.id).empty());
  client.create({}, adam_config(0.1));
  EXPECT_EQ(server.slots(kKernel.id).size(), 2u);
}

// A ps task writes the slices it holds as its part of a checkpoint that another process (the
// chief) writes the rest of and commits: its values and its slots, in global coordinates.
TEST(ParameterServer, SaveWritesItsSlicesAsAPartOfACheckpoint) {
  const std::string dir = ::testing::TempDir() + "/ps_save_test";
  std::filesystem::remove_all(dir);
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  ParameterServerClient client("ps:0", server.address(), options());
  client.create({kKernel, kBias}, adam_config(0.1));
  const Tensor kernel = random_tensor({3, 4}, 1);
  client.push(1, PushKind::kValue, {kKernel}, {kernel});
  ASSERT_TRUE(client.commit(1));
  client.push(2, PushKind::kGradient, {kKernel}, {random_tensor({3, 4}, 2)},
              {.optimizer = adam_config(0.1), .learning_rate = 0.1, .iterations = 0});
  ASSERT_TRUE(client.commit(2));
  // The kernel is rows 1-3 of a (4, 4) tensor whose row 0 the chief writes; slot 0 is Adam's m.
  checkpoint::HeldSlice rows{
      .holder = nullptr, .id = kKernel.id, .offsets = {1, 0}, .path = "w", .global_shape = {4, 4}};
  checkpoint::HeldSlice m{.holder = nullptr,
                          .id = kKernel.id,
                          .which = 1,
                          .offsets = {0, 0},
                          .path = "m",
                          .global_shape = {3, 4}};
  client.save(dir, "save-1", 1, 2, {rows, m});
  const Tensor row0 = random_tensor({1, 4}, 3);
  checkpoint::write_checkpoint_part(dir, "save-1", 0, 2, {{"w", row0, {4, 4}, {0, 0}}}, {});
  checkpoint::commit_checkpoint(dir, "save-1", 2);
  checkpoint::LoadedCheckpoint loaded = checkpoint::read_checkpoint(dir);
  std::vector<float> w = values(row0);
  for (float x : values(server.value(kKernel.id))) w.push_back(x);
  EXPECT_EQ(values(loaded.tensors.at("w")), w);
  EXPECT_EQ(values(loaded.tensors.at("m")), values(server.slots(kKernel.id)[0]));
  EXPECT_NE(values(server.value(kKernel.id)), values(kernel)) << "the gradient was not applied";

  // A variable never written, and a directory the ps task cannot write into, are refused.
  checkpoint::HeldSlice bias{
      .holder = nullptr, .id = kBias.id, .offsets = {0}, .path = "b", .global_shape = {4}};
  try {
    client.save(dir + "-2", "save-2", 1, 2, {bias});
    FAIL() << "a variable without a value was saved";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot save variable 1 (dense/bias, float32 (4,)) on ps:0: "
                                    "it has no value yet"));
  }
  try {
    client.save(dir + "/no/such/parent/ckpt", "save-3", 1, 2, {rows});
    FAIL() << "a part was written where nothing can be";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0 cannot write its part of " + dir + "/no/such/parent"));
  }
  std::filesystem::remove_all(dir);
}

// A ps task restores its variables and slots from a checkpoint itself, each the region of a
// stored tensor its variable covers; damage and another dtype are refused naming them, nothing
// assigned.
TEST(ParameterServer, RestoreReadsTheRegionsOfItsVariablesFromACheckpoint) {
  const std::string dir = ::testing::TempDir() + "/ps_restore_test";
  std::filesystem::remove_all(dir);
  const Tensor w = random_tensor({4, 4}, 1), m = random_tensor({3, 4}, 2);
  checkpoint::write_checkpoint(
      dir,
      {{"w", w},
       {"m", m},
       {"i", Tensor::from_vector<int64_t>(std::vector<int64_t>(12, 7), {3, 4})}},
      {});
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  ParameterServerClient client("ps:0", server.address(), options());
  client.create({kKernel}, adam_config(0.1));
  checkpoint::HeldSlice rows{
      .holder = nullptr, .id = kKernel.id, .offsets = {1, 0}, .path = "w", .global_shape = {4, 4}};
  checkpoint::HeldSlice slot{.holder = nullptr,
                             .id = kKernel.id,
                             .which = 1,
                             .offsets = {0, 0},
                             .path = "m",
                             .global_shape = {3, 4}};
  client.restore(dir, {rows, slot});
  std::vector<float> expected = values(w);
  expected.erase(expected.begin(), expected.begin() + 4);
  EXPECT_EQ(values(client.pull({kKernel})[0]), expected);
  EXPECT_EQ(values(server.slots(kKernel.id)[0]), values(m));

  checkpoint::HeldSlice ints = rows;
  ints.path = "i";
  ints.offsets = {0, 0};
  try {
    client.restore(dir, {ints});
    FAIL() << "an int64 tensor was restored into a float32 variable";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0 cannot restore variable 0 (dense/kernel, float32 (3, "
                                    "4)) from \"i\" of " +
                                    dir + ", which holds int64"));
  }
  const checkpoint::CheckpointIndex index = checkpoint::read_index(dir);
  for (const auto& t : index.tensors) {
    if (t.path != "w") continue;
    std::fstream f(dir + "/" + t.shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(t.offset + 20));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(t.offset + 20));
    f.put(static_cast<char>(c ^ 0x01));
  }
  try {
    client.restore(dir, {rows});
    FAIL() << "a damaged checkpoint was restored";
  } catch (const DataLoss& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0 cannot restore from " + dir));
    EXPECT_THAT(e.what(), HasSubstr("CRC32C mismatch"));
  }
  EXPECT_EQ(values(client.pull({kKernel})[0]), expected) << "a refused restore assigned";
  std::filesystem::remove_all(dir);
}

TEST(ParameterServer, TheTokenIsCheckedBeforeThePayloadIsParsed) {
  ParameterServer server("127.0.0.1:0", "ps:0", options());
  const std::string garbage = "\xff\xff\xff\xff not a protobuf";
  for (const char* method : {"Create", "Pull", "Push", "Commit", "Abort", "Save", "Restore"}) {
    SCOPED_TRACE(method);
    grpc::Status none = raw_call(server.address(), method, garbage, nullptr);
    EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(none.error_message(), "the call carries no cluster token");
    grpc::Status wrong = raw_call(server.address(), method, garbage, "0123456789abcdeX");
    EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(wrong.error_message(), "the call's cluster token is wrong");
    grpc::Status parsed = raw_call(server.address(), method, garbage, kToken);
    EXPECT_EQ(parsed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(parsed.error_message(), "malformed request");
  }
  ParameterServerClient intruder("ps:0", server.address(), options("wrong token"));
  try {
    intruder.create({kBias}, "");
    FAIL() << "a wrong token was accepted";
  } catch (const FailedPrecondition& e) {
    EXPECT_THAT(e.what(), HasSubstr("the call's cluster token is wrong"));
  }
  EXPECT_TRUE(server.variables().empty());
  EXPECT_THROW(ParameterServer("127.0.0.1:0", "ps:0", options("")), InvalidArgument);
  EXPECT_THROW(ParameterServerClient("ps:0", server.address(), options("")), InvalidArgument);
}

TEST(ParameterServer, ItListensOnlyOnItsOwnAddress) {
  ParameterServer server("127.0.0.2:0", "ps:0", options());
  EXPECT_EQ(server.address(), "127.0.0.2:" + std::to_string(server.port()));
  ServiceOptions quick = options();
  quick.call_timeout = std::chrono::milliseconds(500);
  ParameterServerClient elsewhere("ps:0", "127.0.0.1:" + std::to_string(server.port()), quick);
  EXPECT_THROW(elsewhere.create({kBias}, ""), Error);
  ParameterServerClient right("ps:0", server.address(), quick);
  EXPECT_NO_THROW(right.create({kBias}, ""));
  EXPECT_THROW(ParameterServer("192.0.2.1:0", "ps:0", options()), Unavailable);
}

// Updates staged before the server restarted are gone with it: their commit, which names the
// incarnation they were staged on, is refused, while a read of what the new server does not hold
// is refused as unknown. A commit of updates staged on the new incarnation is applied.
TEST(ParameterServer, ACommitOfUpdatesStagedBeforeARestartIsRefused) {
  auto server = std::make_unique<ParameterServer>("127.0.0.1:0", "ps:0", options());
  const std::string address = server->address();
  ParameterServerClient client("ps:0", address, options());
  client.create({kBias}, "");
  client.push(7, PushKind::kValue, {kBias}, {Tensor::from_vector<float>({1, 2, 3, 4})});
  const uint64_t first = client.incarnation();
  EXPECT_EQ(first, server->incarnation());
  server.reset();
  server = std::make_unique<ParameterServer>(address, "ps:0", options());
  try {
    client.commit(7, {}, first);
    FAIL() << "a commit of updates the restarted server never saw was taken";
  } catch (const Unavailable& e) {
    EXPECT_THAT(e.what(), HasSubstr("ps:0 restarted (a new incarnation) after its updates were "
                                    "staged, and holds none of them"));
  }
  EXPECT_FALSE(server->applied(7));
  EXPECT_FALSE(client.readable({kBias}));
  EXPECT_THROW(client.pull({kBias}), FailedPrecondition);
  client.create({kBias}, "");
  EXPECT_EQ(client.incarnation(), server->incarnation());
  EXPECT_NE(client.incarnation(), first);
  client.push(8, PushKind::kValue, {kBias}, {Tensor::from_vector<float>({5, 6, 7, 8})});
  EXPECT_TRUE(client.commit(8, {}, client.incarnation()));
  EXPECT_EQ(client.pull({kBias})[0].to_vector<float>(), (std::vector<float>{5, 6, 7, 8}));
}

using ParameterServerTls = weft::testing::TlsFilesTest;

// With --tls-ca the server requires a client certificate the CA signed: a client without one,
// or without TLS, is refused before any call reaches the server.
TEST_F(ParameterServerTls, MutualTlsAcceptsSignedClientsOnly) {
  ServiceOptions served = options();
  served.tls = {file("server.pem"), file("server.key"), file("ca.pem")};
  ParameterServer server("127.0.0.1:0", "ps:0", served);
  ServiceOptions signed_client = options();
  signed_client.tls = {file("client.pem"), file("client.key"), file("ca.pem")};
  ParameterServerClient good("ps:0", server.address(), signed_client);
  good.create({kBias}, "");
  good.push(1, PushKind::kValue, {kBias}, {full({4}, 2.0f)});
  EXPECT_TRUE(good.commit(1));
  EXPECT_EQ(values(good.pull({kBias})[0]), std::vector<float>(4, 2.0f));

  ServiceOptions no_cert = options();
  no_cert.tls.ca_file = file("ca.pem");
  no_cert.call_timeout = std::chrono::milliseconds(1500);
  ParameterServerClient anonymous("ps:0", server.address(), no_cert);
  EXPECT_THROW(anonymous.create({kKernel}, ""), Error);
  ServiceOptions plain = options();
  plain.call_timeout = std::chrono::milliseconds(1500);
  ParameterServerClient cleartext("ps:0", server.address(), plain);
  EXPECT_THROW(cleartext.create({kKernel}, ""), Error);
  EXPECT_EQ(server.variables().size(), 1u);  // only the signed client's
}

}  // namespace
}  // namespace weft::distribute::parameter_server
