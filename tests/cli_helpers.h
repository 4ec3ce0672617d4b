// Helpers for the tests that run the `weft` command: run it and collect its output, write small
// Fashion-MNIST-named IDX datasets (SPEC §6: tests never need the real one), and kill a training
// run once it has written its first backup.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace weft_cli_test {

namespace fs = std::filesystem;

// Whether this test (and so the `weft` it runs) is built with AddressSanitizer, under which a
// training step takes about ten times as long: a test whose job must outlast a fixed wait takes
// larger batches there, for the same examples in fewer steps.
#if defined(__SANITIZE_ADDRESS__)  // GCC
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)  // Clang
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

struct Result {
  int status;
  std::string output;
};

// A shell command's exit status and output (stdout and stderr).
inline Result shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string output;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The words that start the `weft` command: $WEFT_TEST_LAUNCHER's (haswell_cli_test sets it to
// QEMU's emulation of an AVX2-only CPU), then the built command.
inline std::vector<std::string> weft_command() {
  std::vector<std::string> words;
  if (const char* launcher = std::getenv("WEFT_TEST_LAUNCHER")) {
    std::istringstream split(launcher);
    for (std::string w; split >> w;) words.push_back(w);
  }
  words.push_back(std::string(WEFT_BINARY_DIR) + "/weft");
  return words;
}

inline Result run(const std::string& args) {
  std::string command;
  for (const std::string& w : weft_command()) command += w + " ";
  return shell(command + args);
}

inline void write_gz(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

inline std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

// IDX files in Fashion-MNIST's names: n images of side x side pixels whose brightness pattern
// depends on the label, so a model can learn them.
inline void write_dataset(const fs::path& dir, int n_train, int n_test, int side = 28) {
  fs::create_directories(dir);
  std::mt19937 rng(5);
  for (auto [prefix, n] : {std::pair{"train", n_train}, std::pair{"t10k", n_test}}) {
    std::string images = std::string("\0\0\x08\x03", 4) + be32(n) + be32(side) + be32(side);
    std::string labels = std::string("\0\0\x08\x01", 4) + be32(n);
    for (int i = 0; i < n; ++i) {
      int label = static_cast<int>(rng() % 10);
      labels += static_cast<char>(label);
      for (int p = 0; p < side * side; ++p) {
        int base = (p % 10 == label) ? 200 : 20;
        images += static_cast<char>(base + static_cast<int>(rng() % 50));
      }
    }
    write_gz(dir / (std::string(prefix) + "-images-idx3-ubyte.gz"), images);
    write_gz(dir / (std::string(prefix) + "-labels-idx1-ubyte.gz"), labels);
  }
}

inline nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// Starts `weft ARGS`, waits (at most 120 s) until `backup` holds a backup, then SIGKILLs it.
// Returns whether it died of the signal (false: it finished first, or never backed up).
inline bool kill_after_first_backup(const std::string& args, const fs::path& backup) {
  std::vector<std::string> argv_s = weft_command();
  std::istringstream split(args);
  for (std::string w; split >> w;) argv_s.push_back(w);
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(backup / "checkpoint") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && fs::exists(backup / "checkpoint");
}

// `weft ARGS` backs up into `backup` and writes its metrics to `json`: killed after its first
// backup and run again, it must restore that backup and end with the uninterrupted run's (`full`)
// steps and weights, bit for bit.
inline void expect_resumed_run_matches(const std::string& args, const fs::path& backup,
                                       const fs::path& json, const nlohmann::json& full) {
  ASSERT_TRUE(kill_after_first_backup(args, backup)) << "the run was not killed after a backup";
  Result resumed = run(args);
  ASSERT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_THAT(resumed.output, testing::HasSubstr("restored backup"));
  nlohmann::json c = read_json(json);
  EXPECT_EQ(c["steps"], full["steps"]);
  EXPECT_EQ(c["weights_fingerprint"], full["weights_fingerprint"]);
}

}  // namespace weft_cli_test
