// The daemon's speed as a build system sees it: cached Lookups over gRPC from concurrent
// clients, and the throughput of a model-only batch of tunes.
//
//   bash bench/service_bench.sh          # starts meshtuned on a free port, runs this
//   bazel-bin/bench/service_bench --server 127.0.0.1:PORT [--clients 8] [--requests 10000]
//       [--batch 20]
//
// 1. Tunes C[m,n] += A[m,k] * B[k,n] (m=n=k=256, 4 ranks) model-only unless a record exists.
// 2. `clients` threads, each with its own channel, send `requests` Lookups in all for that
//    problem (after 100 untimed ones each); every call must succeed. Prints the latency
//    percentiles over all calls and the lookups per second over the wall time.
// 3. `batch` model-only Tune calls of distinct matmul shapes, one after another, as
//    `meshtune batch --server` sends them; prints the wall time and problems per second.
// Exit status 0 when every call succeeded, 1 otherwise, 2 on bad flags.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "proto/meshtune.grpc.pb.h"

namespace {

namespace v1 = meshtune::v1;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string server;
  int clients = 8;
  int requests = 10000;
  int batch = 20;
};

std::unique_ptr<v1::Tuner::Stub> Connect(const std::string& server) {
  return v1::Tuner::NewStub(grpc::CreateChannel(server, grpc::InsecureChannelCredentials()));
}

v1::Problem Matmul(int m, int n, int k) {
  v1::Problem p;
  p.set_expr("C[m,n] += A[m,k] * B[k,n]");
  p.set_extents("m=" + std::to_string(m) + ",n=" + std::to_string(n) + ",k=" + std::to_string(k));
  return p;
}

// A model-only tune of `problem` on 4 ranks; the wall time, or a negative number on failure.
double Tune(v1::Tuner::Stub* stub, const v1::Problem& problem, int max_evaluations) {
  v1::TuneRequest request;
  *request.mutable_problem() = problem;
  request.set_ranks(4);
  request.set_model_only(true);
  request.set_max_evaluations(max_evaluations);
  grpc::ClientContext context;
  const Clock::time_point t0 = Clock::now();
  std::unique_ptr<grpc::ClientReader<v1::TuneEvent>> reader = stub->Tune(&context, request);
  v1::TuneEvent event;
  bool result = false;
  while (reader->Read(&event)) result = result || event.has_result();
  const grpc::Status status = reader->Finish();
  if (!status.ok() || !result) {
    std::fprintf(stderr, "service_bench: Tune %s failed: %s\n", problem.extents().c_str(),
                 status.error_message().c_str());
    return -1;
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double Percentile(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * (sorted.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--server")) f.server = argv[i + 1];
    if (!std::strcmp(argv[i], "--clients")) f.clients = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--requests")) f.requests = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--batch")) f.batch = std::atoi(argv[i + 1]);
  }
  if (f.server.empty() || f.clients < 1 || f.requests < f.clients || f.batch < 0) {
    std::fprintf(
        stderr,
        "usage: service_bench --server HOST:PORT [--clients 8] [--requests 10000] [--batch 20]\n");
    return 2;
  }
  const v1::Problem cached = Matmul(256, 256, 256);
  v1::LookupRequest lookup;
  *lookup.mutable_problem() = cached;
  lookup.set_ranks(4);
  {
    grpc::ClientContext context;
    v1::LookupResponse response;
    std::unique_ptr<v1::Tuner::Stub> stub = Connect(f.server);
    if (!stub->Lookup(&context, lookup, &response).ok() && Tune(stub.get(), cached, 200) < 0)
      return 1;
  }

  // Lookups.
  std::vector<std::vector<double>> latencies(f.clients);
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start, end;
  std::vector<std::thread> threads;
  for (int c = 0; c < f.clients; ++c) {
    threads.emplace_back([&, c] {
      std::unique_ptr<v1::Tuner::Stub> stub = Connect(f.server);
      auto call = [&]() {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::LookupResponse response;
        const grpc::Status status = stub->Lookup(&context, lookup, &response);
        if (!status.ok() || response.record().trace().text().empty()) {
          if (failures.fetch_add(1) == 0)
            std::fprintf(stderr, "Lookup failed: %s\n", status.error_message().c_str());
        }
      };
      for (int i = 0; i < 100; ++i) call();  // connect, warm up
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      const int n = f.requests / f.clients + (c < f.requests % f.clients ? 1 : 0);
      latencies[c].reserve(n);
      for (int i = 0; i < n; ++i) {
        const Clock::time_point t0 = Clock::now();
        call();
        latencies[c].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    });
  }
  while (ready.load() < f.clients) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  start = Clock::now();
  go.store(true);
  for (std::thread& t : threads) t.join();
  end = Clock::now();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const double wall = std::chrono::duration<double>(end - start).count();
  std::printf(
      "lookup: %zu calls from %d clients in %.3f s: %.0f lookups/s; latency p50 %.3f ms, p99 %.3f "
      "ms, "
      "max %.3f ms; %d failed\n",
      all.size(), f.clients, wall, all.size() / wall, 1e3 * Percentile(all, 0.5),
      1e3 * Percentile(all, 0.99), 1e3 * all.back(), failures.load());

  // A model-only batch of distinct problems.
  if (f.batch > 0) {
    std::unique_ptr<v1::Tuner::Stub> stub = Connect(f.server);
    const int sizes[] = {128, 256, 512, 1024, 2048};
    double sum = 0;
    int done = 0;
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < f.batch; ++i) {
      const int m = sizes[i % 5], n = sizes[(i / 5 + i) % 5],
                k = sizes[(i / 5 + 2 * i) % 5] * (1 + i / 25);
      const double s = Tune(stub.get(), Matmul(m, n, k), 1000);
      if (s < 0) {
        failures.fetch_add(1);
        continue;
      }
      sum += s;
      ++done;
    }
    const double batch_wall = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf(
        "batch: %d of %d model-only tunes (4 ranks, default 1000 evaluations) in %.1f s: %.2f "
        "problems/s "
        "(mean %.2f s a tune)\n",
        done, f.batch, batch_wall, done / batch_wall, done ? sum / done : 0.0);
  }
  return failures.load() == 0 ? 0 : 1;
}
