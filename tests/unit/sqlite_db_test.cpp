// The SQLite wrapper every store uses: errors name the store, a transaction left by a throw is
// rolled back, and text round-trips whole (embedded NULs included).
#include "simulator/support/sqlite_db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

int64_t rowCount(sqlite::Database& db) {
  sqlite::Statement count(db, "SELECT count(*) FROM t");
  EXPECT_TRUE(count.step());
  return count.integer(0);
}

TEST(SqliteDb, ErrorsNameTheStoreAndWhatFailed) {
  sqlite::Database db(":memory:", "the test store");
  try {
    sqlite::Statement bad(db, "SELECT * FROM missing_table");
    FAIL() << "a statement on a missing table was prepared";
  } catch (const UserError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("the test store: prepare", 0), 0u) << message;
    EXPECT_NE(message.find("no such table: missing_table"), std::string::npos) << message;
  }
  db.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL)");
  sqlite::Statement insert(db, "INSERT INTO t(id, name) VALUES (?, ?)");
  insert.bind(1, int64_t{1}).bind(2, "a");
  EXPECT_FALSE(insert.step());
  insert.reset();
  insert.bind(1, int64_t{1}).bind(2, "b");  // the same key again
  EXPECT_THROW(insert.step(), UserError);
}

TEST(SqliteDb, AThrowInsideATransactionRollsItBack) {
  const std::string path =
      ::testing::TempDir() + "sqlite-db-test-" + std::to_string(::getpid()) + ".db";
  {
    sqlite::Database db(path, "the test store");
    db.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL)");
    try {
      sqlite::Transaction transaction(db, sqlite::Transaction::Lock::Immediate);
      db.exec("INSERT INTO t VALUES (1, 'half done')");
      throw std::runtime_error("parsing failed");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(rowCount(db), 0);
    sqlite::Transaction transaction(db);
    db.exec("INSERT INTO t VALUES (2, 'done')");
    transaction.commit();
  }
  // Another connection sees the committed row: the first left no lock or open transaction.
  sqlite::Database again(path, "the test store");
  EXPECT_EQ(rowCount(again), 1);
  std::remove(path.c_str());
}

TEST(SqliteDb, TextRoundTripsWhole) {
  sqlite::Database db(":memory:", "the test store");
  db.exec("CREATE TABLE t(value TEXT)");
  const std::string text("a\0b\xc3\xa9", 5);
  sqlite::Statement insert(db, "INSERT INTO t VALUES (?)");
  insert.bind(1, text).step();
  sqlite::Statement select(db, "SELECT value, NULL FROM t");
  ASSERT_TRUE(select.step());
  EXPECT_EQ(select.text(0), text);
  EXPECT_EQ(select.text(1), "");
  EXPECT_FALSE(select.step());
}

}  // namespace
}  // namespace stickler
