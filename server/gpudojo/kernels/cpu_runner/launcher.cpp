// gpudojo's CPU launcher: runs one kernel launch from a launch file, block after block, each
// block's threads as cooperative fibers (ucontext), and writes one JSON line to the result file.
//
// Why ucontext and not C++20 coroutines: a coroutine can only suspend in its own body, so every
// learner function that reaches a __syncthreads() or a shuffle (a __device__ helper, a template)
// would have to become a coroutine. A fiber has its own stack and suspends anywhere, so the
// learner's code compiles as the plain C++ it is.
//
// usage: launcher LAUNCH_FILE RESULT_FILE
#include "gpudojo_cuda.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <string>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
alignas(4096) unsigned char gpudojo_dynamic_shared[GPUDOJO_DYNAMIC_SHARED_MAX + 4096];

const char* const gpudojo::dtype_names[] = {"float16", "float32", "float64", "int8",   "int32",
                                            "int64",   "uint8",   "uint32",  "uint64", "bfloat16"};
extern "C" void gpudojo_bind(const gpudojo::Arg* args, int n);  // the generated entry, in the learner's object

namespace {

enum State { RUNNABLE, AT_BARRIER, AT_WARP, DONE };
enum BarrierOp { BAR_SYNC, BAR_COUNT, BAR_AND, BAR_OR };

struct Fiber {
    ucontext_t ctx;
    uint3 tid;
    int state;
    void* site;  // where it waits: the return address into the learner's code
    int op;
    unsigned mask;
    unsigned long long value;
    int param;
    int width;
    unsigned long long result;
};

struct ArrayMap {
    std::string name;
    int dtype;
    size_t elsize, nbytes;
    unsigned char* region;  // guard | data pages | guard
    size_t region_len;
    unsigned char* data;
};

const size_t kGuard = 256 * 1024;  // wide, so that a far overshoot still lands in a guard
size_t page;
int result_fd = -1;
std::vector<Fiber> fibers;
std::vector<ArrayMap> arrays;
std::vector<gpudojo::Arg> args;
int nthreads = 0;
int current = -1;
ucontext_t scheduler;
unsigned char* stacks = nullptr;
size_t stack_size = 64 * 1024, stack_stride = 0;
size_t shared_bytes = 0;
gpudojo::Body body = nullptr;
void* body_ctx = nullptr;
char altstack[64 * 1024];

// --- the one JSON line the runner reads ---------------------------------------------------

void put(char*& at, char* end, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(at, end - at, fmt, ap);
    va_end(ap);
    if (n > 0) at += (n < end - at) ? n : (end - at - 1);
}

// Messages name code addresses as @PC(0x...) (a faulting instruction) or @RA(0x...) (a return
// address: the call before it), which the runner turns into source lines with addr2line.
[[noreturn]] void fail_at(const char* kind, int thread, const void* pc, const char* message, bool return_address) {
    static char buf[8192];
    char* at = buf;
    char* end = buf + sizeof buf;
    put(at, end, "{\"ok\":false,\"kind\":\"%s\",\"message\":\"", kind);
    for (const char* c = message; *c && at < end - 8; ++c) *at++ = (*c == '"' || *c == '\\') ? '\'' : *c;
    put(at, end, "\"");
    if (thread >= 0) {
        const Fiber& f = fibers[thread];
        put(at, end, ",\"thread\":[%u,%u,%u],\"block\":[%u,%u,%u]", f.tid.x, f.tid.y, f.tid.z, blockIdx.x, blockIdx.y,
            blockIdx.z);
    }
    if (pc) put(at, end, return_address ? ",\"ra\":\"%p\"" : ",\"pc\":\"%p\"", pc);
    put(at, end, "}\n");
    fflush(stdout);
    if (write(result_fd, buf, at - buf) < 0) _exit(4);
    _exit(3);
}

[[noreturn]] void failf(const char* kind, int thread, const void* pc, const char* fmt, ...) {
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fail_at(kind, thread, pc, message, strstr(message, "@RA(") != nullptr);
}

// --- signals: a learner's fault becomes a report, with the fiber that made it ---------------

void on_signal(int sig, siginfo_t* si, void* raw) {
    auto* uc = static_cast<ucontext_t*>(raw);
#if defined(__x86_64__)
    void* pc = (void*)uc->uc_mcontext.gregs[REG_RIP];
    bool is_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#elif defined(__aarch64__)
    void* pc = (void*)uc->uc_mcontext.pc;
    bool is_write = false;
#endif
    const char* access = is_write ? "write" : "read";
    if (sig == SIGALRM)
        failf("timeout", current, pc,
              "The kernel ran past its time limit (an endless loop?); this thread was running @PC(%p)", pc);
    if (sig == SIGFPE) failf("exception", current, pc, "Integer division by zero at @PC(%p)", pc);
    if (sig == SIGABRT) failf("exception", current, nullptr, "The kernel called abort() or an assert() failed");
    auto addr = (unsigned char*)si->si_addr;
    for (const ArrayMap& a : arrays) {
        if (addr < a.region || addr >= a.region + a.region_len) continue;
        long long index = (addr >= a.data) ? (long long)((addr - a.data) / a.elsize)
                                           : -(long long)((a.data - addr + a.elsize - 1) / a.elsize);
        failf("out_of_bounds", current, pc, "Out-of-bounds %s of %s[%lld] at @PC(%p): %s has %zu elements", access,
              a.name.c_str(), index, pc, a.name.c_str(), a.nbytes / a.elsize);
    }
    if (addr >= gpudojo_dynamic_shared && addr < gpudojo_dynamic_shared + sizeof gpudojo_dynamic_shared)
        failf("out_of_bounds", current, pc,
              "Out-of-bounds %s of dynamic shared memory at byte %zu at @PC(%p): the launch gives %zu bytes", access,
              (size_t)(addr - gpudojo_dynamic_shared), pc, shared_bytes);
    if (stacks && addr >= stacks && addr < stacks + stack_stride * nthreads && current >= 0)
        failf("crashed", current, pc,
              "Stack overflow at @PC(%p): each thread has %zu KiB of stack here (deep recursion or a large local "
              "array?)",
              pc, stack_size / 1024);
    if (current < 0) failf("crashed", -1, pc, "The emulator itself crashed (signal %d); please report it", sig);
    failf("illegal_address", current, pc,
          "Illegal %s of address %p at @PC(%p): no argument array is there (a null or uninitialised pointer?)", access,
          si->si_addr, pc);
}

void install_handlers() {
    stack_t ss{};
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGALRM}) sigaction(sig, &sa, nullptr);
}

// --- fibers ---------------------------------------------------------------------------------

void fiber_main() {
    body(body_ctx);
    fibers[current].state = DONE;
    // returning follows uc_link back to the scheduler
}

void resume(int i) {
    current = i;
    threadIdx = fibers[i].tid;
    swapcontext(&scheduler, &fibers[i].ctx);
    current = -1;
}

void wait_here(int state) {
    Fiber& f = fibers[current];
    f.state = state;
    swapcontext(&f.ctx, &scheduler);
    // Another fiber ran meanwhile and moved threadIdx: the scheduler restored ours in resume().
}

int lane_of(int i) { return i % 32; }

}  // namespace

#include "memory_access.h"

namespace {

// A warp collective completes once every live lane its mask names has arrived at one.
void try_complete_warp(int i) {
    const Fiber& f = fibers[i];
    int base = i - lane_of(i);
    int lanes = std::min(32, nthreads - base);
    if (!((f.mask >> lane_of(i)) & 1u))
        failf("exception", i, f.site, "Lane %d calls a warp function at @RA(%p) with mask 0x%08x, which leaves it out",
              lane_of(i), f.site, f.mask);
    unsigned members = 0;
    for (int l = 0; l < lanes; ++l) {
        if (!((f.mask >> l) & 1u)) continue;
        const Fiber& g = fibers[base + l];
        if (g.state == DONE) continue;
        if (g.state != AT_WARP) return;  // still on its way
        if (g.mask != f.mask || g.op != f.op)
            failf("exception", base + l, g.site,
                  "Lanes of one warp meet at different warp functions or masks: lane %d at @RA(%p) (mask 0x%08x), "
                  "lane %d at @RA(%p) (mask 0x%08x)",
                  l, g.site, g.mask, lane_of(i), f.site, f.mask);
        members |= 1u << l;
    }
    for (int l = 0; l < lanes; ++l) {
        if (!((members >> l) & 1u)) continue;
        Fiber& g = fibers[base + l];
        int width = (g.width >= 1 && g.width <= 32 && !(g.width & (g.width - 1))) ? g.width : 32;
        int seg = l & ~(width - 1);
        int src = l;
        switch (g.op) {
            case gpudojo::SHFL_IDX: src = seg + (g.param & (width - 1)); break;
            case gpudojo::SHFL_UP: src = (l - g.param >= seg) ? l - g.param : l; break;
            case gpudojo::SHFL_DOWN: src = (l + g.param < seg + width) ? l + g.param : l; break;
            case gpudojo::SHFL_XOR: src = ((l ^ g.param) >= seg && (l ^ g.param) < seg + width) ? (l ^ g.param) : l; break;
            default: break;
        }
        unsigned long long r = 0;
        if (g.op <= gpudojo::SHFL_XOR) {
            // Reading a lane that is not taking part is undefined on a GPU: it yields the caller's own value here.
            r = ((members >> src) & 1u) ? fibers[base + src].value : g.value;
        } else if (g.op == gpudojo::MATCH_ANY) {
            for (int k = 0; k < lanes; ++k)
                if (((members >> k) & 1u) && fibers[base + k].value == g.value) r |= 1ull << k;
        } else {
            bool any = false, all = true;
            unsigned ballot = 0;
            long long acc = 0;
            bool first = true;
            for (int k = 0; k < lanes; ++k) {
                if (!((members >> k) & 1u)) continue;
                unsigned long long v = fibers[base + k].value;
                any |= v != 0;
                all &= v != 0;
                if (v) ballot |= 1u << k;
                long long sv = g.param ? (long long)(int)(unsigned)v : (long long)(unsigned)v;
                if (first) acc = sv, first = false;
                else if (g.op == gpudojo::REDUCE_ADD) acc += sv;
                else if (g.op == gpudojo::REDUCE_MIN) acc = std::min(acc, sv);
                else if (g.op == gpudojo::REDUCE_MAX) acc = std::max(acc, sv);
                else if (g.op == gpudojo::REDUCE_AND) acc &= sv;
                else if (g.op == gpudojo::REDUCE_OR) acc |= sv;
                else if (g.op == gpudojo::REDUCE_XOR) acc ^= sv;
            }
            if (g.op == gpudojo::BALLOT) r = ballot;
            else if (g.op == gpudojo::ANY) r = any;
            else if (g.op == gpudojo::ALL) r = all;
            else r = (unsigned)acc;
        }
        g.result = r;
        g.state = RUNNABLE;
    }
    gpudojo_memory::on_warp_sync(i / 32);
}

[[noreturn]] void report_deadlock() {
    int exited = -1, barrier = -1, other_barrier = -1, warp = -1, waiting = 0;
    for (int i = 0; i < nthreads; ++i) {
        const Fiber& f = fibers[i];
        if (f.state == DONE && exited < 0) exited = i;
        if (f.state == AT_BARRIER) {
            ++waiting;
            if (barrier < 0) barrier = i;
            else if (f.site != fibers[barrier].site && other_barrier < 0) other_barrier = i;
        }
        if (f.state == AT_WARP && warp < 0) warp = i;
    }
    if (barrier >= 0 && other_barrier >= 0)
        failf("deadlock", other_barrier, fibers[other_barrier].site,
              "Threads of one block wait at different __syncthreads(): this thread at @RA(%p), thread (%u,%u,%u) at "
              "@RA(%p). Every thread of a block must reach the same barrier (is one inside a branch?)",
              fibers[other_barrier].site, fibers[barrier].tid.x, fibers[barrier].tid.y, fibers[barrier].tid.z,
              fibers[barrier].site);
    if (barrier >= 0 && exited >= 0)
        failf("deadlock", exited, fibers[barrier].site,
              "Deadlock: %d threads wait at the __syncthreads() at @RA(%p), but this thread finished without "
              "reaching it (a return, or a barrier inside an if, before it?)",
              waiting, fibers[barrier].site);
    if (warp >= 0) {
        const Fiber& f = fibers[warp];
        int base = warp - lane_of(warp);
        for (int l = 0; l < 32 && base + l < nthreads; ++l) {
            const Fiber& g = fibers[base + l];
            if (((f.mask >> l) & 1u) && g.state == AT_BARRIER)
                failf("deadlock", warp, f.site,
                      "Deadlock: this thread waits in a warp function at @RA(%p) for lane %d, which waits at the "
                      "__syncthreads() at @RA(%p)",
                      f.site, l, g.site);
        }
        failf("deadlock", warp, f.site, "Deadlock: this thread waits in a warp function at @RA(%p) forever", f.site);
    }
    failf("deadlock", barrier, barrier >= 0 ? fibers[barrier].site : nullptr, "Deadlock in the block");
}

void release_barrier() {
    gpudojo_memory::on_barrier();
    int count = 0, all = 1, any = 0;
    for (int i = 0; i < nthreads; ++i) {
        int p = fibers[i].param != 0;
        count += p, all &= p, any |= p;
    }
    for (int i = 0; i < nthreads; ++i) {
        Fiber& f = fibers[i];
        f.result = f.op == BAR_COUNT ? count : f.op == BAR_AND ? all : f.op == BAR_OR ? any : 0;
        f.state = RUNNABLE;
    }
}

void run_block() {
    for (int i = 0; i < nthreads; ++i) {
        Fiber& f = fibers[i];
        f.state = RUNNABLE;
        f.ctx.uc_stack.ss_sp = stacks + i * stack_stride + page;
        f.ctx.uc_stack.ss_size = stack_size;
        f.ctx.uc_link = &scheduler;
        makecontext(&f.ctx, fiber_main, 0);
    }
    for (;;) {
        for (int i = 0; i < nthreads; ++i) {
            if (fibers[i].state != RUNNABLE) continue;
            resume(i);
            if (fibers[i].state == AT_WARP) try_complete_warp(i);
        }
        bool runnable = false, done = true, same_site = true;
        int at_barrier = 0;
        void* site = nullptr;
        for (int i = 0; i < nthreads; ++i) {
            const Fiber& f = fibers[i];
            runnable |= f.state == RUNNABLE;
            done &= f.state == DONE;
            if (f.state == AT_BARRIER) {
                if (at_barrier++ == 0) site = f.site;
                same_site &= f.site == site;
            }
        }
        if (done) return;
        if (runnable) continue;
        if (at_barrier == nthreads && same_site) {
            release_barrier();
            continue;
        }
        report_deadlock();
    }
}

// --- launch file ----------------------------------------------------------------------------

size_t element_size(int dtype) {
    static const size_t sizes[] = {2, 4, 8, 1, 4, 8, 1, 4, 8, 2};
    return sizes[dtype];
}

int parse_dtype(const char* s) {
    for (int d = 0; d < 10; ++d)
        if (!strcmp(s, gpudojo::dtype_names[d])) return d;
    failf("bad_spec", -1, nullptr, "unknown dtype %s", s);
}

// The file holds the array so that it ends at a page boundary: mapped at the end of its pages,
// between two PROT_NONE guards, the first element past the end faults.
void map_array(ArrayMap& a, const char* path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) failf("bad_spec", -1, nullptr, "cannot open the buffer of %s", a.name.c_str());
    size_t pages = (a.nbytes + page - 1) / page * page;
    a.region_len = pages + 2 * kGuard;
    a.region = (unsigned char*)mmap(nullptr, a.region_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a.region == MAP_FAILED) failf("launch_error", -1, nullptr, "out of address space for %s", a.name.c_str());
    if (pages && mmap(a.region + kGuard, pages, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        failf("launch_error", -1, nullptr, "cannot map the buffer of %s", a.name.c_str());
    close(fd);
    a.data = a.region + kGuard + pages - a.nbytes;
}

void read_launch(const char* path, dim3& grid, dim3& block, double& time_limit) {
    FILE* in = fopen(path, "r");
    if (!in) failf("bad_spec", -1, nullptr, "cannot read the launch file");
    char key[32];
    while (fscanf(in, "%31s", key) == 1) {
        if (!strcmp(key, "grid")) {
            if (fscanf(in, "%u %u %u", &grid.x, &grid.y, &grid.z) != 3) break;
        } else if (!strcmp(key, "block")) {
            if (fscanf(in, "%u %u %u", &block.x, &block.y, &block.z) != 3) break;
        } else if (!strcmp(key, "shared")) {
            if (fscanf(in, "%zu", &shared_bytes) != 1) break;
        } else if (!strcmp(key, "time_limit")) {
            if (fscanf(in, "%lf", &time_limit) != 1) break;
        } else if (!strcmp(key, "memory_limit")) {
            unsigned long long bytes;
            if (fscanf(in, "%llu", &bytes) != 1) break;
            struct rlimit rl = {bytes, bytes};
            setrlimit(RLIMIT_AS, &rl);
        } else if (!strcmp(key, "record")) {
            int on;
            if (fscanf(in, "%d", &on) != 1) break;
            gpudojo_memory::record = on != 0;
        } else if (!strcmp(key, "shared_array")) {
            char name[256];
            unsigned long long box, size;
            if (fscanf(in, "%255s %llx %llu", name, &box, &size) != 3) break;
            gpudojo_memory::add_shared_array(name, (uintptr_t)box, (size_t)size);
        } else if (!strcmp(key, "stack")) {
            if (fscanf(in, "%zu", &stack_size) != 1) break;
        } else if (!strcmp(key, "array")) {
            char name[64], dtype[16], file[4096];
            size_t nbytes;
            if (fscanf(in, "%63s %15s %zu %4095s", name, dtype, &nbytes, file) != 4) break;
            ArrayMap a;
            a.name = name;
            a.dtype = parse_dtype(dtype);
            a.elsize = element_size(a.dtype);
            a.nbytes = nbytes;
            map_array(a, file);
            arrays.push_back(a);
            args.push_back({nullptr, 1, a.dtype, a.data, 0, 0, 0});
        } else if (!strcmp(key, "scalar")) {
            char name[64], dtype[16], value[128];
            if (fscanf(in, "%63s %15s %127s", name, dtype, value) != 3) break;
            gpudojo::Arg a{strdup(name), 0, parse_dtype(dtype), nullptr, strtod(value, nullptr), strtoll(value, nullptr, 10),
                           strtoull(value, nullptr, 10)};
            args.push_back(a);
        }
    }
    fclose(in);
    size_t k = 0;
    for (gpudojo::Arg& a : args)
        if (a.is_array) a.name = arrays[k++].name.c_str();
}

double now_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

}  // namespace

// --- what the header declares ---------------------------------------------------------------

extern "C" [[noreturn]] void gpudojo_bad_spec(const char* fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fail_at("bad_spec", -1, nullptr, message, false);
}

extern "C" void gpudojo_set_body(gpudojo::Body b, void* ctx) { body = b, body_ctx = ctx; }

static int block_barrier(int op, int predicate, void* site) {
    if (current < 0) failf("exception", -1, nullptr, "__syncthreads() called outside a kernel");
    Fiber& f = fibers[current];
    f.site = site, f.op = op, f.param = predicate;
    wait_here(AT_BARRIER);
    return (int)fibers[current].result;
}

extern "C" void __syncthreads(void) { block_barrier(BAR_SYNC, 0, __builtin_return_address(0)); }
extern "C" int __syncthreads_count(int p) { return block_barrier(BAR_COUNT, p, __builtin_return_address(0)); }
extern "C" int __syncthreads_and(int p) { return block_barrier(BAR_AND, p, __builtin_return_address(0)); }
extern "C" int __syncthreads_or(int p) { return block_barrier(BAR_OR, p, __builtin_return_address(0)); }

extern "C" unsigned long long gpudojo_warp(int op, unsigned mask, unsigned long long value, int param, int width) {
    Fiber& f = fibers[current];
    f.site = __builtin_return_address(0), f.op = op, f.mask = mask, f.value = value, f.param = param, f.width = width;
    wait_here(AT_WARP);
    return fibers[current].result;
}

extern "C" void __syncwarp(unsigned mask) {
    Fiber& f = fibers[current];
    f.site = __builtin_return_address(0), f.op = gpudojo::BALLOT, f.mask = mask, f.value = 0, f.param = 0, f.width = 32;
    wait_here(AT_WARP);
}

extern "C" unsigned __activemask(void) {
    int base = current - lane_of(current);
    unsigned mask = 0;
    for (int l = 0; l < 32 && base + l < nthreads; ++l)
        if (fibers[base + l].state != DONE) mask |= 1u << l;
    return mask;
}

extern "C" long long clock64(void) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LAUNCH_FILE RESULT_FILE\n", argv[0]);
        return 2;
    }
    page = (size_t)sysconf(_SC_PAGESIZE);
    result_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (result_fd < 0) return 2;
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    install_handlers();
    dim3 grid, block;
    double time_limit = 10.0;
    read_launch(argv[1], grid, block, time_limit);
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (threads > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u)
        failf("launch_error", -1, nullptr,
              "invalid configuration: block (%u,%u,%u) is %llu threads (at most 1024, z at most 64), grid (%u,%u,%u)",
              block.x, block.y, block.z, threads, grid.x, grid.y, grid.z);
    if (shared_bytes > GPUDOJO_DYNAMIC_SHARED_MAX)
        failf("launch_error", -1, nullptr, "%zu bytes of dynamic shared memory asked; the most is %d", shared_bytes,
              GPUDOJO_DYNAMIC_SHARED_MAX);
    size_t shared_pages = (shared_bytes + page - 1) / page * page;
    mprotect(gpudojo_dynamic_shared + shared_pages, sizeof gpudojo_dynamic_shared - shared_pages, PROT_NONE);
    gpudojo_bind(args.data(), (int)args.size());

    nthreads = (int)threads;
    stack_stride = page + (stack_size + page - 1) / page * page;
    stacks = (unsigned char*)mmap(nullptr, stack_stride * nthreads, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) failf("launch_error", -1, nullptr, "no memory for %d thread stacks", nthreads);
    fibers.resize(nthreads);
    for (int i = 0; i < nthreads; ++i) {
        mprotect(stacks + i * stack_stride, page, PROT_NONE);  // below each stack: overflow faults, never corrupts
        getcontext(&fibers[i].ctx);
        fibers[i].tid = uint3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
    }
    blockDim = block;
    gridDim = grid;
    gpudojo_memory::prepare(nthreads, shared_bytes, (unsigned long long)grid.x * grid.y * grid.z);

    itimerval timer{};
    timer.it_value.tv_sec = (time_t)time_limit;
    timer.it_value.tv_usec = (suseconds_t)((time_limit - (double)(time_t)time_limit) * 1e6);
    setitimer(ITIMER_REAL, &timer, nullptr);
    double t0 = now_ms();
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                blockIdx = uint3{x, y, z};
                gpudojo_memory::begin_block(((unsigned long long)z * grid.y + y) * grid.x + x);
                run_block();
                gpudojo_memory::end_block();
            }
    double elapsed = now_ms() - t0;
    fflush(stdout);
    char buf[256];
    snprintf(buf, sizeof buf, "{\"ok\":true,\"elapsed_ms\":%.6f,\"blocks\":%llu,\"threads_per_block\":%d", elapsed,
             (unsigned long long)grid.x * grid.y * grid.z, nthreads);
    std::string line = buf;
    if (gpudojo_memory::instrumented && gpudojo_memory::record) line += "," + gpudojo_memory::report_json();
    line += "}\n";
    if (write(result_fd, line.data(), line.size()) != (ssize_t)line.size()) return 4;
    return 0;
}
