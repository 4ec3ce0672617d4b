// snapshot (tf.data.experimental.snapshot, SnapshotDatasetV2): each pass over the dataset either
// writes the input through to a new run under path/<hash of the pipeline>/ (no finished run
// there yet), finishing the run at the end of the input, or reads the finished run instead of
// the input. The files are Dataset::save's (internal/snapshot_io.h).
#include <xxhash.h>

#include <cstdio>
#include <filesystem>

#include "weft/core/config.h"
#include "weft/data/internal/snapshot_io.h"

namespace weft::data::internal {
namespace {

namespace fs = std::filesystem;

struct SnapshotParams {
  std::string dir;       // path/<hash>
  std::string pipeline;  // the input's describe()
  Compression compression = Compression::kNone;
  std::function<int64_t(const Element&)> shard_func;
  std::function<Dataset(const std::vector<Dataset>&)> reader_func;
};

// The dataset a reader_func (or the default, load's) makes of a run's shards.
Dataset read_run(const SnapshotParams& p, const std::string& run_id,
                 const std::vector<int64_t>& shard_ids, Compression c) {
  std::vector<Dataset> shards;
  for (int64_t id : shard_ids) {
    shards.emplace_back(make_snapshot_shard_node(shard_dir(p.dir, run_id, id), c));
  }
  if (p.reader_func) return p.reader_func(shards);
  const auto n = std::max<int64_t>(static_cast<int64_t>(shards.size()), 1);
  return Dataset::range(static_cast<int64_t>(shards.size()))
      .interleave(
          [shards](const Element& e) { return shards[static_cast<size_t>(e[0].item<int64_t>())]; },
          {.cycle_length = n,
           .block_length = 1,
           .num_parallel_calls = std::clamp<int64_t>(config::num_threads(), 1, n),
           .deterministic = true});
}

class SnapshotReader : public Reader {
 public:
  enum Mode : int64_t { kUnstarted = 0, kWriting = 1, kReading = 2, kPassingThrough = 3 };

  SnapshotReader(std::unique_ptr<Reader> input, std::shared_ptr<const SnapshotParams> p)
      : input_(std::move(input)), p_(std::move(p)) {}

  std::optional<Element> next() override {
    if (mode_ == kUnstarted) start();
    if (mode_ == kReading) return run_reader_->next();
    std::optional<Element> e = input_->next();
    if (mode_ != kWriting) return e;
    if (!e) {
      finish();
      return std::nullopt;
    }
    const int64_t shard = p_->shard_func ? p_->shard_func(*e) : count_ % round_robin_;
    WEFT_CHECK(shard >= 0, InvalidArgument)
        << "Dataset::snapshot: shard_func gave " << shard << " for element " << count_
        << "; expected a shard id >= 0";
    widen_spec(spec_, *e, count_);
    writer_->write(shard, *e);
    ++count_;
    return e;
  }

  // As TF's writer, saving closes the chunks being written: the state names the files written
  // so far, which a restored writer takes into its own run.
  void save(StateWriter& w) const override {
    w.begin("snapshot");
    w.write_i64(mode_);
    if (mode_ == kReading) {
      w.write_string(run_id_);
      w.write_i64(static_cast<int64_t>(compression_));
      w.write_i64(static_cast<int64_t>(shard_ids_.size()));
      for (int64_t id : shard_ids_) w.write_i64(id);
      run_reader_->save(w);
      return;
    }
    if (mode_ == kWriting) {
      writer_->close_chunks();
      w.write_string(run_id_);
      w.write_i64(round_robin_);
      w.write_i64(count_);
      w.write_i64(static_cast<int64_t>(spec_.size()));
      for (const TensorSpec& s : spec_) {
        w.write_i64(static_cast<int64_t>(s.dtype));
        w.write_i64(static_cast<int64_t>(s.shape.size()));
        for (int64_t d : s.shape) w.write_i64(d);
      }
      const std::map<int64_t, int64_t> chunks = writer_->chunk_counts();
      w.write_i64(static_cast<int64_t>(chunks.size()));
      for (const auto& [id, n] : chunks) {
        w.write_i64(id);
        w.write_i64(n);
      }
    }
    input_->save(w);
  }

  void restore(StateReader& r) override {
    r.begin("snapshot");
    const int64_t mode = r.read_i64("mode", kUnstarted, kPassingThrough);
    writer_.reset();
    run_reader_.reset();
    mode_ = static_cast<Mode>(mode);
    if (mode_ == kReading) {
      run_id_ = r.read_string("run id");
      compression_ = static_cast<Compression>(r.read_i64("compression", 0, 2));
      shard_ids_.clear();
      const int64_t n = r.read_i64("count of shards", 0);
      for (int64_t i = 0; i < n; ++i) shard_ids_.push_back(r.read_i64("shard id", 0));
      std::error_code ec;
      WEFT_CHECK(fs::is_directory(p_->dir + "/" + run_id_, ec), DataLoss)
          << "Dataset::snapshot: the snapshot " << p_->dir << "/" << run_id_
          << " being read does not exist any more";
      run_reader_ = read_run(*p_, run_id_, shard_ids_, compression_).node()->make_reader();
      run_reader_->restore(r);
      return;
    }
    if (mode_ == kWriting) {
      const std::string saved_run = r.read_string("run id");
      round_robin_ = r.read_i64("shard count", 1);
      count_ = r.read_i64("count of elements written", 0);
      spec_.clear();
      const int64_t components = r.read_i64("count of components", 0);
      for (int64_t i = 0; i < components; ++i) {
        TensorSpec s;
        s.dtype = static_cast<DType>(r.read_i64("dtype", 0, static_cast<int64_t>(kFloat64)));
        const int64_t rank = r.read_i64("rank", 0, 64);
        for (int64_t d = 0; d < rank; ++d) s.shape.push_back(r.read_i64("size", -1));
        spec_.push_back(s);
      }
      std::map<int64_t, int64_t> chunks;
      const int64_t n = r.read_i64("count of shards", 0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t id = r.read_i64("shard id", 0);
        chunks[id] = r.read_i64("count of chunks", 0);
      }
      input_->restore(r);
      // A new run taking the saved run's chunks written so far; the saving run is not touched.
      // When they are gone, the rest of the pass reads the input without writing.
      run_id_ = new_run_id();
      compression_ = p_->compression;
      writer_ = std::make_unique<SnapshotWriter>(p_->dir, run_id_, compression_);
      if (!writer_->adopt(saved_run, chunks)) {
        writer_.reset();
        std::error_code ec;
        fs::remove_all(p_->dir + "/" + run_id_, ec);
        mode_ = kPassingThrough;
      }
      return;
    }
    input_->restore(r);
  }

 private:
  void start() {
    std::error_code ec;
    fs::create_directories(p_->dir, ec);
    WEFT_CHECK(!ec, FailedPrecondition)
        << "Dataset::snapshot: cannot create " << p_->dir << ": " << ec.message();
    std::optional<SnapshotMetadata> m = read_metadata(p_->dir);
    if (m && m->finalized) {
      mode_ = kReading;
      run_id_ = m->run_id;
      compression_ = m->compression;
      shard_ids_ = m->shards;
      run_reader_ = read_run(*p_, run_id_, shard_ids_, compression_).node()->make_reader();
      return;
    }
    mode_ = kWriting;
    run_id_ = new_run_id();
    compression_ = p_->compression;
    round_robin_ = std::max(1, config::num_threads());
    writer_ = std::make_unique<SnapshotWriter>(p_->dir, run_id_, compression_);
    SnapshotMetadata started;
    started.pipeline = p_->pipeline;
    started.run_id = run_id_;
    started.compression = compression_;
    write_metadata(p_->dir, started);  // unfinished: later passes write too, until one finishes
  }

  void finish() {
    writer_->close_chunks();
    SnapshotMetadata m;
    m.pipeline = p_->pipeline;
    m.element_spec = spec_;
    m.compression = compression_;
    m.shards = writer_->shards();
    m.num_elements = count_;
    m.run_id = run_id_;
    m.finalized = true;
    write_metadata(p_->dir, m);
    writer_.reset();
    mode_ = kPassingThrough;  // the input is at its end: nothing more to write
  }

  std::unique_ptr<Reader> input_;
  std::shared_ptr<const SnapshotParams> p_;
  Mode mode_ = kUnstarted;
  std::string run_id_;
  Compression compression_ = Compression::kNone;
  // Writing:
  std::unique_ptr<SnapshotWriter> writer_;  // save() closes its chunks
  int64_t round_robin_ = 1;
  int64_t count_ = 0;
  std::vector<TensorSpec> spec_;
  // Reading:
  std::vector<int64_t> shard_ids_;
  std::unique_ptr<Reader> run_reader_;
};

class SnapshotNode : public Node {
 public:
  SnapshotNode(NodePtr input, std::shared_ptr<const SnapshotParams> p, std::string path)
      : input_(std::move(input)), p_(std::move(p)), path_(std::move(path)) {}
  std::unique_ptr<Reader> make_reader() const override {
    return std::make_unique<SnapshotReader>(input_->make_reader(), p_);
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string describe() const override {
    return input_->describe() + ".snapshot(\"" + path_ + "\")";
  }

 private:
  NodePtr input_;
  std::shared_ptr<const SnapshotParams> p_;
  std::string path_;
};

}  // namespace

NodePtr make_snapshot_node(NodePtr input, const std::string& path, const SnapshotOptions& o) {
  WEFT_CHECK(!path.empty(), InvalidArgument) << "Dataset::snapshot: the path is empty";
  auto p = std::make_shared<SnapshotParams>();
  p->compression = o.compression == Compression::kGzip ? Compression::kGzip : Compression::kNone;
  const std::string key = input->describe() + "|" + compression_name(p->compression);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  p->dir = path + "/" + hash;
  p->pipeline = input->describe();
  p->shard_func = o.shard_func;
  p->reader_func = o.reader_func;
  return std::make_shared<SnapshotNode>(std::move(input), std::move(p), path);
}

}  // namespace weft::data::internal
