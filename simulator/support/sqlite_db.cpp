#include "simulator/support/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

#include "simulator/support/errors.h"

namespace stickler::sqlite {

Database::Database(const std::string& path, std::string store) : store_(std::move(store)) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(store_ + ": cannot open " + path + ": " + why);
  }
  // Another process (a second server, a sweep) may hold the write lock for a moment.
  sqlite3_busy_timeout(db_, 5000);
}

Database::~Database() {
  sqlite3_close(db_);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), store_(std::move(other.store_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    store_ = std::move(other.store_);
  }
  return *this;
}

void Database::exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error != nullptr ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    throw UserError(store_ + ": " + why);
  }
}

void Database::fail(const std::string& what) const {
  throw UserError(store_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

Statement::Statement(Database& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), static_cast<int>(sql.size()), &statement_,
                         nullptr) != SQLITE_OK) {
    db.fail("prepare \"" + sql.substr(0, 60) + "\"");
  }
}

Statement::~Statement() {
  sqlite3_finalize(statement_);
}

Statement& Statement::bind(int index, const std::string& text) {
  if (sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()),
                        SQLITE_TRANSIENT) != SQLITE_OK) {
    db_.fail("bind parameter " + std::to_string(index));
  }
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(statement_, index, value) != SQLITE_OK) {
    db_.fail("bind parameter " + std::to_string(index));
  }
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("run a statement");
}

void Statement::reset() {
  sqlite3_reset(statement_);
  sqlite3_clear_bindings(statement_);
}

std::string Statement::text(int column) const {
  const auto* value = sqlite3_column_text(statement_, column);
  const int size = sqlite3_column_bytes(statement_, column);
  return value != nullptr ? std::string(reinterpret_cast<const char*>(value), size) : "";
}

int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(statement_, column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(statement_, column);
}

Transaction::Transaction(Database& db, Lock lock) : db_(db) {
  db.exec(lock == Lock::Immediate ? "BEGIN IMMEDIATE;" : "BEGIN;");
}

Transaction::~Transaction() {
  if (!open_) return;
  try {
    db_.exec("ROLLBACK;");
  } catch (...) {  // NOLINT(bugprone-empty-catch): SQLite rolls back itself when this fails
  }
}

void Transaction::commit() {
  db_.exec("COMMIT;");
  open_ = false;
}

}  // namespace stickler::sqlite
