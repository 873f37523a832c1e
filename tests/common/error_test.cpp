// The error vocabulary's promise: what() is one line whatever the message echoes (user input from
// a JSON body or a file name), and echoed user text is cut to a readable length.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace gtadoc {
namespace {

TEST(Error, MessageIsOneLineWhateverItEchoes) {
  const UsageError e("unknown field \"a\nb\r\tc\x7f\"");
  EXPECT_STREQ(e.what(), "unknown field \"a\\x0ab\\x0d\\x09c\\x7f\"");
  EXPECT_EQ(e.exit_code(), 2);
  const InputError plain("cannot open 'x.h5': no such file");
  EXPECT_STREQ(plain.what(), "cannot open 'x.h5': no such file");
}

TEST(Error, OneLineKeepsUtf8AndCutsLongText) {
  EXPECT_EQ(one_line("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(one_line(std::string(100, 'x'), 80), std::string(80, 'x') + "...");
  EXPECT_EQ(one_line(std::string(80, 'x'), 80), std::string(80, 'x'));
  EXPECT_EQ(user_text("a\nb"), "\"a\\x0ab\"");
  EXPECT_EQ(user_text(std::string(200, 'y')).size(), 80u + 2 + 3);
}

}  // namespace
}  // namespace gtadoc
