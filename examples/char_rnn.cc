// A character-level language model: an LSTM trained on a text file, scored in bits per character
// on text it never saw against an order-2 character model of the same training text, and a sample
// of the text it writes. CI runs it and checks that the LSTM wins.
//
//   ./char_rnn [--file PATH] [--epochs N] [--steps N] [--units N] [--batch N] [--prompt TEXT]
//
// The file (default /usr/share/common-licenses/GPL-3, on every Debian machine) is read as bytes:
// the first 90% is the training text, the last 10% the held-back text.
//
// Vocabulary: the distinct byte values of the whole file, numbered in byte order. Both models
// predict over it, so a byte that occurs only in the held-back text still has a probability above
// zero (the order-2 model's add-one smoothing, the LSTM's softmax).
//
// Both models score the same characters: every byte of the held-back text, each given the bytes
// before it in the file (the first ones' context reaches back into the training text). Bits per
// character is the mean of -log2 P(byte | context) over them: the LSTM's mean cross-entropy in
// nats / ln 2.
//
// The LSTM (Embedding -> LSTM -> Dense logits at every step) trains on windows of
// --steps bytes that start every steps / 2 bytes. Each window starts from a zero state: no state
// carries from one window to the next. When scoring, windows also advance by half a window and
// each scores only its second half, so every held-back byte is predicted from at least steps / 2
// bytes before it.
#include <weft/weft.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace nn = weft::nn;
namespace data = weft::data;

namespace {

struct Flags {
  std::string file = "/usr/share/common-licenses/GPL-3";
  int epochs = 20;
  int64_t steps = 64;  // bytes per window
  int64_t units = 128;
  int64_t batch = 16;
  std::string prompt = "The ";  // the generated sample continues it
};

Flags parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 == argc) throw weft::InvalidArgument(std::string(argv[i]) + " needs a value");
    const char* value = argv[i + 1];
    if (std::strcmp(argv[i], "--file") == 0)
      f.file = value;
    else if (std::strcmp(argv[i], "--epochs") == 0)
      f.epochs = std::atoi(value);
    else if (std::strcmp(argv[i], "--steps") == 0)
      f.steps = std::atoll(value);
    else if (std::strcmp(argv[i], "--units") == 0)
      f.units = std::atoll(value);
    else if (std::strcmp(argv[i], "--batch") == 0)
      f.batch = std::atoll(value);
    else if (std::strcmp(argv[i], "--prompt") == 0)
      f.prompt = value;
    else
      throw weft::InvalidArgument(std::string("unknown flag ") + argv[i]);
  }
  if (f.epochs < 0 || f.steps < 2 || f.units < 1 || f.batch < 1 || f.prompt.empty())
    throw weft::InvalidArgument(
        "need --epochs >= 0, --steps >= 2, --units >= 1, --batch >= 1 and a --prompt");
  return f;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw weft::FailedPrecondition("cannot open " + path + ": " + std::strerror(errno));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The distinct bytes of a text, numbered in byte order.
class Vocabulary {
 public:
  explicit Vocabulary(const std::string& text) {
    id_.fill(-1);
    for (unsigned char c : text) id_[c] = 0;
    for (int b = 0; b < 256; ++b) {
      if (id_[b] < 0) continue;
      id_[b] = size();
      bytes_.push_back(static_cast<char>(b));
    }
  }
  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }
  char byte(int64_t id) const { return bytes_[static_cast<size_t>(id)]; }
  std::vector<int64_t> encode(const std::string& text) const {
    std::vector<int64_t> ids;
    for (unsigned char c : text) {
      if (id_[c] < 0)
        throw weft::InvalidArgument("byte " + std::to_string(c) + " does not occur in the file");
      ids.push_back(id_[c]);
    }
    return ids;
  }

 private:
  std::array<int64_t, 256> id_;
  std::string bytes_;
};

// The order-2 model P(c | a b) = (count(a b c) + 1) / (count(a b) + vocab), counted on
// ids[0, split): its bits per character on ids[split, end).
double order2_bits_per_char(const std::vector<int64_t>& ids, size_t split, int64_t vocab) {
  auto context = [&](size_t k) { return static_cast<size_t>(ids[k - 2] * vocab + ids[k - 1]); };
  size_t v = static_cast<size_t>(vocab);
  std::vector<double> triples(v * v * v), pairs(v * v);
  for (size_t k = 2; k < split; ++k) {
    triples[context(k) * v + ids[k]] += 1;
    pairs[context(k)] += 1;
  }
  double bits = 0;
  for (size_t k = split; k < ids.size(); ++k)
    bits -= std::log2((triples[context(k) * v + ids[k]] + 1) / (pairs[context(k)] + vocab));
  return bits / static_cast<double>(ids.size() - split);
}

// (x, y): x = ids[s, s + steps) and y = ids[s + 1, s + steps + 1) for s = 0, shift, 2 shift, ...
// while y fits in ids[0, end).
std::pair<weft::Tensor, weft::Tensor> training_windows(const std::vector<int64_t>& ids, size_t end,
                                                       int64_t steps, int64_t shift) {
  std::vector<int64_t> x, y;
  int64_t n = 0;
  for (size_t s = 0; s + steps + 1 <= end; s += shift, ++n) {
    x.insert(x.end(), ids.begin() + s, ids.begin() + s + steps);
    y.insert(y.end(), ids.begin() + s + 1, ids.begin() + s + steps + 1);
  }
  return {weft::Tensor::from_vector(x, {n, steps}), weft::Tensor::from_vector(y, {n, steps})};
}

nn::Sequential make_model(int64_t vocab, int64_t units) {
  // Dense applies to the last axis: logits at every step.
  nn::Sequential model(
      {nn::Embedding(vocab, 32), nn::LSTM(units, {.return_sequences = true}), nn::Dense(vocab)});
  model.compile(weft::optim::Adam({.learning_rate = 3e-3, .clipnorm = 1.0}),
                nn::losses::SparseCategoricalCrossentropy({.from_logits = true}));
  return model;
}

// The LSTM's bits per character on ids[split, end), by windows of `steps` inputs (see the header
// comment). Needs split > steps / 2 and end > steps.
double lstm_bits_per_char(nn::Sequential& model, const std::vector<int64_t>& ids, size_t split,
                          int64_t steps) {
  int64_t half = steps / 2, scored = steps - half;
  // Window j reads ids[s, s + steps) and predicts ids[s + 1, s + steps + 1); its second half
  // is the targets [split + j * scored, split + (j + 1) * scored). The last window ends at the
  // end of the text, overlapping the one before it.
  size_t count = (ids.size() - split + scored - 1) / scored;
  std::vector<size_t> starts;
  for (size_t j = 0; j < count; ++j) starts.push_back(split - 1 - half + j * scored);
  starts.back() = ids.size() - 1 - steps;

  std::vector<int64_t> x;
  for (size_t s : starts) x.insert(x.end(), ids.begin() + s, ids.begin() + s + steps);
  int64_t n = static_cast<int64_t>(starts.size());
  weft::Tensor log_p =
      weft::log_softmax(model.predict(weft::Tensor::from_vector(x, {n, steps}), 64));
  size_t vocab = static_cast<size_t>(log_p.dim(-1));
  std::vector<float> lp = log_p.to_vector<float>();

  double nats = 0;
  size_t next = split;  // every target before it is scored
  for (size_t j = 0; j < starts.size(); ++j) {
    for (size_t t = 0; t < static_cast<size_t>(steps); ++t) {
      size_t target = starts[j] + t + 1;
      if (target < next) continue;
      nats -= lp[(j * static_cast<size_t>(steps) + t) * vocab + ids[target]];
      next = target + 1;
    }
  }
  return nats / std::log(2.0) / static_cast<double>(ids.size() - split);
}

// `length` bytes after `prompt`, each drawn (with a fixed seed) from the LSTM's distribution
// given the last `steps` bytes before it, sharpened by 1 / temperature.
std::string generate(nn::Sequential& model, const Vocabulary& vocab, std::vector<int64_t> prompt,
                     int length, int64_t steps) {
  constexpr double kTemperature = 0.7;
  std::mt19937 rng(2024);
  std::vector<int64_t> ids = std::move(prompt);
  std::string text;
  for (int64_t id : ids) text += vocab.byte(id);
  std::vector<double> weights(static_cast<size_t>(vocab.size()));
  for (int i = 0; i < length; ++i) {
    int64_t n = std::min<int64_t>(steps, static_cast<int64_t>(ids.size()));
    std::vector<int64_t> window(ids.end() - n, ids.end());
    std::vector<float> logits =
        model.predict(weft::Tensor::from_vector(window, {1, n})).to_vector<float>();
    const float* last = logits.data() + (n - 1) * vocab.size();
    for (size_t c = 0; c < weights.size(); ++c) weights[c] = std::exp(last[c] / kTemperature);
    ids.push_back(std::discrete_distribution<int64_t>(weights.begin(), weights.end())(rng));
    text += vocab.byte(ids.back());
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Flags flags = parse_flags(argc, argv);
    std::string text = read_bytes(flags.file);
    Vocabulary vocab(text);
    std::vector<int64_t> ids = vocab.encode(text), prompt = vocab.encode(flags.prompt);
    size_t split = ids.size() * 9 / 10;
    if (split < static_cast<size_t>(flags.steps) + 2)
      throw weft::InvalidArgument(flags.file + " is too short for windows of " +
                                  std::to_string(flags.steps) + " bytes");
    std::printf("%s: %zu bytes, %lld distinct; training on the first %zu, scoring the last %zu\n",
                flags.file.c_str(), ids.size(), static_cast<long long>(vocab.size()), split,
                ids.size() - split);

    double order2 = order2_bits_per_char(ids, split, vocab.size());

    auto start = std::chrono::steady_clock::now();
    auto [x, y] = training_windows(ids, split, flags.steps, flags.steps / 2);
    data::Dataset train =
        data::Dataset::from_tensor_slices({x, y}).shuffle(x.dim(0), /*seed=*/1).batch(flags.batch);
    nn::Sequential model = make_model(vocab.size(), flags.units);
    model.fit(train, {.epochs = flags.epochs, .verbose = 2});
    double lstm = lstm_bits_per_char(model, ids, split, flags.steps);
    std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;

    std::printf("trained and scored in %.0f s; a sample:\n%s\n", seconds.count(),
                generate(model, vocab, prompt, 300, flags.steps).c_str());
    std::printf("lstm bits/char %.3f < order-2 %.3f: %s\n", lstm, order2,
                lstm < order2 ? "yes" : "no");
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "char_rnn: %s\n", e.what());
    return 1;
  }
  return 0;
}
