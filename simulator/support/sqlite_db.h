// SQLite, the way every store in Stickler uses it: owning handles, errors as UserError naming
// the store, statements finalized and transactions rolled back on every path (a throw while a
// row is being parsed must not leak a statement or leave a transaction open).
#pragma once

#include <cstdint>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace stickler::sqlite {

class Database {
 public:
  // Opens (creating) the database at `path` (":memory:" for a private one). `store` names it
  // in errors: "the gotcha store: database is locked".
  Database(const std::string& path, std::string store);
  ~Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs statements that return no rows.
  void exec(const std::string& sql);
  // Throws UserError "<store>: <what>: <SQLite's message>".
  [[noreturn]] void fail(const std::string& what) const;

  sqlite3* handle() const { return db_; }
  const std::string& store() const { return store_; }

 private:
  sqlite3* db_ = nullptr;
  std::string store_;
};

class Statement {
 public:
  Statement(Database& db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters count from 1, as in SQL.
  Statement& bind(int index, const std::string& text);
  Statement& bind(int index, int64_t value);
  // True with a row to read, false when done; throws on an error.
  bool step();
  // Ready to bind and run again.
  void reset();

  // Columns count from 0; NULL reads as "" or 0.
  std::string text(int column) const;
  int64_t integer(int column) const;
  double real(int column) const;

 private:
  Database& db_;
  sqlite3_stmt* statement_ = nullptr;
};

// Rolled back when destroyed uncommitted, so a throw between BEGIN and COMMIT leaves the
// store as it was.
class Transaction {
 public:
  enum class Lock { Deferred, Immediate };
  explicit Transaction(Database& db, Lock lock = Lock::Deferred);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

}  // namespace stickler::sqlite
