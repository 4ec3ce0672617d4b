// A fixture whose test gets certificates made with openssl for 127.0.0.1 in a fresh directory: a
// CA (ca.pem, ca.key), a server's and a client's certificate and key (server.pem/.key,
// client.pem/.key), each signed by the CA, for the gRPC services' TLS tests. Header-only.
//
//   TEST_F(MyTls, ...) { options.tls = {file("server.pem"), file("server.key"), file("ca.pem")}; }
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace weft::testing {

class TlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("weft_tls_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    const std::string script =
        "cd " + dir_.string() +
        " && ( "
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=weft-test-ca "
        "-keyout ca.key -out ca.pem && "
        "for who in server client; do "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=$who -keyout $who.key -out $who.csr && "
        "printf 'subjectAltName=IP:127.0.0.1\\n' > $who.ext && "
        "openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile $who.ext -out $who.pem; done ) > log 2>&1";
    ASSERT_EQ(std::system(script.c_str()), 0) << "openssl failed, see " << dir_ << "/log";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string file(const char* name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

}  // namespace weft::testing
