// Keras's breadth in weft: weighted losses and fit's class_weight, metrics by name, the
// everyday layers and the tf.data methods. docs/training.md quotes it; CI runs it and checks
// what it prints.
#include <weft/weft.h>

#include <cstdio>

namespace nn = weft::nn;
namespace data = weft::data;

int main() {
  // Losses take a sample weight: sum(loss * w) / number of losses, as Keras's.
  weft::Tensor y_true = weft::Tensor::from_vector<float>({0, 1, 1, 0});
  weft::Tensor y_pred = weft::Tensor::from_vector<float>({0.5f, 1, 0, 0}, {4, 1});
  weft::Tensor w = weft::Tensor::from_vector<float>({2, 1, 1, 0});
  nn::losses::MeanSquaredError mse;
  std::printf("mse %.3f, weighted %.3f\n", mse(y_true, y_pred).item<double>(),
              mse(y_true, y_pred, w).item<double>());

  // Metrics accumulate batch by batch.
  nn::metrics::AUC auc;
  nn::metrics::Precision precision;
  weft::Tensor labels = weft::Tensor::from_vector<float>({0, 0, 1, 1, 1, 0});
  weft::Tensor scores = weft::Tensor::from_vector<float>({0.1f, 0.6f, 0.7f, 0.4f, 0.9f, 0.2f});
  auc.update_state(labels, scores);
  precision.update_state(labels, scores);
  std::printf("auc %.3f, precision %.3f\n", auc.result(), precision.result());
  // Keras's thresholds, top_k and class_id: one value per threshold.
  nn::metrics::Precision at_two({.thresholds = {0.3, 0.65}});
  nn::metrics::Recall of_top_two({.top_k = 2});
  at_two.update_state(labels, scores);
  of_top_two.update_state(labels, scores);
  std::vector<double> at = at_two.results();
  std::printf("precision above 0.3 and 0.65: %.2f %.2f, recall of the top 2: %.3f\n", at[0], at[1],
              of_top_two.result());

  // The everyday layers.
  weft::Tensor seq = weft::ones({2, 10, 3});
  weft::Tensor causal = nn::Conv1D(8, 3, {.padding = "causal", .dilation_rate = 2})(seq);
  weft::Tensor image = weft::ones({1, 7, 7, 4});
  weft::Tensor up = nn::Conv2DTranspose(2, {3, 3}, {.strides = {2, 2}, .padding = "same"})(image);
  weft::Tensor sep = nn::SeparableConv2D(6, {3, 3}, {.depth_multiplier = 2})(image);
  std::printf("conv1d %s, transpose %s, separable %s\n", weft::shape_str(causal.shape()).c_str(),
              weft::shape_str(up.shape()).c_str(), weft::shape_str(sep.shape()).c_str());
  // Volumes (batch, depth, height, width, channels): video clips, scans.
  weft::Tensor clip = weft::ones({2, 8, 16, 16, 3});
  weft::Tensor features = nn::Conv3D(4, {3, 3, 3}, {.padding = "same", .activation = "relu"})(clip);
  weft::Tensor pooled = nn::MaxPooling3D({2, 2, 2})(features);
  weft::Tensor summary = nn::GlobalAveragePooling3D()(pooled);
  std::printf("conv3d %s, pooled %s, summary %s\n", weft::shape_str(features.shape()).c_str(),
              weft::shape_str(pooled.shape()).c_str(), weft::shape_str(summary.shape()).c_str());

  // Sequences: padding id 0 masked by the embedding, skipped by the LSTM.
  weft::Tensor ids = weft::Tensor::from_vector<int64_t>({4, 8, 15, 0, 0, 16, 23, 42, 7, 1}, {2, 5});
  nn::Embedding embed(50, 8, {.mask_zero = true});
  weft::Tensor states = nn::LSTM(16, {.return_sequences = true})(embed(ids));
  weft::Tensor both = nn::Bidirectional(nn::GRU(6))(states);
  std::printf("lstm %s, bidirectional gru %s, mask %s\n", weft::shape_str(states.shape()).c_str(),
              weft::shape_str(both.shape()).c_str(),
              nn::keras_mask(states).to_vector<bool>()[3] ? "kept" : "carried");

  // Attention over the LSTM's states: the padding mask (batch, 1, steps) and a causal mask, so
  // step 0 attends to itself only and nothing attends to the padding.
  weft::Tensor query = states, value = states;
  weft::Tensor padding = weft::reshape(nn::keras_mask(states), {2, 1, 5});
  nn::MultiHeadAttention mha(4, 16);
  weft::Tensor attended = mha({query, value})[0];
  nn::AttentionResult r =
      mha.call(query, value, {.attention_mask = padding, .use_causal_mask = true});
  weft::Tensor z = nn::Attention({.use_scale = true})({query, value})[0];
  std::vector<float> p = r.scores.to_vector<float>();  // (2, 4, 5, 5): example, head, query, key
  std::printf("attention %s, scores %s, dot %s: step 0 on itself %.2f, on padding %.2f\n",
              weft::shape_str(attended.shape()).c_str(), weft::shape_str(r.scores.shape()).c_str(),
              weft::shape_str(z.shape()).c_str(), p[0], p[23] + p[24]);

  // tf.data: ragged elements padded to a batch, sliding windows, zip.
  data::Dataset ragged = data::Dataset::range(1, 4).map(
      [](const weft::Tensor& n) { return weft::ones({n.item<int64_t>()}, weft::kInt64); });
  for (const data::Element& batch : ragged.padded_batch(3)) {
    std::printf("padded %s:", weft::shape_str(batch[0].shape()).c_str());
    for (int64_t v : batch[0].to_vector<int64_t>()) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n");
  }
  data::Dataset windows = data::Dataset::range(6).window({.size = 3, .shift = 2});
  for (const data::Element& win : windows) {
    std::printf("window:");
    for (int64_t v : win[0].to_vector<int64_t>()) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n");
  }

  // interleave: two inner datasets open at a time, two elements from each in turn.
  data::Dataset mixed = data::Dataset::range(1, 4).interleave(
      [](const data::Element& n) { return data::Dataset::from_tensors(n).repeat(3); },
      {.cycle_length = 2, .block_length = 2});
  std::printf("interleave:");
  for (const data::Element& e : mixed) {
    std::printf(" %lld", static_cast<long long>(e[0].item<int64_t>()));
  }
  std::printf("\n");

  // bucket_by_sequence_length: lengths 1 and 2 in one bucket, 3 to 6 in the other, batches of 2.
  data::Dataset sequences = data::Dataset::range(1, 7).map(
      [](const weft::Tensor& n) { return weft::ones({n.item<int64_t>()}, weft::kInt64); });
  auto length = [](const data::Element& e) { return e[0].dim(0); };
  for (const data::Element& batch : sequences.bucket_by_sequence_length(length, {3}, {2, 2})) {
    std::printf("bucket %s\n", weft::shape_str(batch[0].shape()).c_str());
  }

  // fit with sample weights (a third component), class_weight and callbacks.
  weft::Tensor x = weft::stateless_random_normal({256, 4}, {1, 2});
  weft::Tensor y = weft::cast(weft::greater(weft::sum(x, {1}), 0.0), weft::kInt64);
  nn::Sequential model({nn::Dense(16), nn::LeakyReLU(0.1), nn::Dense(2)});
  model.compile(weft::optim::Nadam(0.01),
                nn::losses::SparseCategoricalCrossentropy({.from_logits = true}), {"accuracy"});
  weft::train::History h =
      model.fit(data::Dataset::from_tensor_slices({x, y}).batch(32),
                {.epochs = 5,
                 .callbacks = {weft::train::ReduceLROnPlateau({.monitor = "loss", .patience = 1}),
                               weft::train::TerminateOnNaN()},
                 .verbose = 0,
                 .class_weight = {{0, 1.0}, {1, 2.0}}});
  std::printf("trained: accuracy above 0.9: %s\n",
              h.history["accuracy"].back() > 0.9 ? "yes" : "no");

  // Regularizers add to the loss fit minimises and reports; constraints project after each step.
  nn::Dense hidden(16, "relu",
                   {.kernel_regularizer = nn::regularizers::l2(1e-3),
                    .kernel_constraint = nn::constraints::max_norm(0.5)});
  nn::Sequential decayed({hidden, nn::Dense(2, "", {.bias_regularizer = "l1"})});
  decayed.compile(weft::optim::SGD(0.5),
                  nn::losses::SparseCategoricalCrossentropy({.from_logits = true}));
  decayed.fit(data::Dataset::from_tensor_slices({x, y}).batch(32), {.epochs = 2, .verbose = 0});
  double penalty = 0;
  for (const weft::Tensor& loss : decayed.losses()) penalty += loss.item<double>();
  weft::Tensor norms = weft::sqrt(weft::sum(weft::square(hidden.variables()[0]), {0}));
  std::printf("regularized: penalty above 0: %s, kernel norms at most 0.5: %s\n",
              penalty > 0 ? "yes" : "no",
              weft::max(norms).item<double>() <= 0.5 + 1e-6 ? "yes" : "no");
  return 0;
}
