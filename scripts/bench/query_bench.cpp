// gtadoc_query_bench: resident-query benchmark (the G-TADOC paper's methodology: the compressed
// data already sits in the engine's memory, time = initialization + traversal of a query).
//
//   gtadoc_query_bench ARCHIVE [--raw DIR] [--name NAME] [--reps R] [--cpu-reps R]
//                      [--engines cpu1,cpuN,gpu,gpu-shards] [--tasks t1,t2,...] [--n N]
//                      [--json FILE]
//
// Every shard of ARCHIVE is loaded once into every engine (cpu1 = CPU engine on one thread, the
// sequential TADOC baseline; cpuN = every thread; gpu = device-resident shards), then each task
// runs R times per engine after one warm-up (--cpu-reps: fewer for the CPU engines); the median
// wall time of one query over all shards is kept: `Engine::run_batch` over the rank's shards (the
// batched pass: the GPU engine traverses them as one merged DAG, built by the warm-up run and
// cached; the CPU engine runs them in turn), or with gpu-shards the GPU engine's `Engine::run`
// shard by shard (no merged DAG). The records of every engine are merged, reduced
// and compared with the first engine's: `match` must hold for every row.
//
// With --raw DIR (the corpus as text) the raw-text GPU baseline runs the same tasks; its
// resident time is tokenize + group + reduce (text upload and host formatting excluded, result
// download included, like the engines). The device's copy bandwidth is measured, and every
// task's floor is the bytes of the grammar bodies (4 bytes per symbol, what any traversal must
// read at least once) over that bandwidth. One JSON line per measurement goes to --json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cluster/reduce.h"
#include "common/big_alloc.h"
#include "common/error.h"
#include "formats/archive.h"
#include "worker/engine.h"
#include "worker/query.h"

#ifdef GTADOC_HAVE_CUDA
#include <cuda_runtime.h>

#include "tests/reference/gpu/raw_gpu.cuh"
#include "tests/reference/raw_tool.h"
#endif

namespace gtadoc {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Measurement {
  double median_s = 0, min_s = 0;
  double first_s = 0;  ///< the warm-up run: a first query, preparing what later ones reuse
  double init_s = 0, traversal_s = 0;  ///< of the median run
  std::string traversal;
  uint64_t records = 0;
  bool match = true;
};

struct BenchEngine {
  std::string name;
  std::unique_ptr<Engine> engine;
  std::vector<std::unique_ptr<LoadedShard>> shards;
  double load_s = 0;
  bool per_shard = false;  ///< Engine::run shard by shard instead of one Engine::run_batch
};

/// One query over every shard: returns the records of all shards.
RecordBatch run_once(BenchEngine& e, const QueryOptions& q, const Normalization& norm, double& wall,
                     double& init, double& trav, std::string& used) {
  RecordBatch all;
  wall = init = trav = 0;
  std::map<std::string, int> traversals;
  if (!e.per_shard) {
    std::vector<LoadedShard*> list;
    for (auto& s : e.shards) list.push_back(s.get());
    std::vector<ShardRunStats> stats;
    const double t0 = now_s();
    all = e.engine->run_batch(list, q, norm, stats, q.threads);
    wall = now_s() - t0;
    for (const ShardRunStats& st : stats) {
      init += st.init_s;
      trav += st.traversal_s;
      ++traversals[traversal_name(st.traversal)];
    }
  }
  for (auto& s : e.shards) {
    if (!e.per_shard) break;
    ShardRunStats st;
    const double t0 = now_s();
    RecordBatch b = e.engine->run(*s, q, norm, st);
    wall += now_s() - t0;
    init += st.init_s;
    trav += st.traversal_s;
    ++traversals[traversal_name(st.traversal)];
    if (all.size() == 0) {
      all = std::move(b);
    } else {
      all.append(b);
    }
  }
  used.clear();
  for (auto& [k, v] : traversals) used += (used.empty() ? "" : "+") + k;
  return all;
}

bool same_records(const RecordBatch& a, const RecordBatch& b) {
  return a.width == b.width && a.keys == b.keys && a.counts == b.counts;
}

#ifdef GTADOC_HAVE_CUDA
// Every CUDA call is checked (CUDA_TRY: a failure throws with the call and its location) and every
// allocation is owned, so a failure mid-measurement leaks nothing.
struct CudaFree {
  void operator()(void* p) const noexcept { cudaFree(p); }
};
struct CudaFreeHost {
  void operator()(void* p) const noexcept { cudaFreeHost(p); }
};
using DeviceBytes = std::unique_ptr<void, CudaFree>;
using PinnedBytes = std::unique_ptr<void, CudaFreeHost>;

DeviceBytes device_bytes(size_t bytes) {
  void* p = nullptr;
  CUDA_TRY(cudaMalloc(&p, bytes));
  return DeviceBytes(p);
}

/// A CUDA event destroyed with its owner.
class Event {
 public:
  Event() { CUDA_TRY(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_{};
};

/// Device-to-device copy bandwidth in bytes/s (bytes read + bytes written per second).
double device_bandwidth(std::string& device_name) {
  cudaDeviceProp prop{};
  CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  device_name = prop.name;
  const size_t bytes = size_t{1} << 30;
  DeviceBytes a = device_bytes(bytes), b = device_bytes(bytes);
  CUDA_TRY(cudaMemset(a.get(), 1, bytes));
  Event e0, e1;
  CUDA_TRY(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
  float best_ms = 1e30f;
  for (int i = 0; i < 5; ++i) {
    CUDA_TRY(cudaEventRecord(e0.get()));
    CUDA_TRY(cudaMemcpy(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice));
    CUDA_TRY(cudaEventRecord(e1.get()));
    CUDA_TRY(cudaEventSynchronize(e1.get()));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, e0.get(), e1.get()));
    best_ms = std::min(best_ms, ms);
  }
  return 2.0 * static_cast<double>(bytes) / (best_ms / 1e3);
}

/// Device-to-host bandwidth (bytes/s) of a 256 MiB copy into pageable (a touched std::vector)
/// or pinned host memory: what downloading result records can reach.
double download_bandwidth(bool pinned) {
  const size_t bytes = size_t{256} << 20;
  DeviceBytes d = device_bytes(bytes);
  CUDA_TRY(cudaMemset(d.get(), 1, bytes));
  std::vector<char> pageable;
  PinnedBytes pinned_host;
  void* h = nullptr;
  if (pinned) {
    CUDA_TRY(cudaMallocHost(&h, bytes));
    pinned_host.reset(h);
  } else {
    pageable.assign(bytes, 0);
    h = pageable.data();
  }
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    const double t0 = now_s();
    CUDA_TRY(cudaMemcpy(h, d.get(), bytes, cudaMemcpyDeviceToHost));
    best = std::min(best, now_s() - t0);
  }
  return static_cast<double>(bytes) / best;
}
#endif

int bench_main(int argc, char** argv) {
  CLI::App app{"gtadoc resident-query benchmark"};
  std::string archive, raw_dir, name, engines_arg = "cpu1,cpuN,gpu", tasks_arg, json_file;
  int reps = 5, cpu_reps = -1;
  uint32_t n = 3;
  app.add_option("ARCHIVE", archive)->required();
  app.add_option("--raw", raw_dir, "corpus text for the raw GPU baseline");
  app.add_option("--name", name, "corpus name in the output");
  app.add_option("--reps", reps);
  app.add_option("--cpu-reps", cpu_reps, "repetitions of the CPU engines (default: --reps)");
  app.add_option("--engines", engines_arg);
  app.add_option("--tasks", tasks_arg);
  app.add_option("--n", n);
  app.add_option("--json", json_file);
  CLI11_PARSE(app, argc, argv);
  if (name.empty()) name = archive;
  spdlog::set_level(spdlog::level::warn);  // engines log their selector choice per shard

  std::vector<Task> tasks;
  std::stringstream ts(tasks_arg.empty() ? "word-count,sort,inverted-index,term-vector,"
                                           "sequence-count,ranked-inverted-index"
                                         : tasks_arg);
  for (std::string t; std::getline(ts, t, ',');) tasks.push_back(parse_task(t));

  const Manifest m = read_manifest(archive);
  const Normalization norm = normalize_dictionary(m.dict, false, false);
  uint64_t symbols = 0, rules = 0;
  std::vector<BenchEngine> engines;
  std::stringstream es(engines_arg);
  for (std::string e; std::getline(es, e, ',');) {
    BenchEngine be;
    be.name = e;
    if (e == "cpu1") {
      be.engine = make_cpu_engine(1);
    } else if (e == "cpuN") {
      be.engine = make_cpu_engine(0);
    } else if (e == "gpu" || e == "gpu-shards") {
      if (!gpu_available()) {
        std::cerr << "query_bench: no GPU, skipping engine " << e << "\n";
        continue;
      }
      be.engine = make_gpu_engine(0);
      be.per_shard = e == "gpu-shards";
    } else {
      throw UsageError("unknown engine " + e);
    }
    engines.push_back(std::move(be));
  }
  for (uint32_t s = 0; s < m.shards.size(); ++s) {
    for (auto& be : engines) {
      ShardGrammar g = read_shard_grammar(archive, m, s);
      if (&be == &engines.front()) {
        symbols += g.symbols.size();
        rules += g.num_rules();
      }
      const double t0 = now_s();
      be.shards.push_back(be.engine->load(std::move(g)));
      be.load_s += now_s() - t0;
    }
  }

  nlohmann::ordered_json info;
  info["corpus"] = name;
  info["shards"] = m.shards.size();
  info["documents"] = m.docs.size();
  info["symbols"] = symbols;
  info["rules"] = rules;
  info["grammar_bytes"] = 4 * symbols;
  double bandwidth = 0;
  std::string device = "none";
#ifdef GTADOC_HAVE_CUDA
  if (gpu_available()) bandwidth = device_bandwidth(device);
#endif
#ifdef GTADOC_HAVE_CUDA
  if (gpu_available()) {
    info["d2h_pageable_Bps"] = download_bandwidth(false);
    info["d2h_pinned_Bps"] = download_bandwidth(true);
  }
#endif
  info["device"] = device;
  info["device_copy_bandwidth_Bps"] = bandwidth;
  for (auto& be : engines) info["load_s_" + be.name] = be.load_s;
  std::ofstream json;
  if (!json_file.empty()) json.open(json_file, std::ios::app);
  auto emit = [&](const nlohmann::ordered_json& j) {
    std::cout << j.dump() << std::endl;
    if (json) json << j.dump() << "\n" << std::flush;
  };
  emit({{"info", info}});

#ifdef GTADOC_HAVE_CUDA
  std::vector<RawDocument> raw_docs;
  if (!raw_dir.empty() && gpu_available()) raw_docs = read_raw_documents(raw_dir);
#endif

  for (Task task : tasks) {
    QueryOptions q;
    q.task = task;
    q.n = n;
    q.threads = 0;
    if (task == Task::kTermVector) q.top = 10;
    RecordBatch reference;
    bool have_reference = false;
    for (auto& be : engines) {
      QueryOptions qe = q;
      qe.threads = be.name == "cpu1" ? 1 : 0;
      Measurement r;
      std::vector<double> walls;
      std::vector<std::pair<double, double>> splits;
      RecordBatch out;
      const bool is_cpu = be.name.rfind("cpu", 0) == 0;
      const int runs = is_cpu && cpu_reps >= 1 ? cpu_reps : reps;
      for (int i = 0; i <= runs; ++i) {  // run 0 is the warm-up
        double w, in, tr;
        RecordBatch b = run_once(be, qe, norm, w, in, tr, r.traversal);
        if (i == 0) {
          out = std::move(b);
          r.first_s = w;
          continue;
        }
        walls.push_back(w);
        splits.emplace_back(in, tr);
      }
      reduce_records(out, 0);
      r.records = out.size();
      if (!have_reference) {
        reference = std::move(out);
        have_reference = true;
      } else {
        r.match = same_records(reference, out);
      }
      r.median_s = median(walls);
      r.min_s = *std::min_element(walls.begin(), walls.end());
      for (size_t i = 0; i < walls.size(); ++i)
        if (walls[i] == r.median_s) std::tie(r.init_s, r.traversal_s) = splits[i];
      nlohmann::ordered_json j;
      j["corpus"] = name;
      j["task"] = task_name(task);
      j["engine"] = be.name;
      j["batched"] = !be.per_shard;
      j["shards"] = be.shards.size();
      j["median_s"] = r.median_s;
      j["min_s"] = r.min_s;
      j["first_s"] = r.first_s;
      j["init_s"] = r.init_s;
      j["traversal_s"] = r.traversal_s;
      j["traversal"] = r.traversal;
      j["records"] = r.records;
      j["record_bytes"] = r.records * (4 * key_layout(q).width + 8);
      j["match"] = r.match;
      if (bandwidth > 0) j["floor_s"] = 4.0 * static_cast<double>(symbols) / bandwidth;
      emit(j);
    }
#ifdef GTADOC_HAVE_CUDA
    if (!raw_docs.empty()) {
      std::vector<double> walls;
      RawGpuTimings last;
      for (int i = 0; i <= reps; ++i) {
        RawGpuTimings t;
        (void)raw_gpu_output(raw_docs, q, OutputFormat::kTsv, &t);
        if (i == 0) continue;
        walls.push_back(t.tokenize_s + t.group_s + t.reduce_s);
        last = t;
      }
      nlohmann::ordered_json j;
      j["corpus"] = name;
      j["task"] = task_name(task);
      j["engine"] = "raw-gpu";
      j["median_s"] = median(walls);
      j["min_s"] = *std::min_element(walls.begin(), walls.end());
      j["upload_s"] = last.upload_s;
      j["tokenize_s"] = last.tokenize_s;
      j["group_s"] = last.group_s;
      j["reduce_s"] = last.reduce_s;
      j["format_s"] = last.format_s;
      j["rows"] = last.rows;
      emit(j);
    }
#endif
  }
  return 0;
}

}  // namespace
}  // namespace gtadoc

int main(int argc, char** argv) {
  // Resident queries, as gtadoc serve runs them: large freed blocks kept for the next query.
  gtadoc::big_block::set_capacity(gtadoc::big_block::resident_capacity());
  try {
    return gtadoc::bench_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gtadoc_query_bench: " << e.what() << "\n";
    return 1;
  }
}
