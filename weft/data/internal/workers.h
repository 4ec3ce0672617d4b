// Worker threads shared by the threaded stages (map, interleave): a small pool running queued
// tasks, and Result, an element (or the end, or an error) computed ahead of the consumer, which an
// iterator's state saves as it is since what produced it has moved on.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "weft/core/config.h"
#include "weft/data/dataset.h"
#include "weft/data/iterator_state.h"

namespace weft::data::internal {

// A result computed ahead: an element, the end of the input (neither set), or an exception.
struct Result {
  std::optional<Element> element;
  std::exception_ptr error;

  bool is_end() const { return !element && !error; }
  void save(StateWriter& w) const {
    w.write_i64(error ? 2 : element ? 1 : 0);
    if (error) w.write_error(error);
    if (element) w.write_element(*element);
  }
  static Result restore(StateReader& r) {
    Result out;
    int64_t kind = r.read_i64("result kind (0 end, 1 element, 2 error)", 0, 2);
    if (kind == 2) out.error = r.read_error("result");
    if (kind == 1) out.element = r.read_element("result");
    return out;
  }
  std::optional<Element> take() {
    if (error) std::rethrow_exception(error);
    return std::move(element);
  }
};

// A few threads running queued tasks. Tasks not yet started when the pool is destroyed or
// cancel_pending() is called are dropped; running ones finish first.
class WorkerPool {
 public:
  explicit WorkerPool(int64_t threads) {
    for (int64_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  void cancel_pending() {
    std::lock_guard lock(mu_);
    tasks_.clear();
  }

 private:
  void run() {
    config::ThreadBudget one(1);  // pipeline threads leave the cores to the training threads
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (stop_) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace weft::data::internal
