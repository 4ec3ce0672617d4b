#include "weft/train/callbacks.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "weft/core/trace_me.h"
#include "weft/nn/model.h"
#include "weft/ops/cast.h"
#include "weft/train/checkpoint.h"
#include "weft/train/tensorboard_events.h"

namespace weft::train {
namespace {

using Clock = std::chrono::steady_clock;

std::string format_logs(const Logs& logs) {
  std::string out;
  char buf[64];
  for (const auto& [k, v] : logs) {
    std::snprintf(buf, sizeof(buf), " - %s: %.4f", k.c_str(), v);
    out += buf;
  }
  return out;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%d:%02d:%02d", static_cast<int>(s / 3600),
                  static_cast<int>(std::fmod(s, 3600) / 60), static_cast<int>(std::fmod(s, 60)));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%d:%02d", static_cast<int>(s / 60),
                  static_cast<int>(std::fmod(s, 60)));
  } else {
    std::snprintf(buf, sizeof(buf), "%.0fs", s);
  }
  return buf;
}

class ProgbarImpl : public CallbackImpl {
 public:
  bool chief_only() const override { return true; }
  explicit ProgbarImpl(int verbose) : verbose_(verbose), tty_(isatty(STDOUT_FILENO) != 0) {}
  void on_epoch_begin(int epoch, const Logs&) override {
    if (verbose_ == 1 || tty_) std::printf("Epoch %d/%d\n", epoch + 1, epochs_);
    start_ = last_draw_ = Clock::now();
    examples_ = 0;
    steps_done_ = 0;
  }
  void on_train_batch_end(int64_t step, const Logs& logs) override {
    examples_ += batch_examples_;
    steps_done_ = step + 1;
    // A live bar only on a terminal, redrawn at most 10 times a second.
    if (verbose_ != 1 || !tty_) return;
    auto now = Clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(logs, false);
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    if (verbose_ == 1 && tty_) {
      draw(logs, true);
    } else {
      double secs = elapsed();
      std::printf("%lld/%lld - %s - %.0f examples/s%s\n", static_cast<long long>(steps_done_),
                  static_cast<long long>(steps_done_), format_seconds(secs).c_str(),
                  examples_ / std::max(secs, 1e-9), format_logs(logs).c_str());
    }
    std::fflush(stdout);
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void draw(const Logs& logs, bool done) {
    constexpr int kWidth = 30;
    int64_t total = steps_.value_or(0);
    double secs = elapsed();
    std::string bar;
    if (total > 0) {
      int filled = static_cast<int>(kWidth * std::min<int64_t>(steps_done_, total) / total);
      bar = "[" + std::string(std::max(0, filled - 1), '=') + (filled > 0 && !done ? ">" : "=") +
            std::string(kWidth - std::max(filled, 1), '.') + "]";
      if (done) bar = "[" + std::string(kWidth, '=') + "]";
    }
    std::string timing =
        done ? format_seconds(secs) + " " +
                   std::to_string(static_cast<int>(1000 * secs / steps_done_)) + "ms/step"
             : (total > 0 ? "ETA: " + format_seconds(secs / steps_done_ * (total - steps_done_))
                          : format_seconds(secs));
    std::printf("\r%lld/%s %s - %s - %.0f examples/s%s\033[K%s",
                static_cast<long long>(steps_done_),
                total > 0 ? std::to_string(total).c_str() : "?", bar.c_str(), timing.c_str(),
                examples_ / std::max(secs, 1e-9), format_logs(logs).c_str(), done ? "\n" : "");
    std::fflush(stdout);
  }
  int verbose_;
  bool tty_;
  Clock::time_point start_, last_draw_;
  int64_t examples_ = 0, steps_done_ = 0;
};

// Whether a monitored value improved, Keras's mode rules.
struct Monitor {
  std::string name;
  bool maximize;
  double min_delta;
  double best;
  Monitor(std::string monitor, const std::string& mode, double delta)
      : name(std::move(monitor)), min_delta(std::fabs(delta)) {
    WEFT_CHECK(mode == "auto" || mode == "min" || mode == "max", InvalidArgument)
        << "callback mode \"" << mode << "\" is not one of auto, min, max";
    maximize = mode == "max" || (mode == "auto" && (name.find("acc") != std::string::npos));
    reset();
  }
  // The monitored value in `logs`, or nullopt (with a warning) when absent.
  std::optional<double> read(const Logs& logs) const {
    auto it = logs.find(name);
    if (it == logs.end()) {
      std::fprintf(stderr, "weft: callback monitors \"%s\", which is not in the logs\n",
                   name.c_str());
      return std::nullopt;
    }
    return it->second;
  }
  // ReduceLROnPlateau's and ModelCheckpoint's test: better than best by more than min_delta.
  bool improves(double v) const { return maximize ? v > best + min_delta : v < best - min_delta; }
  // EarlyStopping's, as Keras 2.4 writes it: monitor_op(current - min_delta, best), the delta
  // signed by the mode (it can round differently from improves()).
  bool improves_early_stopping(double v) const {
    return maximize ? v - min_delta > best : v + min_delta < best;
  }
  void reset() { best = maximize ? -INFINITY : INFINITY; }
};

class EarlyStoppingImpl : public CallbackImpl {
 public:
  explicit EarlyStoppingImpl(EarlyStoppingOptions o)
      : options_(o), monitor_(o.monitor, o.mode, o.min_delta) {}
  void on_train_begin(const Logs&) override {
    wait_ = 0;
    monitor_.reset();
    if (options_.baseline) monitor_.best = *options_.baseline;
    best_.clear();
  }
  // Keras 2.4's rule: an epoch that improves on the best resets the wait; any other adds one,
  // and training stops once `patience` such epochs have passed in a row (so with patience 0 or 1,
  // after the first). The best weights are put back only when it stops, as Keras 2.4 does.
  void on_epoch_end(int epoch, Logs& logs) override {
    std::optional<double> v = monitor_.read(logs);
    if (!v) return;
    if (monitor_.improves_early_stopping(*v)) {
      monitor_.best = *v;
      wait_ = 0;
      if (options_.restore_best_weights) save_best();
      return;
    }
    if (++wait_ >= options_.patience) {
      model_->set_stop_training(true);
      // No epoch beat the baseline: Keras 2.4 would fail to set weights of None; these stay.
      if (options_.restore_best_weights && !best_.empty()) {
        auto vars = model_->tracked_variables();
        for (size_t i = 0; i < vars.size(); ++i) vars[i].second.assign(best_[i]);
      }
    }
  }

 private:
  void save_best() {
    best_.clear();
    for (const auto& [name, v] : model_->tracked_variables()) best_.push_back(copy(v.value()));
  }
  EarlyStoppingOptions options_;
  Monitor monitor_;
  int wait_ = 0;
  std::vector<Tensor> best_;
};

class LearningRateSchedulerImpl : public CallbackImpl {
 public:
  explicit LearningRateSchedulerImpl(std::function<double(int, double)> f) : f_(std::move(f)) {}
  void on_epoch_begin(int epoch, const Logs&) override {
    optim::Optimizer opt = model_->optimizer();
    opt.set_learning_rate(f_(epoch, opt.current_learning_rate()));
  }
  void on_epoch_end(int, Logs& logs) override {
    logs["lr"] = model_->optimizer().current_learning_rate();
  }

 private:
  std::function<double(int, double)> f_;
};

class ReduceLROnPlateauImpl : public CallbackImpl {
 public:
  explicit ReduceLROnPlateauImpl(ReduceLROnPlateauOptions o)
      : options_(o), monitor_(o.monitor, o.mode, o.min_delta) {
    WEFT_CHECK(o.factor > 0 && o.factor < 1, InvalidArgument)
        << "ReduceLROnPlateau: factor must be in (0, 1), got " << o.factor;
    WEFT_CHECK(o.patience >= 0 && o.cooldown >= 0 && o.min_lr >= 0, InvalidArgument)
        << "ReduceLROnPlateau: patience (" << o.patience << "), cooldown (" << o.cooldown
        << ") and min_lr (" << o.min_lr << ") must be non-negative";
  }
  void on_train_begin(const Logs&) override {
    wait_ = 0;
    cooldown_left_ = 0;
    monitor_.reset();
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    optim::Optimizer opt = model_->optimizer();
    logs["lr"] = opt.current_learning_rate();
    std::optional<double> v = monitor_.read(logs);
    if (!v) return;
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      wait_ = 0;
    }
    if (monitor_.improves(*v)) {
      monitor_.best = *v;
      wait_ = 0;
      return;
    }
    if (cooldown_left_ > 0 || ++wait_ < options_.patience) return;
    double lr = opt.current_learning_rate();
    // Keras holds the rate in a float32 variable and compares it with np.float32(min_lr): a rate
    // already cut to min_lr is not cut again (nor does it start another cooldown).
    if (static_cast<float>(lr) > static_cast<float>(options_.min_lr)) {
      double cut = std::max(lr * options_.factor, options_.min_lr);
      opt.set_learning_rate(cut);
      if (options_.verbose > 0) {
        std::printf("\nEpoch %d: ReduceLROnPlateau reducing learning rate to %g.\n", epoch + 1,
                    cut);
      }
      cooldown_left_ = options_.cooldown;
      wait_ = 0;
    }
  }

 private:
  ReduceLROnPlateauOptions options_;
  Monitor monitor_;
  int wait_ = 0, cooldown_left_ = 0;
};

class TerminateOnNaNImpl : public CallbackImpl {
 public:
  void on_train_batch_end(int64_t step, const Logs& logs) override {
    auto it = logs.find("loss");
    if (it == logs.end() || std::isfinite(it->second)) return;
    std::printf("Batch %lld: Invalid loss, terminating training\n", static_cast<long long>(step));
    model_->set_stop_training(true);
  }
};

class LambdaCallbackImpl : public CallbackImpl {
 public:
  explicit LambdaCallbackImpl(LambdaCallbackOptions f) : f_(std::move(f)) {}
  void on_train_begin(const Logs& logs) override {
    if (f_.on_train_begin) f_.on_train_begin(logs);
  }
  void on_train_end(const Logs& logs) override {
    if (f_.on_train_end) f_.on_train_end(logs);
  }
  void on_epoch_begin(int epoch, const Logs& logs) override {
    if (f_.on_epoch_begin) f_.on_epoch_begin(epoch, logs);
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    if (f_.on_epoch_end) f_.on_epoch_end(epoch, logs);
  }
  void on_train_batch_begin(int64_t step, const Logs& logs) override {
    if (f_.on_batch_begin) f_.on_batch_begin(step, logs);
  }
  void on_train_batch_end(int64_t step, const Logs& logs) override {
    if (f_.on_batch_end) f_.on_batch_end(step, logs);
  }

 private:
  LambdaCallbackOptions f_;
};

class CSVLoggerImpl : public CallbackImpl {
 public:
  bool chief_only() const override { return true; }
  CSVLoggerImpl(std::string filename, bool append)
      : filename_(std::move(filename)), append_(append) {}
  void on_train_begin(const Logs&) override {
    bool exists = append_ && std::filesystem::exists(filename_);
    out_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
    WEFT_CHECK(out_.good(), FailedPrecondition) << "CSVLogger: cannot open " << filename_;
    header_written_ = exists;
    columns_.clear();
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    if (columns_.empty()) {
      for (const auto& [k, v] : logs) columns_.push_back(k);
      if (!header_written_) {
        out_ << "epoch";
        for (const auto& c : columns_) out_ << "," << c;
        out_ << "\n";
        header_written_ = true;
      }
    }
    out_ << epoch;
    for (const auto& c : columns_) {
      auto it = logs.find(c);
      out_ << ",";
      if (it != logs.end()) out_ << shortest(it->second);
    }
    out_ << "\n";
    out_.flush();
  }
  void on_train_end(const Logs&) override { out_.close(); }

 private:
  // Every digit the value needs and no more (as Keras's rows, Python's repr of a float): it reads
  // back as the same double.
  static std::string shortest(double v) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    WEFT_ASSERT(ec == std::errc()) << "to_chars of " << v;
    return std::string(buf, end);
  }
  std::string filename_;
  bool append_;
  std::ofstream out_;
  bool header_written_ = false;
  std::vector<std::string> columns_;
};

class ModelCheckpointImpl : public CallbackImpl {
 public:
  bool chief_only() const override { return true; }
  ModelCheckpointImpl(std::string dir, ModelCheckpointOptions o)
      : dir_(std::move(dir)), options_(o), monitor_(o.monitor, o.mode, 0) {}
  void on_epoch_end(int epoch, Logs& logs) override {
    if (options_.save_best_only) {
      std::optional<double> v = monitor_.read(logs);
      if (!v || !monitor_.improves(*v)) return;
      monitor_.best = *v;
    }
    Checkpoint ckpt({{"model", model_}}, dir_, options_.max_to_keep);
    ckpt.save(epoch + 1);
  }

 private:
  std::string dir_;
  ModelCheckpointOptions options_;
  Monitor monitor_;
};

class TensorBoardImpl : public CallbackImpl {
 public:
  bool chief_only() const override { return true; }
  TensorBoardImpl(std::string dir, TensorBoardOptions options)
      : dir_(std::move(dir)), update_freq_(options.update_freq), profile_(options.profile_batch) {
    const auto [first, last] = profile_;
    WEFT_CHECK((first == 0 && last == 0) || (first >= 1 && last >= first), InvalidArgument)
        << "TensorBoard: profile_batch {" << first << ", " << last
        << "} must be {0, 0} (none) or a range of batches {first, last} with 1 <= first <= last";
  }
  std::optional<ProfileSteps> profile_steps() const override {
    if (profile_.first == 0) return std::nullopt;
    return ProfileSteps{profile_.first, profile_.second, dir_ + "/train"};
  }
  void on_train_begin(const Logs&) override {
    train_ = std::make_unique<EventFileWriter>(dir_ + "/train");
    validation_ = std::make_unique<EventFileWriter>(dir_ + "/validation");
  }
  void on_train_batch_end(int64_t, const Logs& logs) override {
    const int64_t before = global_step_;
    global_step_ += batch_steps_;
    // Every update_freq steps: once per batch end that passes a multiple of it.
    if (update_freq_ <= 0 || global_step_ / update_freq_ == before / update_freq_) return;
    for (const auto& [k, v] : logs) train_->add_scalar("batch_" + k, v, global_step_);
  }
  void on_epoch_end(int epoch, Logs& logs) override {
    for (const auto& [k, v] : logs) {
      bool val = k.rfind("val_", 0) == 0;
      (val ? validation_ : train_)->add_scalar("epoch_" + (val ? k.substr(4) : k), v, epoch);
    }
    // As Keras's callback does, a rate that follows a schedule is logged with the metrics.
    optim::Optimizer optimizer = model_->optimizer();
    if (!optimizer.learning_rate().is_constant()) {
      train_->add_scalar("epoch_learning_rate", optimizer.current_learning_rate(), epoch);
    }
    train_->flush();
    validation_->flush();
  }
  void on_train_end(const Logs&) override {
    train_.reset();
    validation_.reset();
  }

 private:
  std::string dir_;
  int64_t update_freq_;
  std::pair<int64_t, int64_t> profile_;
  int64_t global_step_ = 0;
  std::unique_ptr<EventFileWriter> train_, validation_;
};

// Set by SIGTERM while a BackupAndRestore is in a fit().
std::atomic<bool> termination_requested{false};
void on_termination(int) { termination_requested = true; }

// Saves {model, optimizer, iterator, progress} (and a parameter-server fit's ledger) as a weft
// checkpoint; "progress" is the position (epoch, step within it) training continues from. In a
// cluster every worker holds the same state (the variables are mirrored and the iterator is
// global): the chief writes the backups, every worker restores the newest, and the workers check
// that they restored the same one.
class BackupAndRestoreImpl : public CallbackImpl {
 public:
  BackupAndRestoreImpl(std::string dir, std::optional<int64_t> save_freq)
      : dir_(std::move(dir)), save_freq_(save_freq) {
    WEFT_CHECK(!save_freq || *save_freq > 0, InvalidArgument)
        << "BackupAndRestore: save_freq must be positive, got " << *save_freq;
  }
  bool restores_backups() const override { return true; }
  std::optional<ResumePoint> resume_point() override {
    TraceMe trace("BackupAndRestore::restore", 1, TraceCategory::kCheckpoint);
    bool restored = checkpoint().restore_latest();
    check_workers_agree(restored ? saves_ : 0);
    examples_ = restored ? progress_.examples : 0;
    if (!restored) return std::nullopt;
    if (chief()) {
      std::fprintf(stderr, "weft: restored backup %s (epoch %d, step %lld)\n", dir_.c_str(),
                   progress_.at.epoch, static_cast<long long>(progress_.at.step));
    }
    return progress_.at;
  }
  void on_train_begin(const Logs&) override {
    preempted_ = false;
    pending_ = Pending::kNone;
    termination_requested = false;
    struct sigaction sa {};
    sa.sa_handler = on_termination;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &previous_);
  }
  void on_epoch_begin(int epoch, const Logs&) override { epoch_ = epoch; }
  // A save is due (save_freq steps since the last, or SIGTERM: then training stops), made at
  // the first batch end with no later step in flight, so that the backup holds exactly the
  // steps before the point it resumes from (with parameter servers, after the steps running
  // then; otherwise at once).
  void on_train_batch_end(int64_t step, const Logs&) override {
    steps_since_save_ += batch_steps_;
    examples_ += batch_examples_;
    if (pending_ != Pending::kPreempt && termination_agreed()) {
      pending_ = Pending::kPreempt;
      model_->set_stop_training(true);
    } else if (pending_ == Pending::kNone && save_freq_ && steps_since_save_ >= *save_freq_) {
      pending_ = Pending::kSave;
    }
    if (pending_ == Pending::kNone || steps_in_flight_ > 0) return;
    const bool preempting = pending_ == Pending::kPreempt;
    save({epoch_, step + 1});
    if (!preempting) return;
    preempted_ = true;
    if (chief()) {
      std::fprintf(stderr,
                   "weft: preempted (SIGTERM): backed up epoch %d, step %lld to %s; run the "
                   "same command again to resume\n",
                   epoch_, static_cast<long long>(step + 1), dir_.c_str());
    }
  }
  bool wants_quiet_point() const override { return pending_ != Pending::kNone; }
  void on_epoch_end(int epoch, Logs&) override {
    if (!preempted_) save({epoch + 1, 0});
  }
  void on_train_abort() noexcept override { sigaction(SIGTERM, &previous_, nullptr); }
  void on_train_end(const Logs&) override {
    sigaction(SIGTERM, &previous_, nullptr);
    if (chief() && (!model_->stop_training() || progress_.at.epoch >= epochs_)) {
      std::filesystem::remove_all(dir_);
    }
  }
  bool preempted() const { return preempted_; }
  int64_t examples_trained() const { return examples_; }

 private:
  // SIGTERM reached this process, or (in a cluster) any worker: every worker learns it after
  // the same step.
  bool termination_agreed() const {
    bool here = termination_requested.load();
    if (workers() == 1) return here;
    return strategy().sum_across_workers(Tensor::scalar(here ? 1 : 0, kInt64)).item<int64_t>() > 0;
  }
  const distribute::StrategyImpl& strategy() const {
    return model_->distribute_strategy().extended();
  }
  int workers() const {
    return strategy().num_replicas_in_sync() / strategy().num_local_replicas();
  }
  bool chief() const { return strategy().first_local_replica() == 0; }
  // Where training continues, and how many examples the job has trained on before it.
  struct Progress : Trackable {
    ResumePoint at;
    int64_t examples = 0;
    std::vector<std::pair<std::string, Variable>> tracked_variables() const override { return {}; }
    std::string tracked_state() const override {
      return std::to_string(at.epoch) + " " + std::to_string(at.step) + " " +
             std::to_string(examples);
    }
    void restore_state(const std::string& s) override {
      examples = 0;  // absent from backups made before it was counted
      WEFT_CHECK(std::sscanf(s.c_str(), "%d %ld %ld", &at.epoch, &at.step, &examples) >= 2,
                 DataLoss)
          << "BackupAndRestore: unreadable progress record \"" << s << "\"";
    }
  };
  // In a cluster every worker writes its share of the rows (checkpoint format v2), the chief
  // commits.
  void save(ResumePoint at) {
    TraceMe trace("BackupAndRestore::save", 1, TraceCategory::kCheckpoint);
    pending_ = Pending::kNone;
    progress_.at = at;
    progress_.examples = examples_;
    steps_since_save_ = 0;
    ++saves_;
    if (workers() == 1) {
      checkpoint().save(saves_);
      return;
    }
    // A name for this save's temporary directory that every worker shares: the chief's draw.
    std::random_device device;
    const int64_t draw = static_cast<int64_t>((uint64_t{device()} << 31) ^ device());
    Checkpoint::Writers writers;
    writers.part = strategy().first_local_replica() / strategy().num_local_replicas();
    writers.parts = workers();
    writers.save_id = std::to_string(
        strategy().broadcast_across_workers(Tensor::scalar(draw, kInt64)).item<int64_t>());
    writers.barrier = [this] { strategy().barrier_across_workers(); };
    checkpoint().save(saves_, writers);
  }
  // Every worker restored backup `number` (0: none), or FailedPrecondition naming what differs:
  // a worker that cannot see the chief's backups would otherwise train from other weights.
  void check_workers_agree(int64_t number) const {
    if (workers() == 1) return;
    std::vector<int64_t> restored =
        strategy()
            .all_gather_across_workers(Tensor::from_vector(std::vector<int64_t>{number}))
            .to_vector<int64_t>();
    if (std::adjacent_find(restored.begin(), restored.end(), std::not_equal_to<>()) ==
        restored.end()) {
      return;
    }
    std::ostringstream which;
    for (size_t w = 0; w < restored.size(); ++w) {
      which << (w ? ", " : "") << "worker " << w << ": "
            << (restored[w] ? "backup " + std::to_string(restored[w]) : "none");
    }
    WEFT_FAIL(FailedPrecondition)
        << "BackupAndRestore: the workers restored different backups from " << dir_ << " ("
        << which.str()
        << "); every worker must see the same backup directory (on several hosts, a shared "
           "file system)";
  }
  Checkpoint& checkpoint() {
    if (!checkpoint_) {
      optimizer_ = model_->optimizer();
      std::vector<std::pair<std::string, Trackable*>> objects = {
          {"model", model_}, {"optimizer", &optimizer_}, {"progress", &progress_}};
      if (iterator_ != nullptr) objects.emplace_back("iterator", iterator_);
      if (ledger_ != nullptr) objects.emplace_back("ledger", ledger_);
      checkpoint_ = std::make_unique<Checkpoint>(objects, dir_, 2);
      // Number new backups after the newest one present, so a resumed run never reuses a name.
      std::vector<std::string> existing = checkpoint_->checkpoints();
      saves_ = static_cast<int64_t>(existing.size()) > 0 ? step_of(existing.back()) : 0;
    }
    return *checkpoint_;
  }
  static int64_t step_of(const std::string& dir) {
    size_t dash = dir.rfind('-');
    return dash == std::string::npos ? 0 : std::stoll(dir.substr(dash + 1));
  }
  std::string dir_;
  std::optional<int64_t> save_freq_;
  Progress progress_;
  optim::Optimizer optimizer_;
  std::unique_ptr<Checkpoint> checkpoint_;
  int epoch_ = 0;
  int64_t steps_since_save_ = 0, saves_ = 0;
  bool preempted_ = false;
  enum class Pending { kNone, kSave, kPreempt } pending_ = Pending::kNone;  // a save due
  int64_t examples_ = 0;  // trained on by the job, before this run too
  struct sigaction previous_ {};
};

}  // namespace

ProgbarLogger::ProgbarLogger(int verbose) : Callback(std::make_shared<ProgbarImpl>(verbose)) {}
EarlyStopping::EarlyStopping(EarlyStoppingOptions o)
    : Callback(std::make_shared<EarlyStoppingImpl>(o)) {}
LearningRateScheduler::LearningRateScheduler(std::function<double(int, double)> f)
    : Callback(std::make_shared<LearningRateSchedulerImpl>(std::move(f))) {}
ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions o)
    : Callback(std::make_shared<ReduceLROnPlateauImpl>(o)) {}
TerminateOnNaN::TerminateOnNaN() : Callback(std::make_shared<TerminateOnNaNImpl>()) {}
LambdaCallback::LambdaCallback(LambdaCallbackOptions f)
    : Callback(std::make_shared<LambdaCallbackImpl>(std::move(f))) {}
CSVLogger::CSVLogger(std::string filename, bool append)
    : Callback(std::make_shared<CSVLoggerImpl>(std::move(filename), append)) {}
ModelCheckpoint::ModelCheckpoint(std::string directory, ModelCheckpointOptions o)
    : Callback(std::make_shared<ModelCheckpointImpl>(std::move(directory), o)) {}
TensorBoard::TensorBoard(std::string log_dir, int64_t update_freq)
    : TensorBoard(std::move(log_dir), TensorBoardOptions{.update_freq = update_freq}) {}
TensorBoard::TensorBoard(std::string log_dir, TensorBoardOptions options)
    : Callback(std::make_shared<TensorBoardImpl>(std::move(log_dir), options)) {}
BackupAndRestore::BackupAndRestore(std::string backup_dir, std::optional<int64_t> save_freq)
    : Callback(std::make_shared<BackupAndRestoreImpl>(std::move(backup_dir), save_freq)) {}
bool BackupAndRestore::preempted() const {
  return static_cast<const BackupAndRestoreImpl&>(impl()).preempted();
}
int64_t BackupAndRestore::examples_trained() const {
  return static_cast<const BackupAndRestoreImpl&>(impl()).examples_trained();
}

}  // namespace weft::train
