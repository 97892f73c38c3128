#include "adapters/review/proposal_store.h"

#include <filesystem>

#include <nlohmann/json.hpp>

namespace stickler {
namespace {

using nlohmann::json;

constexpr const char* kStateNames[] = {"pending", "changes_requested", "approved", "rejected",
                                       "superseded"};

constexpr const char* kColumns =
    "id, state, adapters, claims, rationale, evidence, author, submitted, branch, commit_id, "
    "supersedes, superseded_by, version";

json adaptersToJson(const std::vector<ProposedAdapter>& adapters) {
  json list = json::array();
  for (const auto& adapter : adapters) {
    list.push_back({{"name", adapter.name}, {"draft_tip", adapter.draft_tip}});
  }
  return list;
}

json claimsToJson(const std::vector<ModelClaim>& claims) {
  json list = json::array();
  for (const auto& claim : claims) {
    list.push_back({{"model", claim.model}, {"profile", claim.profile}});
  }
  return list;
}

// A JSON column as the store wrote it; anything else is a damaged row, named.
json column(const std::string& text, const std::string& store, int64_t id, const char* what) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_array()) {
    throw UserError(store + ": proposal " + std::to_string(id) + " has a damaged " + what +
                    " list: " + text.substr(0, 80));
  }
  return value;
}

std::optional<int64_t> optionalId(int64_t value) {
  return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
}

}  // namespace

void requireRevision(const Proposal& current, int64_t expected_version) {
  if (current.version == expected_version) return;
  throw ReviewConflict("proposal " + std::to_string(current.id) +
                       " changed since you read it (it is " + stateName(current.state) +
                       " now, revision " + std::to_string(current.version) +
                       "): read it again and decide then");
}

std::string stateName(ProposalState state) {
  return kStateNames[static_cast<int>(state)];
}

std::optional<ProposalState> stateNamed(const std::string& name) {
  for (int i = 0; i < 5; ++i) {
    if (name == kStateNames[i]) return static_cast<ProposalState>(i);
  }
  return std::nullopt;
}

ProposalStore::ProposalStore(const std::string& path)
    : db_([&] {
        if (path != ":memory:") {
          std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        }
        return sqlite::Database(path, "the review queue " + path);
      }()) {
  // WAL: readers (the review page, review_status) never wait for a decision being written, and
  // a crash mid-write leaves the last committed state.
  db_.exec("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;");
  db_.exec(
      "CREATE TABLE IF NOT EXISTS proposals("
      " id INTEGER PRIMARY KEY AUTOINCREMENT,"
      " state TEXT NOT NULL CHECK (state IN ('pending', 'changes_requested', 'approved',"
      "  'rejected', 'superseded')),"
      " adapters TEXT NOT NULL, claims TEXT NOT NULL, rationale TEXT NOT NULL,"
      " evidence TEXT NOT NULL, author TEXT NOT NULL, submitted TEXT NOT NULL,"
      " branch TEXT NOT NULL, commit_id TEXT NOT NULL DEFAULT '',"
      " supersedes INTEGER REFERENCES proposals(id),"
      " superseded_by INTEGER REFERENCES proposals(id),"
      " version INTEGER NOT NULL DEFAULT 1);"
      "CREATE TABLE IF NOT EXISTS review_events("
      " proposal INTEGER NOT NULL REFERENCES proposals(id), time TEXT NOT NULL,"
      " actor TEXT NOT NULL, action TEXT NOT NULL, comment TEXT NOT NULL);"
      "CREATE INDEX IF NOT EXISTS review_events_by_proposal ON review_events(proposal);"
      "CREATE TABLE IF NOT EXISTS gate_runs("
      " proposal INTEGER NOT NULL REFERENCES proposals(id), key TEXT NOT NULL,"
      " passed INTEGER NOT NULL, result TEXT NOT NULL, time TEXT NOT NULL,"
      " PRIMARY KEY (proposal, key));"
      "CREATE TABLE IF NOT EXISTS known_models("
      " model TEXT NOT NULL, profile TEXT NOT NULL, sha256 TEXT NOT NULL,"
      " catalog_commit TEXT NOT NULL, time TEXT NOT NULL, source TEXT NOT NULL,"
      " PRIMARY KEY (model, profile));"
      "CREATE TABLE IF NOT EXISTS approvals_under_way("
      " proposal INTEGER PRIMARY KEY REFERENCES proposals(id), old_main TEXT NOT NULL,"
      " new_main TEXT NOT NULL, actor TEXT NOT NULL, comment TEXT NOT NULL,"
      " started TEXT NOT NULL);");
}

Proposal ProposalStore::readRow(sqlite::Statement& row, bool with_events) {
  Proposal proposal;
  proposal.id = row.integer(0);
  const auto state = stateNamed(row.text(1));
  if (!state) {
    throw UserError(db_.store() + ": proposal " + std::to_string(proposal.id) +
                    " has an unknown state '" + row.text(1) + "'");
  }
  proposal.state = *state;
  try {
    for (const auto& adapter : column(row.text(2), db_.store(), proposal.id, "adapter")) {
      proposal.adapters.push_back({adapter.value("name", ""), adapter.value("draft_tip", "")});
    }
    for (const auto& claim : column(row.text(3), db_.store(), proposal.id, "claim")) {
      proposal.claims.push_back({claim.value("model", ""), claim.value("profile", "")});
    }
  } catch (const json::exception&) {  // an element that is no object, a field that is no text
    throw UserError(db_.store() + ": proposal " + std::to_string(proposal.id) +
                    " has a damaged adapter or claim list");
  }
  proposal.rationale = row.text(4);
  for (const auto& report : column(row.text(5), db_.store(), proposal.id, "evidence")) {
    if (report.is_string()) proposal.evidence.push_back(report);
  }
  proposal.author = row.text(6);
  proposal.submitted = row.text(7);
  proposal.branch = row.text(8);
  proposal.commit = row.text(9);
  proposal.supersedes = optionalId(row.integer(10));
  proposal.superseded_by = optionalId(row.integer(11));
  proposal.version = row.integer(12);
  if (!with_events) return proposal;
  sqlite::Statement events(db_,
                           "SELECT time, actor, action, comment FROM review_events "
                           "WHERE proposal = ? ORDER BY rowid");
  events.bind(1, proposal.id);
  while (events.step()) {
    proposal.events.push_back({events.text(0), events.text(1), events.text(2), events.text(3)});
  }
  return proposal;
}

void ProposalStore::addEvent(int64_t id, const ReviewEvent& event) {
  sqlite::Statement insert(
      db_,
      "INSERT INTO review_events(proposal, time, actor, action, comment) VALUES (?, ?, ?, ?, ?)");
  insert.bind(1, id).bind(2, event.time).bind(3, event.actor).bind(4, event.action);
  insert.bind(5, event.comment).step();
}

Proposal ProposalStore::submit(const NewProposal& proposal, const std::string& now,
                               const std::function<WrittenBranch(int64_t id)>& write_branch) {
  if (proposal.adapters.empty()) throw UserError("a proposal needs at least one adapter");
  if (proposal.claims.empty()) {
    throw UserError("a proposal needs at least one model it brings up, with its profile");
  }
  if (proposal.rationale.empty()) throw UserError("a proposal needs a rationale");
  sqlite::Transaction transaction(db_, sqlite::Transaction::Lock::Immediate);
  if (proposal.supersedes) {
    const Proposal old = get(*proposal.supersedes);
    if (approvalUnderWay(old.id)) {
      throw ReviewConflict("proposal " + std::to_string(old.id) +
                           " is being approved: it cannot be superseded now");
    }
    if (old.state != ProposalState::kPending && old.state != ProposalState::kChangesRequested) {
      throw UserError("proposal " + std::to_string(old.id) + " is " + stateName(old.state) +
                      ": only a pending proposal or one with changes requested can be superseded");
    }
  }
  sqlite::Statement insert(
      db_,
      "INSERT INTO proposals(state, adapters, claims, rationale, evidence, author, submitted, "
      "branch, supersedes) VALUES ('pending', ?, ?, ?, ?, ?, ?, '', NULLIF(?, 0))");
  insert.bind(1, adaptersToJson(proposal.adapters).dump());
  insert.bind(2, claimsToJson(proposal.claims).dump()).bind(3, proposal.rationale);
  insert.bind(4, json(proposal.evidence).dump()).bind(5, proposal.author).bind(6, now);
  insert.bind(7, proposal.supersedes.value_or(0));
  insert.step();
  sqlite::Statement last(db_, "SELECT last_insert_rowid()");
  last.step();
  const int64_t id = last.integer(0);
  const WrittenBranch written = write_branch(id);
  sqlite::Statement branch(
      db_, "UPDATE proposals SET branch = ?, commit_id = ?, adapters = ? WHERE id = ?");
  branch.bind(1, "proposals/" + std::to_string(id)).bind(2, written.commit);
  branch.bind(3, adaptersToJson(written.adapters).dump()).bind(4, id).step();
  addEvent(id, {now, proposal.author, "submitted", proposal.rationale});
  if (proposal.supersedes) {
    sqlite::Statement old(db_,
                          "UPDATE proposals SET state = 'superseded', superseded_by = ?, "
                          "version = version + 1 WHERE id = ?");
    old.bind(1, id).bind(2, *proposal.supersedes).step();
    addEvent(*proposal.supersedes,
             {now, proposal.author, "superseded", "answered by proposal " + std::to_string(id)});
  }
  transaction.commit();
  return get(id);
}

std::optional<Proposal> ProposalStore::find(int64_t id) {
  sqlite::Statement select(db_, std::string("SELECT ") + kColumns + " FROM proposals WHERE id = ?");
  select.bind(1, id);
  if (!select.step()) return std::nullopt;
  return readRow(select);
}

Proposal ProposalStore::get(int64_t id) {
  auto proposal = find(id);
  if (!proposal) throw UserError("no proposal " + std::to_string(id) + " in the review queue");
  return *proposal;
}

std::vector<Proposal> ProposalStore::list(std::optional<ProposalState> state, bool with_events) {
  sqlite::Statement select(db_, std::string("SELECT ") + kColumns +
                                    " FROM proposals WHERE ? = '' OR state = ? ORDER BY id DESC");
  const std::string wanted = state ? stateName(*state) : "";
  select.bind(1, wanted).bind(2, wanted);
  std::vector<Proposal> proposals;
  while (select.step()) proposals.push_back(readRow(select, with_events));
  return proposals;
}

Proposal ProposalStore::decide(int64_t id, int64_t expected_version, ProposalState decision,
                               const std::string& actor, const std::string& comment,
                               const std::string& now) {
  sqlite::Transaction transaction(db_, sqlite::Transaction::Lock::Immediate);
  const Proposal current = get(id);
  requireRevision(current, expected_version);
  if (const auto under_way = approvalUnderWay(id)) {
    throw ReviewConflict("proposal " + std::to_string(id) + " is being approved by " +
                         under_way->actor + " (since " + under_way->started + ")");
  }
  if (decision == ProposalState::kApproved) {
    throw UserError("approval goes through the gate: stickler review approve " +
                    std::to_string(id));
  }
  const bool allowed =
      (current.state == ProposalState::kPending &&
       (decision == ProposalState::kChangesRequested || decision == ProposalState::kRejected)) ||
      (current.state == ProposalState::kChangesRequested && decision == ProposalState::kRejected);
  if (!allowed) {
    throw UserError("proposal " + std::to_string(id) + " is " + stateName(current.state) +
                    ": it cannot become " + stateName(decision));
  }
  if (decision != ProposalState::kApproved && comment.empty()) {
    throw UserError("say why: a request for changes or a rejection needs a comment");
  }
  sqlite::Statement update(
      db_, "UPDATE proposals SET state = ?, version = version + 1 WHERE id = ? AND version = ?");
  update.bind(1, stateName(decision)).bind(2, id).bind(3, expected_version).step();
  addEvent(id, {now, actor, stateName(decision), comment});
  transaction.commit();
  return get(id);
}

void ProposalStore::storeGate(int64_t id, const GateRecord& gate) {
  sqlite::Statement insert(db_,
                           "INSERT OR REPLACE INTO gate_runs(proposal, key, passed, result, time) "
                           "VALUES (?, ?, ?, ?, ?)");
  insert.bind(1, id).bind(2, gate.key).bind(3, int64_t{gate.passed ? 1 : 0});
  insert.bind(4, gate.result).bind(5, gate.time).step();
}

namespace {
GateRecord gateRow(sqlite::Statement& row) {
  return {row.text(0), row.integer(1) != 0, row.text(2), row.text(3)};
}
}  // namespace

std::optional<GateRecord> ProposalStore::findGate(int64_t id, const std::string& key) {
  sqlite::Statement select(
      db_, "SELECT key, passed, result, time FROM gate_runs WHERE proposal = ? AND key = ?");
  select.bind(1, id).bind(2, key);
  if (!select.step()) return std::nullopt;
  return gateRow(select);
}

std::optional<GateRecord> ProposalStore::latestGate(int64_t id) {
  sqlite::Statement select(db_,
                           "SELECT key, passed, result, time FROM gate_runs WHERE proposal = ? "
                           "ORDER BY time DESC, rowid DESC LIMIT 1");
  select.bind(1, id);
  if (!select.step()) return std::nullopt;
  return gateRow(select);
}

std::vector<KnownModel> ProposalStore::knownModels() {
  sqlite::Statement select(db_,
                           "SELECT model, profile, sha256, catalog_commit, time, source "
                           "FROM known_models ORDER BY model, profile");
  std::vector<KnownModel> models;
  while (select.step()) {
    models.push_back({select.text(0), select.text(1), select.text(2), select.text(3),
                      select.text(4), select.text(5)});
  }
  return models;
}

void ProposalStore::upsertKnownModel(const KnownModel& model) {
  sqlite::Statement upsert(db_,
                           "INSERT OR REPLACE INTO known_models(model, profile, sha256, "
                           "catalog_commit, time, source) VALUES (?, ?, ?, ?, ?, ?)");
  upsert.bind(1, model.model).bind(2, model.profile).bind(3, model.sha256);
  upsert.bind(4, model.catalog_commit).bind(5, model.time).bind(6, model.source).step();
}

void ProposalStore::recordKnownModels(const std::vector<KnownModel>& models) {
  sqlite::Transaction transaction(db_, sqlite::Transaction::Lock::Immediate);
  for (const KnownModel& model : models) upsertKnownModel(model);
  transaction.commit();
}

std::optional<ApprovalIntent> ProposalStore::approvalUnderWay(int64_t id) {
  sqlite::Statement select(db_,
                           "SELECT proposal, old_main, new_main, actor, comment, started "
                           "FROM approvals_under_way WHERE proposal = ?");
  select.bind(1, id);
  if (!select.step()) return std::nullopt;
  return ApprovalIntent{select.integer(0), select.text(1), select.text(2),
                        select.text(3),    select.text(4), select.text(5)};
}

std::vector<ApprovalIntent> ProposalStore::approvalsUnderWay() {
  sqlite::Statement select(db_, "SELECT proposal FROM approvals_under_way ORDER BY proposal");
  std::vector<int64_t> ids;
  while (select.step()) ids.push_back(select.integer(0));
  std::vector<ApprovalIntent> intents;
  for (const int64_t id : ids) {
    if (auto intent = approvalUnderWay(id)) intents.push_back(*intent);
  }
  return intents;
}

void ProposalStore::beginApproval(const ApprovalIntent& intent, int64_t expected_version) {
  sqlite::Transaction transaction(db_, sqlite::Transaction::Lock::Immediate);
  const Proposal current = get(intent.proposal);
  const std::string id = std::to_string(intent.proposal);
  if (const auto under_way = approvalUnderWay(intent.proposal)) {
    throw ReviewConflict("proposal " + id + " is already being approved by " + under_way->actor +
                         " (since " + under_way->started + ")");
  }
  requireRevision(current, expected_version);
  if (current.state != ProposalState::kPending) {
    throw UserError("proposal " + id + " is " + stateName(current.state) +
                    ": only a pending proposal can be approved");
  }
  sqlite::Statement insert(db_,
                           "INSERT INTO approvals_under_way(proposal, old_main, new_main, actor, "
                           "comment, started) VALUES (?, ?, ?, ?, ?, ?)");
  insert.bind(1, intent.proposal).bind(2, intent.old_main).bind(3, intent.new_main);
  insert.bind(4, intent.actor).bind(5, intent.comment).bind(6, intent.started).step();
  transaction.commit();
}

Proposal ProposalStore::finishApproval(int64_t id, const std::vector<KnownModel>& passed,
                                       const std::string& now, const std::string& note) {
  sqlite::Transaction transaction(db_, sqlite::Transaction::Lock::Immediate);
  const auto intent = approvalUnderWay(id);
  if (!intent) throw UserError("no approval of proposal " + std::to_string(id) + " is under way");
  sqlite::Statement update(
      db_, "UPDATE proposals SET state = 'approved', version = version + 1 WHERE id = ?");
  update.bind(1, id).step();
  addEvent(id, {now, intent->actor, "approved",
                note.empty() ? intent->comment : intent->comment + "\n\n" + note});
  for (const KnownModel& model : passed) upsertKnownModel(model);
  sqlite::Statement done(db_, "DELETE FROM approvals_under_way WHERE proposal = ?");
  done.bind(1, id).step();
  transaction.commit();
  return get(id);
}

void ProposalStore::abandonApproval(int64_t id, const std::string& why, const std::string& now) {
  sqlite::Transaction transaction(db_, sqlite::Transaction::Lock::Immediate);
  const auto intent = approvalUnderWay(id);
  if (!intent) return;
  sqlite::Statement done(db_, "DELETE FROM approvals_under_way WHERE proposal = ?");
  done.bind(1, id).step();
  sqlite::Statement bump(db_, "UPDATE proposals SET version = version + 1 WHERE id = ?");
  bump.bind(1, id).step();
  addEvent(id, {now, intent->actor, "approval_rolled_back", why});
  transaction.commit();
}

int64_t ProposalStore::dataVersion() {
  sqlite::Statement version(db_, "PRAGMA data_version");
  return version.step() ? version.integer(0) : 0;
}

std::string ProposalStore::integrityCheck() {
  sqlite::Statement check(db_, "PRAGMA integrity_check");
  return check.step() ? check.text(0) : "no answer";
}

}  // namespace stickler
