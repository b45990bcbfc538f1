// BladeFusedCall: a generic CPU op that runs a Numba-compiled kernel through a
// plain C function pointer. Python is only involved on the first call for a
// dispatch key (the compile callback); the steady-state path never takes the GIL.
// A cluster whose kernel fails to compile, breaks the op's contract on a run, or answers its
// first run differently from the original TF subgraph (the `fallback` function) runs that
// subgraph from then on, logged once.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/platform/cpu_info.h"
#include "tensorflow/core/platform/env.h"
#include "tensorflow/core/platform/logging.h"
#include "tensorflow/core/platform/threadpool.h"

using namespace tensorflow;

namespace {

constexpr char kOomPrefix[] = "OOM when allocating";  // kernels/errors.py OOM_PREFIX

constexpr int kMaxRank = 8;
constexpr int kErrLen = 1024;
// kernels/strings.py decodes TF's tstring layout (tsl/platform/ctstring_internal.h).
static_assert(sizeof(tstring) == 24, "tf_blade reads 24-byte tstrings");

typedef uint64_t (*CompileFn)(const char* spec, int64_t spec_len, int64_t n_in,
                              const int64_t* in_dtypes, const int64_t* in_ranks,
                              char* err, int64_t err_len);
typedef int64_t (*EntryFn)(int64_t* in_ptrs, int64_t* in_shapes,
                           void* call_ctx, void* alloc_fn, char* errbuf);

std::mutex g_map_mu;      // guards the maps below (cheap, held only for lookups)
std::mutex g_compile_mu;  // serialises compiles (held across the callback)
std::unordered_map<std::string, uint64_t> g_entries;
// Dispatch keys that run their fallback: the kernel failed to compile or broke the contract.
std::unordered_map<std::string, std::string> g_broken;
// Dispatch keys whose first successful run was (or is being) checked against the fallback.
std::unordered_set<std::string> g_validated;
// Cluster specs by cluster key (guarded by g_map_mu), for ops whose `cluster` attr is empty:
// the fast call (tf_blade/fast_call.py) runs a one-op function's BladeFusedCall eagerly, and TF
// copies, serializes and hashes every attr of an eager op on every call: criteo-fc's spec text
// (171 KB) was a quarter of its call at batch 1. Such an op compiles from the text put here.
std::unordered_map<std::string, std::string> g_cluster_specs;
CompileFn g_compile_cb = nullptr;  // written under g_compile_mu
int64_t g_compile_count = 0;       // written under g_compile_mu

// TF_BLADE_VALIDATE_FIRST_RUN=0 skips the first-run comparison with the original ops.
bool ValidateFirstRun() {
  static const bool on = [] {
    const char* v = std::getenv("TF_BLADE_VALIDATE_FIRST_RUN");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

template <typename T>
int64_t FirstFloatDifference(const Tensor& a, const Tensor& b) {
  auto x = a.flat<T>();
  auto y = b.flat<T>();
  for (int64_t j = 0; j < x.size(); ++j) {
    const double p = static_cast<double>(x(j)), q = static_cast<double>(y(j));
    if (p == q || (std::isnan(p) && std::isnan(q))) continue;
    // Float reductions may round differently in the last bits; a wrong answer does not.
    if (std::fabs(p - q) <= 1e-5 * std::fmax(std::fabs(p), std::fabs(q)) + 1e-6) continue;
    return j;
  }
  return -1;
}

// "" when `got` (the kernel's outputs) matches `want` (the original ops'), else where not.
std::string FirstDifference(OpKernelContext* ctx, const std::vector<Tensor>& want) {
  for (int i = 0; i < ctx->num_outputs(); ++i) {
    const Tensor& got = *ctx->mutable_output(i);
    const Tensor& w = want[i];
    if (got.dtype() != w.dtype() || got.shape() != w.shape())
      return absl::StrCat("output ", i, " is ", DataTypeString(got.dtype()), got.shape().DebugString(),
                          ", the original ops give ", DataTypeString(w.dtype()), w.shape().DebugString());
    int64_t j = -1;
    if (w.dtype() == DT_FLOAT) {
      j = FirstFloatDifference<float>(got, w);
    } else if (w.dtype() == DT_DOUBLE) {
      j = FirstFloatDifference<double>(got, w);
    } else if (DataTypeCanUseMemcpy(w.dtype())) {
      const auto a = got.tensor_data(), b = w.tensor_data();
      const int64_t width = DataTypeSize(w.dtype());
      for (size_t k = 0; k < a.size() && j < 0; k += width)
        if (std::memcmp(a.data() + k, b.data() + k, width) != 0) j = k / width;
    }
    if (j >= 0) return absl::StrCat("output ", i, " differs at flat element ", j);
  }
  return "";
}

// Non-null data pointer for empty tensors, so kernels never see 0 (= failure).
char g_dummy_byte = 0;

// Fused calls running in this process, and when two last overlapped. A call made while others
// run, or within kCrowdedNs of the last overlap, is told so (the spare last input-pointer slot)
// and runs its columns on its own thread: with concurrent callers the cores are busy already, and
// a caller's next call often starts in the gap between the other's calls.
std::atomic<int64_t> g_in_flight{0};
std::atomic<int64_t> g_last_overlap_ns{-(int64_t{1} << 62)};
std::atomic<int64_t> g_crowded_calls{0};  // how many calls ran crowded (tests, diagnostics)
constexpr int64_t kCrowdedNs = 50 * 1000 * 1000;

struct InFlight {
  int64_t crowded;
  InFlight() {
    const int64_t others = g_in_flight.fetch_add(1);
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch()).count();
    if (others > 0) g_last_overlap_ns.store(now, std::memory_order_relaxed);
    crowded = others > 0 || now - g_last_overlap_ns.load(std::memory_order_relaxed) < kCrowdedNs;
    if (crowded) g_crowded_calls.fetch_add(1, std::memory_order_relaxed);
  }
  ~InFlight() { g_in_flight.fetch_sub(1); }
};

// Per-call state handed to the kernel as `call_ctx`.
struct CallCtx {
  OpKernelContext* ctx;
  const std::vector<int32_t>* out_ranks;
  std::vector<char> allocated;
  absl::Status status;  // first alloc error
  void fail(const absl::Status& s) {
    if (status.ok()) status = s;
  }
};

// The intra-op pool of the op running on this thread (set around the kernel's call), on which
// blade_parallel_for runs a kernel's blocks.
thread_local thread::ThreadPool* t_pool = nullptr;

struct PoolScope {
  thread::ThreadPool* saved;
  explicit PoolScope(thread::ThreadPool* pool) : saved(t_pool) { t_pool = pool; }
  ~PoolScope() { t_pool = saved; }
};

typedef void (*BlocksFn)(void* arg, int64_t begin, int64_t end);

// One blade_parallel_for: its blocks are claimed one at a time from `next` by the caller and by
// helpers on the pool, whoever comes first. A helper that wakes after the last block is claimed
// leaves at once, so the caller waits only for blocks being run, never for a thread to wake.
// Helpers hold it by shared_ptr: one may wake after the call has returned.
struct BlockQueue {
  BlocksFn blocks;
  void* arg;
  int64_t n;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::condition_variable all_done;
  int64_t done = 0;  // under mu

  void Drain() {
    int64_t ran = 0;
    for (int64_t b; (b = next.fetch_add(1)) < n; ++ran) blocks(arg, b, b + 1);
    if (ran == 0) return;
    std::lock_guard<std::mutex> l(mu);
    done += ran;
    if (done == n) all_done.notify_all();
  }

  void Wait() {
    std::unique_lock<std::mutex> l(mu);
    all_done.wait(l, [this] { return done == n; });
  }
};

// A part's task (codegen/generate.py): reads its argument tuple at `args`, stores its result at
// `result` (kernels/parallel.py, task_caller).
typedef void (*TaskFn)(void* args, void* result);

// One blade_run_tasks: the i-th task reads args + i * args_stride and writes results + i * results_stride.
struct TaskRun {
  TaskFn task;
  char* args;
  int64_t args_stride;
  char* results;
  int64_t results_stride;
};

void RunTaskBlocks(void* arg, int64_t begin, int64_t end) {
  const TaskRun* run = static_cast<const TaskRun*>(arg);
  for (int64_t i = begin; i < end; ++i)
    run->task(run->args + i * run->args_stride, run->results + i * run->results_stride);
}

}  // namespace

extern "C" {

int64_t blade_parallel_for(void* fn, int64_t n, void* arg);

// A group of parts of one template (a layer's columns, kernels/parallel.py group_caller): task i
// of n, each a block of blade_parallel_for. One pool for TF's ops and ours, and nothing for Numba
// to compile per group (Numba's TBB prange did, 1-2 s a group).
int64_t blade_run_tasks(void* task, int64_t n, void* args, int64_t args_stride, void* results,
                        int64_t results_stride) {
  TaskRun run{reinterpret_cast<TaskFn>(task), static_cast<char*>(args), args_stride,
              static_cast<char*>(results), results_stride};
  return blade_parallel_for(reinterpret_cast<void*>(&RunTaskBlocks), n, &run);
}

void* blade_run_tasks_address() { return reinterpret_cast<void*>(&blade_run_tasks); }

// Runs fn(arg, begin, end) over blocks [0, n) of a kernel's work (kernels/parallel.py), one block
// at a time, on the calling thread and the calling op's intra-op threads (BlockQueue). Outside an
// op (the numpy_function bridge) on a pool of tf_blade's own. Returns when every block is done.
// (ThreadPool::ParallelFor ran every block on the pool while the caller slept, waiting for two
// threads to wake: criteo-fc's layer at 512 rows took 1.2-1.5x as long.)
int64_t blade_parallel_for(void* fn, int64_t n, void* arg) {
  const BlocksFn blocks = reinterpret_cast<BlocksFn>(fn);
  thread::ThreadPool* pool = t_pool;
  if (pool == nullptr) {
    static thread::ThreadPool* own =
        new thread::ThreadPool(Env::Default(), "tf_blade", port::MaxParallelism());
    pool = own;
  }
  if (n <= 1 || pool->NumThreads() <= 1) {
    if (n > 0) blocks(arg, 0, n);
    return 0;
  }
  auto queue = std::make_shared<BlockQueue>();
  queue->blocks = blocks;
  queue->arg = arg;
  queue->n = n;
  // Every pool thread is asked (the caller may be one of them, or one may be busy): the first
  // to wake helps, the others find the queue empty.
  const int64_t helpers = std::min<int64_t>(n - 1, pool->NumThreads());
  for (int64_t h = 0; h < helpers; ++h) pool->Schedule([queue] { queue->Drain(); });
  queue->Drain();
  queue->Wait();
  return 0;
}

void* blade_parallel_for_address() { return reinterpret_cast<void*>(&blade_parallel_for); }

void* blade_alloc(void* call_ctx, int64_t index, int64_t ndim,
                  const int64_t* dims) {
  CallCtx* cc = static_cast<CallCtx*>(call_ctx);
  const int64_t n_out = static_cast<int64_t>(cc->out_ranks->size());
  if (index < 0 || index >= n_out) {
    cc->fail(absl::InternalError(absl::StrCat(
        "tf_blade: output index ", index, " out of range (", n_out, " outputs)")));
    return nullptr;
  }
  if (ndim != (*cc->out_ranks)[index]) {
    cc->fail(absl::InternalError(absl::StrCat("tf_blade: output ", index, " has rank ",
                                              ndim, ", expected ", (*cc->out_ranks)[index])));
    return nullptr;
  }
  if (cc->allocated[index]) {
    cc->fail(absl::InternalError(absl::StrCat("tf_blade: output ", index, " allocated twice")));
    return nullptr;
  }
  if (!DataTypeCanUseMemcpy(cc->ctx->expected_output_dtype(index))) {
    cc->fail(absl::UnimplementedError(absl::StrCat(
        "tf_blade: output ", index, " has unsupported dtype ",
        DataTypeString(cc->ctx->expected_output_dtype(index)))));
    return nullptr;
  }
  TensorShape shape;
  absl::Status s = TensorShapeUtils::MakeShape(dims, ndim, &shape);  // rejects dims < 0
  if (!s.ok()) {
    cc->fail(s);
    return nullptr;
  }
  Tensor* out = nullptr;
  s = cc->ctx->allocate_output(static_cast<int>(index), shape, &out);
  if (!s.ok()) {
    cc->fail(s);
    return nullptr;
  }
  cc->allocated[index] = 1;
  if (out->NumElements() == 0) return &g_dummy_byte;
  return const_cast<char*>(out->tensor_data().data());
}

void blade_set_compile_callback(void* cb) {
  std::lock_guard<std::mutex> l(g_compile_mu);
  g_compile_cb = reinterpret_cast<CompileFn>(cb);
}

void* blade_alloc_address() { return reinterpret_cast<void*>(&blade_alloc); }

void blade_register_cluster(const char* key, int64_t key_len, const char* spec, int64_t spec_len) {
  std::lock_guard<std::mutex> l(g_map_mu);
  g_cluster_specs[std::string(key, key_len)] = std::string(spec, spec_len);
}

int64_t blade_cache_size() {
  std::lock_guard<std::mutex> l(g_map_mu);
  return static_cast<int64_t>(g_entries.size());
}

int64_t blade_compile_count() {
  std::lock_guard<std::mutex> l(g_compile_mu);
  return g_compile_count;
}

int64_t blade_crowded_count() { return g_crowded_calls.load(); }

int64_t blade_fallback_count() {
  std::lock_guard<std::mutex> l(g_map_mu);
  return static_cast<int64_t>(g_broken.size());
}

}  // extern "C"

static absl::Status BladeFusedCallShape(shape_inference::InferenceContext* c) {
  std::vector<int32_t> ranks;
  TF_RETURN_IF_ERROR(c->GetAttr("out_ranks", &ranks));
  if (static_cast<int>(ranks.size()) != c->num_outputs())
    return absl::InvalidArgumentError(absl::StrCat(
        "out_ranks has ", ranks.size(), " entries, Tout has ", c->num_outputs()));
  for (int i = 0; i < c->num_outputs(); ++i)
    c->set_output(i, c->UnknownShapeOfRank(ranks[i]));
  return absl::OkStatus();
}

#define BLADE_FUSED_CALL_OP(op_name)                                          \
  REGISTER_OP(op_name)                                                        \
      .Input("args: Tin")                                                     \
      .Output("outs: Tout")                                                   \
      .Attr("Tin: list(type) >= 0")                                           \
      .Attr("Tout: list(type) >= 0")                                          \
      .Attr("out_ranks: list(int) >= 0")                                      \
      .Attr("cluster: string")                                                \
      .Attr("cluster_key: string")                                            \
      .Attr("fallback: list(func) = []") /* the original subgraph; at most one */ \
      .Attr("fallback_inputs: int = 0") /* trailing inputs only it reads */    \
      .SetShapeFn(BladeFusedCallShape)

BLADE_FUSED_CALL_OP("BladeFusedCall");
// A cluster holding an Assert: its effect is the error, so Grappler must not prune it when no
// output of it is read (it prunes stateless ops that only feed control edges).
BLADE_FUSED_CALL_OP("BladeFusedCallStateful").SetIsStateful();

class BladeFusedCallOp : public OpKernel {
 public:
  explicit BladeFusedCallOp(OpKernelConstruction* c) : OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("out_ranks", &out_ranks_));
    OP_REQUIRES_OK(c, c->GetAttr("cluster", &cluster_));
    OP_REQUIRES_OK(c, c->GetAttr("cluster_key", &cluster_key_));
    OP_REQUIRES_OK(c, c->GetAttr("fallback", &fallback_));
    OP_REQUIRES_OK(c, c->GetAttr("fallback_inputs", &fallback_inputs_));
    OP_REQUIRES(c, fallback_inputs_ >= 0 && fallback_inputs_ <= c->num_inputs(),
                absl::InvalidArgumentError("fallback_inputs out of range"));
    OP_REQUIRES(c, fallback_.size() <= 1,
                absl::InvalidArgumentError("fallback lists more than one function"));
    OP_REQUIRES(c, static_cast<int>(out_ranks_.size()) == c->num_outputs(),
                absl::InvalidArgumentError("out_ranks/Tout length mismatch"));
  }

  void Compute(OpKernelContext* ctx) override {
    // The last fallback_inputs_ inputs (the static tables a frozen lookup replaced) are only
    // for the original ops; the kernel never sees them.
    const int n_in = ctx->num_inputs() - fallback_inputs_;
    // A resource input is an embedding table: read it in place under a shared lock, as
    // ResourceGather does. (A ReadVariableOp would copy the whole table on every call once a
    // sparse read has put the variable in copy-on-read mode.)
    std::vector<const Tensor*> inputs(n_in);
    std::vector<core::RefCountPtr<Var>> vars;
    std::vector<std::unique_ptr<tf_shared_lock>> locks;
    for (int i = 0; i < n_in; ++i) {
      inputs[i] = &ctx->input(i);
      if (ctx->input(i).dtype() != DT_RESOURCE) continue;
      core::RefCountPtr<Var> var;
      OP_REQUIRES_OK(ctx, LookupResource(ctx, HandleFromInput(ctx, i), &var));
      locks.push_back(std::make_unique<tf_shared_lock>(*var->mu()));
      OP_REQUIRES(ctx, var->is_initialized,
                  absl::FailedPreconditionError(absl::StrCat(
                      "tf_blade: input ", i, " reads an uninitialized variable")));
      inputs[i] = var->tensor();
      vars.push_back(std::move(var));
    }
    std::vector<int64_t> dtypes(n_in), ranks(n_in);
    std::string key = cluster_key_;
    for (int i = 0; i < n_in; ++i) {
      const Tensor& t = *inputs[i];
      dtypes[i] = t.dtype();
      ranks[i] = t.dims();
      OP_REQUIRES(ctx, ranks[i] <= kMaxRank,
                  absl::InvalidArgumentError(absl::StrCat(
                      "tf_blade: input ", i, " has rank ", ranks[i], " > ", kMaxRank)));
      OP_REQUIRES(ctx, t.dtype() != DT_RESOURCE && t.dtype() != DT_VARIANT,
                  absl::InvalidArgumentError(absl::StrCat(
                      "tf_blade: input ", i, " has unsupported dtype ",
                      DataTypeString(t.dtype()))));
      key += '|';
      key += std::to_string(dtypes[i]);
      key += ':';
      key += std::to_string(ranks[i]);
    }

    EntryFn entry = nullptr;
    const absl::Status found = Lookup(key, dtypes, ranks, &entry);
    if (!found.ok()) {
      if (fallback_.empty()) {
        ctx->SetStatus(found);
        return;
      }
      MarkBroken(key, found.message());
      locks.clear();  // the original ResourceGather takes the variable's lock itself
      RunFallback(ctx);
      return;
    }

    // Inputs go over as data pointers and shapes. A string tensor's buffer is its tstrings
    // (24 bytes each), which the kernels read in place (kernels/strings.py): no string is copied.
    std::vector<int64_t> in_ptrs(2 * n_in + 1, 0), in_shapes(kMaxRank * n_in + 1, 0);
    for (int i = 0; i < n_in; ++i) {
      const Tensor& t = *inputs[i];
      for (int d = 0; d < t.dims(); ++d) in_shapes[kMaxRank * i + d] = t.dim_size(d);
      const char* p = t.dtype() == DT_STRING
                          ? reinterpret_cast<const char*>(t.flat<tstring>().data())
                          : t.tensor_data().data();
      in_ptrs[2 * i] = reinterpret_cast<int64_t>(p && t.NumElements() > 0 ? p : &g_dummy_byte);
    }

    CallCtx cc{ctx, &out_ranks_, std::vector<char>(out_ranks_.size(), 0), absl::OkStatus()};
    char errbuf[kErrLen];
    std::memset(errbuf, 0, sizeof(errbuf));
    int64_t rc;
    {
      InFlight in_flight;
      PoolScope pool(ctx->device()->tensorflow_cpu_worker_threads()->workers);
      in_ptrs[2 * n_in] = in_flight.crowded;
      rc = entry(in_ptrs.data(), in_shapes.data(), &cc, reinterpret_cast<void*>(&blade_alloc), errbuf);
    }
    errbuf[kErrLen - 1] = 0;
    // An alloc failure is the root cause of whatever the kernel did next.
    absl::Status s = cc.status;
    // A kernel's "OOM when allocating ..." is TF's ResourceExhausted; any other message, bad input.
    if (s.ok() && rc != 0)
      s = absl::StartsWith(errbuf, kOomPrefix) ? absl::ResourceExhaustedError(errbuf)
                                               : absl::InvalidArgumentError(errbuf);
    for (size_t i = 0; i < cc.allocated.size() && s.ok(); ++i)
      if (!cc.allocated[i])
        s = absl::InternalError(absl::StrCat("tf_blade: kernel did not allocate output ", i));
    // Bad input (InvalidArgument) and running out of memory are the caller's errors; anything
    // else means the kernel broke the op's contract, and the original ops take over.
    const bool broken = absl::IsInternal(s) || absl::IsUnimplemented(s);
    if (broken && !fallback_.empty()) {
      for (int i = 0; i < ctx->num_outputs(); ++i) delete ctx->release_output(i).tensor;
      MarkBroken(key, s.message());
      locks.clear();
      RunFallback(ctx);
      return;
    }
    OP_REQUIRES_OK(ctx, s);
    if (!fallback_.empty() && ctx->num_outputs() > 0 && ValidateFirstRun() && ClaimValidation(key)) {
      // The first successful run of each dispatch key is checked against the original ops:
      // a kernel that answers differently is a bug of ours, so TF's answer goes out instead.
      locks.clear();
      std::vector<Tensor> want;
      const absl::Status fs = CallFallback(ctx, &want);
      std::string diff = fs.ok() ? FirstDifference(ctx, want)
                                 : absl::StrCat("the original ops fail: ", fs.message());
      if (diff.empty()) {
        if (!HasElements(ctx)) UnclaimValidation(key);  // an empty answer checks little
        return;
      }
      for (int i = 0; i < ctx->num_outputs(); ++i) delete ctx->release_output(i).tensor;
      MarkBroken(key, absl::StrCat("its first run differs from the original ops: ", diff));
      OP_REQUIRES_OK(ctx, fs);
      for (int i = 0; i < ctx->num_outputs(); ++i) ctx->set_output(i, std::move(want[i]));
    }
  }

 private:
  static bool HasElements(OpKernelContext* ctx) {
    for (int i = 0; i < ctx->num_outputs(); ++i)
      if (ctx->mutable_output(i)->NumElements() > 0) return true;
    return false;
  }

  static bool ClaimValidation(const std::string& key) {
    std::lock_guard<std::mutex> l(g_map_mu);
    return g_validated.insert(key).second;
  }

  static void UnclaimValidation(const std::string& key) {
    std::lock_guard<std::mutex> l(g_map_mu);
    g_validated.erase(key);
  }

  // Logs once per dispatch key; from then on Lookup sends that key to the fallback.
  void MarkBroken(const std::string& key, absl::string_view reason) {
    std::lock_guard<std::mutex> l(g_map_mu);
    if (g_broken.emplace(key, std::string(reason)).second)
      LOG(WARNING) << "tf_blade: cluster " << key << " runs its original TensorFlow ops: "
                   << reason;
  }

  // Runs the original subgraph on this op's inputs, inline on this thread (a sync kernel
  // that waited for inter-op threads could deadlock a small pool).
  absl::Status CallFallback(OpKernelContext* ctx, std::vector<Tensor>* rets) {
    FunctionLibraryRuntime* lib = ctx->function_library();
    if (lib == nullptr) return absl::InternalError("tf_blade: no function library to run the fallback");
    FunctionLibraryRuntime::Handle handle;
    {
      std::lock_guard<std::mutex> l(fallback_mu_);
      auto it = fallback_handles_.find(lib);
      if (it == fallback_handles_.end()) {
        TF_RETURN_IF_ERROR(lib->Instantiate(fallback_[0].name(), AttrSlice(&fallback_[0].attr()), &handle));
        it = fallback_handles_.emplace(lib, handle).first;
      }
      handle = it->second;
    }
    std::vector<Tensor> args;
    for (int i = 0; i < ctx->num_inputs(); ++i) args.push_back(ctx->input(i));
    // A step of its own: the original ops need no rendezvous or step container of the caller's.
    FunctionLibraryRuntime::Options opts(ctx->step_id());
    opts.create_rendezvous = true;
    opts.cancellation_manager = ctx->cancellation_manager();
    // Every kernel on this thread: RunSync does not pass run_all_kernels_inline on to the
    // executor, which then queued work on the inter-op pool whose threads (all running fused
    // ops waiting on their fallbacks) could not take it.
    static std::function<void(std::function<void()>)> inline_runner =
        [](std::function<void()> fn) { fn(); };
    opts.runner = &inline_runner;
    opts.run_all_kernels_inline = true;
    TF_RETURN_IF_ERROR(lib->RunSync(opts, handle, args, rets));
    if (static_cast<int>(rets->size()) != ctx->num_outputs())
      return absl::InternalError(absl::StrCat("tf_blade: fallback returned ", rets->size(),
                                              " values, expected ", ctx->num_outputs()));
    return absl::OkStatus();
  }

  void RunFallback(OpKernelContext* ctx) {
    std::vector<Tensor> rets;
    OP_REQUIRES_OK(ctx, CallFallback(ctx, &rets));
    for (int i = 0; i < ctx->num_outputs(); ++i) ctx->set_output(i, std::move(rets[i]));
  }

  absl::Status Lookup(const std::string& key, const std::vector<int64_t>& dtypes,
                      const std::vector<int64_t>& ranks, EntryFn* entry) {
    {
      std::lock_guard<std::mutex> l(g_map_mu);
      auto broken = g_broken.find(key);
      if (broken != g_broken.end()) return absl::InternalError(broken->second);
      auto it = g_entries.find(key);
      if (it != g_entries.end()) {
        *entry = reinterpret_cast<EntryFn>(it->second);
        return absl::OkStatus();
      }
    }
    std::lock_guard<std::mutex> cl(g_compile_mu);
    {  // another thread may have compiled it while we waited
      std::lock_guard<std::mutex> l(g_map_mu);
      auto it = g_entries.find(key);
      if (it != g_entries.end()) {
        *entry = reinterpret_cast<EntryFn>(it->second);
        return absl::OkStatus();
      }
    }
    if (g_compile_cb == nullptr)
      return absl::FailedPreconditionError(
          "tf_blade: no compile callback registered; import tf_blade before "
          "running a graph containing BladeFusedCall");
    std::string registered;  // the spec of an op that came without it
    if (cluster_.empty()) {
      std::lock_guard<std::mutex> l(g_map_mu);
      auto it = g_cluster_specs.find(cluster_key_);
      if (it == g_cluster_specs.end())
        return absl::FailedPreconditionError(absl::StrCat(
            "tf_blade: cluster ", cluster_key_,
            " came without its spec (an empty `cluster` attr) and none was registered in this process"));
      registered = it->second;
    }
    const std::string& spec = cluster_.empty() ? registered : cluster_;
    char err[kErrLen];
    std::memset(err, 0, sizeof(err));
    const uint64_t addr = g_compile_cb(spec.data(), spec.size(), dtypes.size(),
                                       dtypes.data(), ranks.data(), err, kErrLen);
    err[kErrLen - 1] = 0;
    if (addr == 0)  // not cached: a later call retries
      return absl::InternalError(absl::StrCat("tf_blade: kernel compile failed: ", err));
    ++g_compile_count;
    std::lock_guard<std::mutex> l(g_map_mu);
    g_entries[key] = addr;
    *entry = reinterpret_cast<EntryFn>(addr);
    return absl::OkStatus();
  }

  std::vector<int32_t> out_ranks_;
  std::string cluster_;
  std::string cluster_key_;
  std::vector<NameAttrList> fallback_;
  int fallback_inputs_ = 0;
  std::mutex fallback_mu_;
  std::unordered_map<FunctionLibraryRuntime*, FunctionLibraryRuntime::Handle> fallback_handles_;
};

REGISTER_KERNEL_BUILDER(Name("BladeFusedCall").Device(DEVICE_CPU), BladeFusedCallOp);
REGISTER_KERNEL_BUILDER(Name("BladeFusedCallStateful").Device(DEVICE_CPU), BladeFusedCallOp);
