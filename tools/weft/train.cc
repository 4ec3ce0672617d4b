// `weft train`: the main job (SPEC §3). Builds the MLP of the DTensor tutorial, a small
// batch-normalised CNN or a sequence model (weft/nn/models.h), trains it with Model::fit on
// Fashion-MNIST (or CIFAR-10, or IDX files in a directory), evaluates it, and writes
// --metrics-json.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "tools/weft/commands.h"
#include "tools/weft/flags.h"
#include "weft/core/config.h"
#include "weft/data/datasets.h"
#include "weft/distribute/cluster/cluster_spec.h"
#include "weft/distribute/cluster/tf_config.h"
#include "weft/distribute/coordination/options.h"
#include "weft/distribute/mirrored_strategy.h"
#include "weft/distribute/multi_worker_mirrored_strategy.h"
#include "weft/distribute/parameter_server/parameter_server_strategy.h"
#include "weft/distribute/parameter_server/partitioners.h"
#include "weft/nn/model.h"
#include "weft/nn/models.h"
#include "weft/ops/creation.h"
#include "weft/ops/random.h"
#include "weft/optim/adam.h"
#include "weft/optim/rmsprop.h"
#include "weft/optim/schedules.h"
#include "weft/optim/sgd.h"
#include "weft/precision/policy.h"
#include "weft/profiler/server.h"
#include "weft/train/callbacks.h"
#include "weft/train/sidecar_evaluator.h"

namespace weft::cli {
namespace {

struct TrainFlags {
  std::string model = "mlp", dataset = "fashion_mnist", optimizer = "adam";
  int epochs = 3;
  int64_t batch_size = 128;
  double lr = 0;  // 0: the model's (model_lr)
  std::string lr_schedule = "cosine";
  int64_t seed = 0;
  std::string strategy = "default", mixed_precision = "off";
  std::string ps_mode = "async";
  std::string variable_partitioner;  // empty: each variable whole on one ps task
  int64_t max_staleness = -1;        // -1: the strategy's default
  int backup_workers = 0;
  int64_t steps_per_execution = 1;
  int replicas = 1;
  bool deterministic = false, quiet = false;
  int micro_batches = 0;  // 0: config::kDefaultMicroBatches
  int threads = 0;
  double collective_timeout = 0;   // seconds; 0: the strategy's default
  double startup_timeout = 0;      // seconds; 0: the strategy's default (10 minutes)
  double heartbeat_timeout = 0;    // seconds; 0: the coordination service's default (10 s)
  std::string data_ports;          // LO-HI; empty: OS-picked ports
  std::string overlap_all_reduce;  // on, off; empty: the strategy's default
  int64_t bytes_per_pack = 0;      // 0: the strategy's default
  std::string tls_cert, tls_key, tls_ca;
  std::string backup_dir, save_freq = "epoch", checkpoint_dir, logdir, metrics_json, save_model;
  std::string profile_steps;  // A:B; empty: none
  int profiler_port = -1;     // >= 0: serve the profiler (0: a port the OS picks)
};

nn::Model build_model(const std::string& name) {
  if (name == "cnn") return nn::models::cnn();
  if (name == "lstm") return nn::models::lstm();
  if (name == "transformer") return nn::models::transformer();
  return nn::models::mlp();
}

// The default --lr of each model: what it trains well with in three epochs under the cosine
// schedule. The sequence models want more than the MLP and CNN's 1e-3: at 1e-3 the LSTM reached
// 0.850 test accuracy in three epochs, at 5e-3 0.879-0.881 (seeds 0-2); the transformer 0.859 at
// 1e-3, 0.870 at 3e-3 (figures in docs/training.md).
double model_lr(const std::string& model) {
  if (model == "lstm") return 5e-3;
  if (model == "transformer") return 3e-3;
  return 1e-3;
}

// Counts the examples fit() trains on, for train_examples_per_sec, how many steps had each
// staleness (parameter servers: updates applied between a step's start and its own), and the
// steps' parts that backup workers trained.
class ExampleCounter : public train::CallbackImpl {
 public:
  void on_train_batch_end(int64_t, const train::Logs&) override {
    examples += batch_examples_;
    staleness[batch_staleness_] += batch_steps_;
    backup_wins += batch_backup_wins_;
  }
  int64_t examples = 0;
  std::map<int64_t, int64_t> staleness;
  int64_t backup_wins = 0;
};

// --metrics-json's ps_staleness: steps by staleness, their mean and the largest.
nlohmann::json staleness_summary(const std::map<int64_t, int64_t>& steps) {
  nlohmann::json histogram = nlohmann::json::object();
  int64_t n = 0, sum = 0;
  for (const auto& [stale, count] : steps) {
    histogram[std::to_string(stale)] = count;
    n += count;
    sum += stale * count;
  }
  return {{"steps_by_staleness", histogram},
          {"mean", n > 0 ? static_cast<double>(sum) / static_cast<double>(n) : 0.0},
          {"max", steps.empty() ? 0 : steps.rbegin()->first}};
}

// --lr-schedule cosine takes the rate from --lr down to 0 over the whole run (Keras's CosineDecay).
// With a constant rate the third epoch's test accuracy varies by over a point from seed to seed
// (MLP: 0.858-0.876 over seeds 0-4), because the last steps still move the weights as much as the
// first; decayed, it is 0.882-0.883 for the MLP and 0.921-0.925 for the CNN (seeds 0-2), and
// bf16 and f16 land within 0.2 points of float32 at every seed.
optim::Optimizer build_optimizer(const TrainFlags& f, int64_t total_steps) {
  optim::schedules::LearningRateSchedule lr = f.lr;
  if (f.lr_schedule == "cosine") lr = optim::schedules::CosineDecay(f.lr, total_steps);
  if (f.optimizer == "sgd") return optim::SGD({.learning_rate = lr, .momentum = 0.9});
  if (f.optimizer == "rmsprop") return optim::RMSprop({.learning_rate = lr});
  if (f.optimizer == "adamw") return optim::AdamW({.learning_rate = lr});
  return optim::Adam({.learning_rate = lr});
}

// --profiler-port: this task's profiler server (weft/profiler/server.h) while it trains, on its
// own host (TF_CONFIG's address; 127.0.0.1 alone), for `weft profile`; the cluster token from
// WEFT_CLUSTER_TOKEN, as the other tasks take it.
class ProfilerServer {
 public:
  ProfilerServer(const TrainFlags& f, const distribute::Strategy& strategy) {
    if (f.profiler_port < 0) return;
    distribute::cluster_resolver::TFConfigClusterResolver resolver;
    std::string host = "127.0.0.1";
    if (!resolver.cluster_spec().empty()) {
      host = distribute::listen_host(
          resolver.cluster_spec().task_address(resolver.task_type(), resolver.task_id()));
    }
    const char* token = std::getenv(distribute::coordination::kTokenEnvironmentVariable);
    const int port = profiler::server::start(
        f.profiler_port, {.task = strategy.extended().task(),
                          .host = host,
                          .token = token ? token : "",
                          .tls = {f.tls_cert, f.tls_key, f.tls_ca},
                          .publish_to = strategy.extended().coordination_client()});
    if (f.profiler_port == 0) {
      std::fprintf(stderr, "weft: profiler server at %s:%d\n", host.c_str(), port);
    }
    serving_ = true;
  }
  ~ProfilerServer() {
    if (serving_) profiler::server::stop();
  }
  ProfilerServer(const ProfilerServer&) = delete;
  ProfilerServer& operator=(const ProfilerServer&) = delete;

 private:
  bool serving_ = false;
};

// The options of a cluster's tasks (--startup-timeout, --heartbeat-timeout, --tls-*).
template <typename Options>
void set_train_cluster_options(const TrainFlags& f, Options& options) {
  set_cluster_options(f.startup_timeout, f.tls_cert, f.tls_key, f.tls_ca, options);
  if (f.heartbeat_timeout > 0) {
    options.coordination.heartbeat_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(f.heartbeat_timeout * 1000));
  }
}

// The strategy the model is made and trained under: --strategy mirrored puts --replicas replicas
// on as many logical CPU devices; multi_worker joins the cluster TF_CONFIG describes, with
// --replicas replicas in this process (weft launch --replicas-per-worker sets the default).
distribute::Strategy make_strategy(const TrainFlags& f) {
  WEFT_CHECK(f.replicas == 1 || (f.strategy != "default" && f.strategy != "parameter_server"),
             InvalidArgument)
      << "--replicas " << f.replicas << " needs --strategy mirrored or multi_worker";
  WEFT_CHECK(f.ps_mode == "async" || f.strategy == "parameter_server", InvalidArgument)
      << "--ps-mode " << f.ps_mode << " needs --strategy parameter_server";
  WEFT_CHECK(f.variable_partitioner.empty() || f.strategy == "parameter_server", InvalidArgument)
      << "--variable-partitioner needs --strategy parameter_server";
  WEFT_CHECK(f.max_staleness < 0 || (f.strategy == "parameter_server" && f.ps_mode == "async"),
             InvalidArgument)
      << "--max-staleness needs --strategy parameter_server with --ps-mode async";
  WEFT_CHECK(f.backup_workers == 0 || (f.strategy == "parameter_server" && f.ps_mode == "sync"),
             InvalidArgument)
      << "--backup-workers needs --strategy parameter_server with --ps-mode sync";
  WEFT_CHECK(f.profile_steps.empty() || !f.logdir.empty(), InvalidArgument)
      << "--profile-steps " << f.profile_steps << " needs --logdir: the traces go under it";
  WEFT_CHECK(f.profile_steps.empty() || f.strategy != "parameter_server", FailedPrecondition)
      << "--profile-steps is not supported with --strategy parameter_server: its steps run as "
         "closures on the workers, which fit's profiled steps do not reach";
  if (f.strategy == "default") return distribute::Strategy();
  if (f.strategy == "parameter_server") {
    // What is not built for parameter-server training is refused before the cluster meets.
    // Each worker checks its own gradients for overflow (its loss scale is the ps tasks'): a
    // synchronous step, whose parts are summed on the ps tasks, could not skip as one.
    WEFT_CHECK(f.mixed_precision != "f16" || f.ps_mode == "async", FailedPrecondition)
        << "--mixed-precision f16 is not supported with --ps-mode sync: each worker's part of a "
           "step would check its own gradients for overflow, while the step must be skipped as "
           "one (use --ps-mode async, or bf16, which needs no loss scale)";
    distribute::ParameterServerOptions options;
    options.synchronous = f.ps_mode == "sync";
    if (f.max_staleness >= 0) options.max_staleness = f.max_staleness;
    options.backup_workers = f.backup_workers;
    if (!f.variable_partitioner.empty()) {
      options.variable_partitioner = distribute::parse_partitioner(f.variable_partitioner);
    }
    set_train_cluster_options(f, options);
    return distribute::ParameterServerStrategy(
        distribute::cluster_resolver::TFConfigClusterResolver{}, options);
  }
  if (f.strategy == "multi_worker") {
    distribute::MultiWorkerOptions options;
    options.replicas_per_worker = f.replicas;
    options.communication.timeout_seconds = f.collective_timeout;
    set_train_cluster_options(f, options);
    if (!f.data_ports.empty()) {
      const auto [first, last] = cli::range_of(f.data_ports, '-');
      options.first_data_port = static_cast<int>(first);
      options.last_data_port = static_cast<int>(last);
    }
    options.communication.bytes_per_pack = static_cast<std::size_t>(f.bytes_per_pack);
    if (!f.overlap_all_reduce.empty()) options.overlap_all_reduce = f.overlap_all_reduce == "on";
    return distribute::MultiWorkerMirroredStrategy(options);
  }
  config::set_logical_cpu_devices(f.replicas);
  return distribute::MirroredStrategy();
}

// Returns the exit status: 0, or train::kPreemptedExitStatus when SIGTERM stopped training
// after a backup.
int train_under(const TrainFlags& f, const distribute::Strategy& strategy,
                std::chrono::steady_clock::time_point start);

// SIGTERM is received by one thread that does nothing else. Delivered to a thread in the middle
// of a training step, it corrupted the heap on an AVX2 CPU (about 1 preempted run in 10 aborted in
// free() inside oneDNN's matmul). Blocked here, before training starts a thread, it stays blocked
// in every thread started later; the handler BackupAndRestore installs (or the default action,
// outside fit) runs on this one.
void receive_sigterm_on_a_thread_of_its_own() {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, nullptr);
  std::thread([term] {
    pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
    while (true) pause();
  }).detach();
}

// Set by SIGTERM on a parameter-server worker (WorkerLeavesOnSigterm).
std::atomic<bool> worker_terminated{false};

// While it lives, SIGTERM makes this parameter-server worker leave the cluster
// (ParameterServerStrategy::leave, on a thread of its own: the handler only sets a flag).
class WorkerLeavesOnSigterm {
 public:
  explicit WorkerLeavesOnSigterm(const distribute::ParameterServerStrategy& strategy) {
    worker_terminated = false;
    signal(SIGTERM, [](int) { worker_terminated = true; });
    watcher_ = std::thread([this, strategy] {
      while (!done_) {
        if (worker_terminated) {
          left_ = strategy.leave("SIGTERM");
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~WorkerLeavesOnSigterm() { stop(); }
  // Stops watching; whether the worker left.
  bool stop() {
    done_ = true;
    if (watcher_.joinable()) watcher_.join();
    signal(SIGTERM, SIG_IGN);
    return left_;
  }

 private:
  std::atomic<bool> done_{false};
  std::atomic<bool> left_{false};
  std::thread watcher_;
};

// The evaluator task: TensorFlow's side-car evaluation of each epoch's checkpoint
// (train::SidecarEvaluator), on the test set, until the last epoch's; TensorBoard's
// `--logdir`/evaluation with --logdir.
int evaluate_beside_the_cluster(const TrainFlags& f) {
  WEFT_CHECK(!f.checkpoint_dir.empty(), InvalidArgument)
      << "an evaluator task evaluates the checkpoints the chief writes each epoch: give "
         "--checkpoint-dir";
  data::Dataset test = load_dataset(f.dataset).test.batch(512);
  nn::Model model = build_model(f.model);
  model(zeros({1, 28, 28, 1}));
  model.compile(build_optimizer(f, 1),
                nn::losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
  train::SidecarEvaluator(model, test,
                          {.checkpoint_dir = f.checkpoint_dir,
                           .final_step = f.epochs,
                           .log_dir = f.logdir,
                           .verbose = f.quiet ? 0 : 1})
      .start();
  return 0;
}

int run(TrainFlags f) {
  receive_sigterm_on_a_thread_of_its_own();
  if (f.lr == 0) f.lr = model_lr(f.model);
  WEFT_CHECK(f.epochs >= 1 && f.batch_size >= 1 && f.lr > 0, InvalidArgument)
      << "--epochs, --batch-size and --lr must be positive (got " << f.epochs << ", "
      << f.batch_size << ", " << f.lr << ")";
  apply_threads_flag(f.threads);
  if (f.deterministic) config::enable_op_determinism();
  if (f.micro_batches > 0) config::set_micro_batches(f.micro_batches);
  random::set_seed(f.seed);
  // Layers take the global policy when they are built; under mixed_float16, compile adds dynamic
  // loss scaling to the optimizer.
  if (f.mixed_precision != "off") {
    mixed_precision::set_global_policy(f.mixed_precision == "bf16" ? "mixed_bfloat16"
                                                                   : "mixed_float16");
  }

  // An evaluator task (TF_CONFIG's "evaluator", weft launch --ps K --evaluator) trains nothing:
  // it evaluates each checkpoint the chief writes, beside the cluster.
  if (distribute::cluster_resolver::TFConfigClusterResolver{}.task_type() == "evaluator") {
    return evaluate_beside_the_cluster(f);
  }
  auto start = std::chrono::steady_clock::now();
  // The cluster first: a malformed TF_CONFIG fails before any data is read.
  distribute::Strategy strategy = make_strategy(f);
  ProfilerServer profiler_server(f, strategy);
  try {
    return train_under(f, strategy, start);
  } catch (const std::exception& e) {
    // Every other worker's wait ends naming this task and the error (fit reports its own; this
    // covers what fails outside it, such as loading the data).
    strategy.extended().report_error(e.what());
    if (!strategy.extended().failed_peer().empty()) {
      // Another task failed first: say so in the exit status, which the launcher reads.
      std::fprintf(stderr, "weft: %s\n", e.what());
      throw CLI::RuntimeError(train::kPeerFailedExitStatus);
    }
    throw;
  }
}

int train_under(const TrainFlags& f, const distribute::Strategy& strategy,
                std::chrono::steady_clock::time_point start) {
  data::datasets::TrainTest data = load_dataset(f.dataset);
  // A shuffle buffer as large as the data: a full reshuffle every epoch, as Keras's fit does.
  data::Dataset train =
      data.train
          .shuffle(std::max<int64_t>(data.train.cardinality(), 1), static_cast<uint64_t>(f.seed))
          .batch(f.batch_size)
          .prefetch(2);
  data::Dataset test = data.test.batch(512);
  int64_t steps_per_epoch = train.cardinality();  // the batches, the last one partial
  WEFT_ASSERT(steps_per_epoch >= 0) << "a training set of unknown size: " << steps_per_epoch;
  int64_t total_steps = std::max<int64_t>(1, f.epochs * steps_per_epoch);

  // In a cluster only the chief shows progress and writes files (fit leaves the other workers'
  // progress, checkpoint and TensorBoard callbacks out); the others train quietly.
  int workers = strategy.num_replicas_in_sync() / strategy.extended().num_local_replicas();
  bool chief = strategy.extended().first_local_replica() == 0;
  std::optional<distribute::ParameterServerStrategy> ps;
  if (distribute::ParameterServerStrategy::is(strategy)) {
    ps.emplace(strategy);
    workers = ps->num_workers();
    chief = ps->is_chief();
  }
  bool quiet = f.quiet || !chief;
  nn::Model model;
  {
    auto scope = strategy.scope();
    model = build_model(f.model);
    // The models are made for Fashion-MNIST's 28x28 grey images (the MLP is 784-700-500-10): a
    // dataset of another shape is refused by the first layer with both shapes named.
    model(zeros({1, 28, 28, 1}));
    model.compile(build_optimizer(f, total_steps),
                  nn::losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"},
                  {.steps_per_execution = f.steps_per_execution});
  }
  auto counter = std::make_shared<ExampleCounter>();
  std::vector<train::Callback> callbacks{train::Callback(counter)};
  std::optional<train::BackupAndRestore> backup;
  if (!f.backup_dir.empty()) {
    std::optional<int64_t> save_freq;
    if (f.save_freq != "epoch") save_freq = std::stoll(f.save_freq);
    backup.emplace(f.backup_dir, save_freq);
    callbacks.push_back(*backup);
  }
  if (!f.checkpoint_dir.empty())
    callbacks.push_back(train::ModelCheckpoint(f.checkpoint_dir, {.monitor = "val_loss"}));
  if (!f.logdir.empty()) {
    callbacks.push_back(train::TensorBoard(
        f.logdir, {.update_freq = 100,
                   .profile_batch = f.profile_steps.empty() ? std::pair<int64_t, int64_t>{0, 0}
                                                            : range_of(f.profile_steps, ':')}));
  }

  // A worker of a parameter-server job sent SIGTERM (preempted) leaves after its closure, which
  // the chief then runs elsewhere, and exits with kPreemptedExitStatus; unless the chief is
  // stopping too (every task told to go at once), which needs it until its backup is written and
  // then ends it (ParameterServerStrategy::leave). A ps task ignores SIGTERM: the chief needs it
  // for its backup, and ends it.
  std::optional<WorkerLeavesOnSigterm> leaves;
  if (ps && !chief) {
    if (ps->task().starts_with("worker:")) {
      leaves.emplace(*ps);
    } else {
      signal(SIGTERM, SIG_IGN);
    }
  }
  auto fit_start = std::chrono::steady_clock::now();
  train::History history = model.fit(train, {.epochs = f.epochs,
                                             .validation_data = test,
                                             .callbacks = callbacks,
                                             .verbose = f.quiet ? 0 : 1});
  if (backup && backup->preempted()) return train::kPreemptedExitStatus;
  if (leaves && leaves->stop()) return train::kPreemptedExitStatus;
  if (ps && !chief) return 0;  // a worker or ps task served the chief's fit, which is done
  double fit_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fit_start).count();
  std::map<std::string, double> result = model.evaluate(test);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!quiet) {
    std::printf("test loss %.4f, test accuracy %.4f, weights %s\n", result["loss"],
                result["accuracy"], model.weights_fingerprint().c_str());
  }
  if (!f.save_model.empty()) {
    model.save(f.save_model);  // every worker calls it; the chief writes
    if (!quiet) std::printf("saved the model to %s\n", f.save_model.c_str());
  }
  if (!f.metrics_json.empty() && chief) {
    int64_t steps = model.optimizer().iterations().value().item<int64_t>();
    nlohmann::json j = {
        {"model", f.model},
        {"dataset", f.dataset},
        {"strategy", f.strategy},
        {"workers", workers},
        {"transport", strategy.extended().transport()},
        // A parameter-server job's own figures; null under the other strategies.
        {"ps", ps ? nlohmann::json{{"tasks", ps->num_ps()},
                                   {"mode", f.ps_mode},
                                   {"max_staleness", ps->max_staleness()},
                                   {"staleness", staleness_summary(counter->staleness)},
                                   {"backup_workers", ps->backup_workers()},
                                   {"parts_won_by_backups", counter->backup_wins}}
                  : nlohmann::json()},
        {"replicas", strategy.num_replicas_in_sync()},
        {"threads", config::num_threads()},
        {"epochs", f.epochs},
        {"steps", steps},
        {"global_batch_size", f.batch_size},
        {"mixed_precision", f.mixed_precision},
        {"deterministic", f.deterministic},
        {"final_train_loss", history.history.count("loss") ? history.history["loss"].back() : NAN},
        {"test_loss", result["loss"]},
        {"test_accuracy", result["accuracy"]},
        {"train_examples_per_sec", counter->examples / fit_seconds},
        // Over the whole job: with a backup, the runs it resumed from count too.
        {"examples_trained", backup ? backup->examples_trained() : counter->examples},
        {"wall_seconds", wall},
        {"weights_fingerprint", model.weights_fingerprint()},
    };
    std::ofstream out(f.metrics_json);
    WEFT_CHECK(out.good(), FailedPrecondition) << "--metrics-json: cannot write " << f.metrics_json;
    out << j.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

data::datasets::TrainTest load_dataset(const std::string& name) {
  if (name == "fashion_mnist") return data::datasets::fashion_mnist();
  if (name == "cifar10") return data::datasets::cifar10();
  return data::datasets::fashion_mnist(name);  // a directory of Fashion-MNIST-style IDX files
}

void add_train(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  // weft launch --replicas-per-worker R sets the default of --replicas for its workers.
  if (const char* r = std::getenv("WEFT_REPLICAS_PER_WORKER")) flags->replicas = std::atoi(r);
  // ... and --profiler-port P, task i's --profiler-port.
  if (const char* p = std::getenv("WEFT_PROFILER_PORT")) flags->profiler_port = std::atoi(p);
  auto* cmd = app.add_subcommand("train", "Train a model (the main job)");
  cmd->add_option("--model", flags->model,
                  "mlp (784-700-500-10), cnn, lstm (the rows as 28 steps into LSTM(128)) or "
                  "transformer (7x7 patches as tokens, two encoder blocks)")
      ->check(one_of({"mlp", "cnn", "lstm", "transformer"}));
  cmd->add_option("--dataset", flags->dataset,
                  "fashion_mnist, cifar10, or a directory of IDX files");
  cmd->add_option("--epochs", flags->epochs, "passes over the training data")->check(at_least(1));
  cmd->add_option("--batch-size", flags->batch_size, "global batch size")->check(at_least(1));
  cmd->add_option("--optimizer", flags->optimizer, "the optimizer (Keras's defaults but --lr)")
      ->check(one_of({"adam", "sgd", "rmsprop", "adamw"}));
  cmd->add_option("--lr", flags->lr,
                  "learning rate (default: 1e-3; lstm 5e-3, transformer 3e-3)")
      ->check(positive_number())
      ->default_str("");  // 0 stands for the model's
  cmd->add_option("--lr-schedule", flags->lr_schedule,
                  "cosine (from --lr down to 0 over the run) or constant")
      ->check(one_of({"cosine", "constant"}));
  cmd->add_option("--seed", flags->seed, "the seed of the initial weights, shuffling and dropout");
  cmd->add_option("--strategy", flags->strategy,
                  "default (one replica), mirrored (replicas on threads), multi_worker (the "
                  "cluster TF_CONFIG describes; see weft launch) or parameter_server (its chief, "
                  "workers and ps tasks; weft launch --ps)")
      ->check(one_of({"default", "mirrored", "multi_worker", "parameter_server"}));
  cmd->add_option("--ps-mode", flags->ps_mode,
                  "with --strategy parameter_server: async (each step one worker's, applied as "
                  "it ends) or sync (each step's batch cut among the workers, their gradients "
                  "summed and applied once)")
      ->check(one_of({"async", "sync"}));
  cmd->add_option("--max-staleness", flags->max_staleness,
                  "with --ps-mode async: the most earlier steps a step may not see (at most this "
                  "many + 1 steps at once; 0 trains as one process; default 2 x workers - 1)")
      ->check(in_range(0, 1 << 20))
      ->default_str("");
  cmd->add_option("--backup-workers", flags->backup_workers,
                  "with --ps-mode sync: how many workers are backups (default 0): each step's "
                  "batch is cut into workers - B parts, a worker without one runs a part another "
                  "still runs, and each part's first run to return is the one applied, so a slow "
                  "worker delays no step")
      ->check(in_range(0, 1 << 16));
  cmd->add_option("--steps-per-execution", flags->steps_per_execution,
                  "steps between two progress updates (compile's steps_per_execution); with "
                  "--strategy parameter_server, steps per closure a worker runs, each reading "
                  "the ones before it")
      ->check(in_range(1, 1 << 20));
  cmd->add_option("--variable-partitioner", flags->variable_partitioner,
                  "with --strategy parameter_server: cut variables along axis 0 into shards on "
                  "the ps tasks: fixed:N, min_size:BYTES[:MAX_SHARDS] or "
                  "max_size:BYTES[:MAX_SHARDS]");
  cmd->add_option("--replicas", flags->replicas,
                  "local replicas (threads) for --strategy mirrored or multi_worker, each on its "
                  "share of the cores")
      ->check(in_range(1, 256));
  cmd->add_option("--startup-timeout", flags->startup_timeout,
                  "multi_worker: seconds a task waits at start for the chief and the other "
                  "tasks (default 600: pods may start minutes apart)")
      ->check(positive_number())
      ->default_str("");  // 0 stands for the strategy's default
  cmd->add_option("--heartbeat-timeout", flags->heartbeat_timeout,
                  "multi_worker, parameter_server: seconds without a heartbeat (sent every "
                  "second) after which the chief declares a task lost: a stopped process, a cut "
                  "cable (at least 2; default 10)")
      ->check(at_least(2, /*integer=*/false))
      ->default_str("");  // 0 stands for the service's default
  cmd->add_option("--data-ports", flags->data_ports,
                  "multi_worker: the ports (LO-HI) the collectives' connections listen on, for a "
                  "firewall (default: ports the OS picks)")
      ->check(port_range());
  cmd->add_option("--collective-timeout", flags->collective_timeout,
                  "multi_worker: seconds any wait of a collective may take before the silent "
                  "worker is named (default 30)")
      ->check(positive_number())
      ->default_str("");  // 0 stands for the strategy's default
  cmd->add_option("--overlap-all-reduce", flags->overlap_all_reduce,
                  "multi_worker: all-reduce gradient packs while the backward pass still runs "
                  "(on, the default) or all at once after it (off)")
      ->check(one_of({"on", "off"}));
  cmd->add_option("--bytes-per-pack", flags->bytes_per_pack,
                  "multi_worker: bytes of gradients per all-reduce (default 256 KiB)")
      ->check(at_least(1))
      ->default_str("");
  cmd->add_option("--tls-cert", flags->tls_cert,
                  "multi_worker: this task's certificate (PEM) for the coordination service");
  cmd->add_option("--tls-key", flags->tls_key, "multi_worker: the certificate's private key");
  cmd->add_option("--tls-ca", flags->tls_ca,
                  "multi_worker: the CA that signed every task's certificate (mutual TLS)");
  cmd->add_option("--mixed-precision", flags->mixed_precision,
                  "compute in bfloat16 or float16, keeping float32 variables")
      ->check(one_of({"off", "bf16", "f16"}));
  cmd->add_flag("--deterministic", flags->deterministic,
                "the same weights bit for bit on every run, and one replica's at every replica "
                "count that splits the micro-batches (others are refused)");
  cmd->add_option("--micro-batches", flags->micro_batches,
                  "--deterministic: micro-batches per global batch (default 8); 1, 2, 4 or 8 "
                  "replicas give one replica's bits with 8, N replicas with N")
      ->check(at_least(1))
      ->default_str("");
  cmd->add_option("--threads", flags->threads,
                  "threads for the kernels (default: every core; more than the cores are capped)")
      ->check(at_least(1))
      ->default_str("");
  cmd->add_option("--backup-dir", flags->backup_dir, "BackupAndRestore directory");
  cmd->add_option("--save-freq", flags->save_freq, "back up every epoch, or every N steps")
      ->check(epoch_or_steps());
  cmd->add_option("--checkpoint-dir", flags->checkpoint_dir, "save a checkpoint every epoch");
  cmd->add_option("--logdir", flags->logdir, "TensorBoard event files");
  cmd->add_option("--profile-steps", flags->profile_steps,
                  "profile steps A to B on every worker into --logdir/train/plugins/profile "
                  "(weft report reads them)")
      ->check(step_range());
  cmd->add_option("--profiler-port", flags->profiler_port,
                  "serve the profiler at this port of the task's host (0: one the OS picks) for "
                  "weft profile; needs WEFT_CLUSTER_TOKEN (weft launch --profiler-port sets both)")
      ->check(in_range(0, 65535))
      ->default_str("");
  cmd->add_option("--metrics-json", flags->metrics_json, "write a JSON summary when done");
  cmd->add_option("--save-model", flags->save_model,
                  "save the trained model (architecture, weights, compile settings) to this "
                  "directory, for weft evaluate, weft predict and nn::load_model");
  cmd->add_flag("--quiet", flags->quiet);
  cmd->callback([flags] {
    if (int code = run(*flags)) throw CLI::RuntimeError(code);
  });
}

}  // namespace weft::cli
