#include "coordinator/serve/documents.h"

#include <algorithm>
#include <exception>

#include "common/error.h"

namespace gtadoc {

namespace {

/// Threads that read and validate one grammar not cached yet.
constexpr unsigned kReadThreads = 2;

template <class T>
uint64_t held(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

DocumentStore::DocumentStore(std::filesystem::path archive, const Manifest& manifest,
                             uint64_t cache_bytes)
    : archive_(std::move(archive)), manifest_(manifest), capacity_(cache_bytes) {}

std::optional<DocId> DocumentStore::find(std::string_view name) const {
  const DocId d = manifest_.doc_names.find(name);
  if (d >= manifest_.doc_names.size()) return std::nullopt;
  return d;
}

std::shared_ptr<const DocumentStore::Shard> DocumentStore::load(uint32_t s) const {
  auto shard = std::make_shared<Shard>();
  shard->grammar = read_shard_grammar(archive_, manifest_, s, kReadThreads);
  shard->ws_dict = read_shard_layout(archive_, manifest_, s, 0, 0).ws_dict;
  shard->gap_at = document_gap_starts(manifest_, s);
  const ShardGrammar& g = shard->grammar;
  shard->bytes = sizeof(Shard) + held(g.local_words) + held(g.rule_offsets) + held(g.symbols) +
                 held(g.level_offsets) + held(g.rule_length) + held(g.rule_uses) +
                 held(g.doc_root_offsets) + held(shard->gap_at);
  for (const std::string& w : shard->ws_dict) shard->bytes += sizeof(w) + w.capacity();
  return shard;
}

std::shared_ptr<const DocumentStore::Shard> DocumentStore::shard(uint32_t s) {
  std::unique_lock lock(mu_);
  if (auto it = index_.find(s); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hits_;
    return it->second->second;
  }
  ++misses_;
  if (auto it = loading_.find(s); it != loading_.end()) {  // another request reads it now
    std::shared_future<std::shared_ptr<const Shard>> pending = it->second;
    lock.unlock();
    return pending.get();  // its error, if it failed
  }
  std::promise<std::shared_ptr<const Shard>> promise;
  loading_.emplace(s, promise.get_future().share());
  lock.unlock();
  std::shared_ptr<const Shard> shard;
  try {
    shard = load(s);
  } catch (...) {
    lock.lock();
    loading_.erase(s);
    promise.set_exception(std::current_exception());
    throw;
  }
  lock.lock();
  loading_.erase(s);
  promise.set_value(shard);
  if (shard->bytes <= capacity_) {
    lru_.emplace_front(s, shard);
    index_[s] = lru_.begin();
    bytes_ += shard->bytes;
    while (bytes_ > capacity_) {
      bytes_ -= lru_.back().second->bytes;
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return shard;
}

std::unique_ptr<OpenDocument> DocumentStore::open(DocId doc) {
  GTADOC_EXPECTS(doc < manifest_.docs.size(),
                 "DocumentStore::open: no document " + std::to_string(doc));
  const uint32_t s = manifest_.docs[doc].shard;
  const ShardEntry& entry = manifest_.shards.at(s);
  const std::shared_ptr<const Shard> shard = this->shard(s);
  auto open = std::make_unique<OpenDocument>();
  expand_checked(archive_, manifest_, s, shard->grammar, doc, open->words_);
  const uint64_t first_gap = shard->gap_at.at(doc - entry.first_doc);
  open->gaps_ =
      read_shard_layout(archive_, manifest_, s, first_gap, open->words_.size() + 1, false).gaps;
  open->text_ = std::make_unique<DocumentText>(archive_, manifest_, doc, shard->ws_dict,
                                               open->words_, open->gaps_);
  open->shard_ = shard;
  return open;
}

DocumentStore::Stats DocumentStore::stats() const {
  std::lock_guard lock(mu_);
  return {bytes_, lru_.size(), capacity_, hits_.load(), misses_.load()};
}

}  // namespace gtadoc
