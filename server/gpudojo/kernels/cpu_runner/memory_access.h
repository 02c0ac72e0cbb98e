// Part of launcher.cpp (included once, after its fibers and arrays): what the learner's
// instrumented loads and stores go through.
//
// How accesses reach us: the learner's translation unit is compiled with -fsanitize=thread but
// linked without libtsan, so every load, store and atomic in it calls one of the __tsan_* entry
// points below with its address, and the call's return address names the instruction (a source
// line, through addr2line). Nothing in the learner's code changes type: pointers cast, decay,
// reach __device__ helpers and templates as written. A pointer-wrapper type would have broken
// all of that, and a macro with __LINE__ sees only the accesses it wraps.
//
// A warp instruction: the lanes of one warp that run the same instruction (the same return
// address) for the k-th time in this block. Each fiber counts its own executions per
// instruction, so lane 3's 5th pass through a load groups with lane 0's 5th pass, whichever
// order the fibers ran in. Groups are complete at every barrier and at the end of the block:
// then they are turned into sectors (global) or bank wavefronts (shared) and summed per site.
//
// Checks made on every access, recorded or not: a shared access outside its array (static
// arrays are boxed between two 128-byte red zones by source.py; dynamic shared memory ends at
// the launch's byte count), a global access before the start of its array (its end is a guard
// page already), and a race on a shared word between two barriers.
#include <algorithm>
#include <unordered_map>  // sites

namespace gpudojo_memory {

enum Space { GLOBAL, SHARED };
enum Op { LOAD, STORE, ATOMIC };
const char* const space_names[] = {"global", "shared"};
const char* const op_names[] = {"load", "store", "atomic"};
const size_t kRedZone = 128;  // each side of a boxed static shared array (see source.py)
const int kMaxRecordedBlocks = 64;
// Thread accesses recorded at most, then recording stops (memory: about 10 bytes an access
// between two barriers; every access is still checked).
const unsigned long long kMaxRecordedAccesses = 1ull << 21;

// A static __shared__ array: [lo, hi) inside its box [box_lo, box_hi).
struct SharedArray {
    std::string name;
    uintptr_t box_lo, box_hi, lo, hi;
    size_t elsize;
    size_t shadow_at;  // its first word in `shadow`
};

// Who touched a shared word since the last barrier (racecheck's idea, one entry a 4-byte word).
struct Word {
    unsigned long long epoch;
    int writer, reader;  // thread index in the block, -1 none
    bool many_readers;
    unsigned char wmask, rmask;  // which of the word's 4 bytes were written, read
    unsigned wgen, rgen;         // the writer's and the reader's warp-sync generation
    void* wpc;
    void* rpc;
};

struct Group {
    void* pc;
    int space, op, size, n;
    uintptr_t addr[32];
};

struct Site {
    void* pc;
    int space, op, size;
    unsigned long long requests, accesses, bytes, sectors, min_sectors, wavefronts, ideal_wavefronts, max_ways;
};

inline uint64_t mix(uint64_t x) {  // splitmix64's finaliser
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct Key {
    void* pc;
    unsigned warp, k;
    bool operator==(const Key& o) const { return pc == o.pc && warp == o.warp && k == o.k; }
    uint64_t hash() const { return mix((uintptr_t)pc ^ ((uint64_t)warp << 52) ^ ((uint64_t)k << 20)); }
};
struct Occurrence {  // one thread's executions of one instruction
    uint64_t key;    // the code address, the thread index in bits 52 and up
    bool operator==(const Occurrence& o) const { return key == o.key; }
    uint64_t hash() const { return mix(key); }
};

// Open addressing with linear probing; clear() is one increment (a slot of an older generation is
// empty), as both maps are cleared at every barrier or block.
template <class K, class V>
struct FlatMap {
    struct Slot {
        K key;
        V value;
        unsigned gen;
    };
    std::vector<Slot> slots;
    size_t used = 0;
    unsigned gen = 1;

    void clear() { ++gen, used = 0; }
    V& find_or_add(const K& key, const V& fresh) {
        if ((used + 1) * 2 > slots.size()) grow();
        size_t mask = slots.size() - 1;
        for (size_t i = key.hash() & mask;; i = (i + 1) & mask) {
            Slot& s = slots[i];
            if (s.gen != gen) {
                s = Slot{key, fresh, gen};
                ++used;
                return s.value;
            }
            if (s.key == key) return s.value;
        }
    }
    void grow() {
        std::vector<Slot> old(std::max<size_t>(1024, slots.size() * 2), Slot{K{}, V{}, 0});
        old.swap(slots);
        size_t mask = slots.size() - 1;
        for (const Slot& s : old) {
            if (s.gen != gen) continue;
            size_t i = s.key.hash() & mask;
            while (slots[i].gen == gen) i = (i + 1) & mask;
            slots[i] = s;
        }
    }
};

bool instrumented = false;  // the learner's object calls us (set by __tsan_init)
bool record = false;        // the launch asked for the report
bool recording = false;     // this block is one of the recorded ones
uintptr_t shared_min = UINTPTR_MAX, shared_max = 0, arrays_min = UINTPTR_MAX, arrays_max = 0;
std::vector<SharedArray> shared_arrays;
std::vector<Word> shadow;  // static arrays' words, then the dynamic block's
size_t dynamic_shadow_at = 0;
unsigned long long epoch = 1;  // +1 at each barrier and each block: older shadow entries are void
std::vector<unsigned> warp_gen;
FlatMap<Occurrence, unsigned> occurrences;  // (thread, instruction) -> times run in this block
FlatMap<Key, size_t> group_index;              // (warp, instruction, k) -> its group
std::vector<Group> groups;
std::vector<Site> sites;
std::unordered_map<uint64_t, size_t> site_index;
unsigned long long recorded_accesses = 0, blocks_recorded = 0, blocks_total = 0, block_stride = 1;
bool capped = false;
// Who wrote each global array, counted in every block (recorded or not): stores and atomics by
// each thread of the running block, folded into the launch's figures at the end of the block.
// "y written by one thread" is the serial loop a check must tell from one thread per element.
struct Writers {
    unsigned long long threads = 0, stores = 0, max_per_thread = 0;
};
std::vector<Writers> writers;             // one per argument array
std::vector<unsigned> block_stores;       // [array * threads + thread] in the running block
std::vector<unsigned char> block_wrote;   // the arrays a store reached in the running block
int block_threads = 0;

void add_shared_array(const char* name, uintptr_t box, size_t box_size) {
    SharedArray a;
    a.name = name;
    a.box_lo = box, a.box_hi = box + box_size;
    unsigned long long head[2];  // the box starts with sizeof(element) and sizeof(array)
    memcpy(head, (void*)box, sizeof head);
    a.elsize = head[0];
    if (a.elsize == 0 || box_size < 2 * kRedZone + head[1]) return;
    a.lo = box + kRedZone, a.hi = a.lo + head[1];
    shared_min = std::min(shared_min, a.box_lo), shared_max = std::max(shared_max, a.box_hi);
    shared_arrays.push_back(a);
}

// After the launch file is read: shadow words for every shared byte a block can touch.
void prepare(int threads, size_t dynamic_bytes, unsigned long long total_blocks) {
    size_t words = 0;
    for (SharedArray& a : shared_arrays) a.shadow_at = words, words += (a.hi - a.lo + 3) / 4;
    dynamic_shadow_at = words;
    words += (dynamic_bytes + 3) / 4;
    if (instrumented) shadow.assign(words, Word{0, -1, -1, false, 0, 0, 0, 0, nullptr, nullptr});
    for (const ArrayMap& a : arrays) {
        arrays_min = std::min(arrays_min, (uintptr_t)a.region);
        arrays_max = std::max(arrays_max, (uintptr_t)(a.region + a.region_len));
    }
    warp_gen.assign((threads + 31) / 32, 0);
    block_threads = threads;
    writers.assign(arrays.size(), Writers{});
    block_stores.assign(arrays.size() * (size_t)threads, 0);
    block_wrote.assign(arrays.size(), 0);
    blocks_total = total_blocks;
    block_stride = (total_blocks + kMaxRecordedBlocks - 1) / kMaxRecordedBlocks;
}

// Where a racing access went: a static array (its element) or the dynamic block (a byte).
struct Place {
    const SharedArray* array;  // null: dynamic shared memory
    uintptr_t offset;
};

[[noreturn]] void race(int other, void* other_pc, const char* other_did, const char* did, Place at, void* pc) {
    char where[320];
    if (at.array) snprintf(where, sizeof where, "%s[%zu]", at.array->name.c_str(), (size_t)(at.offset / at.array->elsize));
    else snprintf(where, sizeof where, "dynamic shared memory at byte %zu", (size_t)at.offset);
    char who[64] = "another thread";
    if (other >= 0) {
        const uint3& t = fibers[other].tid;
        snprintf(who, sizeof who, "thread (%u,%u,%u)", t.x, t.y, t.z);
    }
    failf("race", current, pc,
          "Race on shared memory: this thread %s %s at @RA(%p), and %s %s it at @RA(%p), with no "
          "__syncthreads() between (put a barrier between the write and the other thread's access)",
          did, where, pc, who, other_did, other_pc);
}

bool ordered(int other, unsigned other_gen) {
    // Lanes of one warp are ordered by a __syncwarp() or a shuffle both went through since.
    return other / 32 == current / 32 && warp_gen[current / 32] != other_gen;
}

// One access to the bytes `mask` of a shared word; two threads touching different bytes of one
// word (a char array) do not race.
void check_word(Word& w, int op, unsigned char mask, void* pc, Place where) {
    if (w.epoch != epoch) w = Word{epoch, -1, -1, false, 0, 0, 0, 0, nullptr, nullptr};
    unsigned gen = warp_gen[current / 32];
    bool wrote = w.writer >= 0 && (w.wmask & mask) && w.writer != current && !ordered(w.writer, w.wgen);
    if (op == STORE) {
        if (wrote) race(w.writer, w.wpc, "wrote", "writes", where, pc);
        if (w.reader >= 0 && (w.rmask & mask) && (w.reader != current || w.many_readers) && !ordered(w.reader, w.rgen))
            race(w.reader != current ? w.reader : -1, w.rpc, "read", "writes", where, pc);
        w.writer = current, w.wgen = gen, w.wpc = pc, w.wmask = mask;
    } else {
        if (wrote) race(w.writer, w.wpc, "wrote", "reads", where, pc);
        if (w.reader >= 0 && w.reader != current) w.many_readers = true;
        else w.reader = current;
        w.rgen = gen, w.rpc = pc, w.rmask |= mask;
    }
}

void check_race(Word* words, uintptr_t offset, int size, int op, void* pc, const SharedArray* array) {
    for (uintptr_t b = offset; b < offset + size;) {
        uintptr_t end = std::min<uintptr_t>((b | 3) + 1, offset + size);
        unsigned char mask = (unsigned char)(((1u << (end - b)) - 1) << (b & 3));
        check_word(words[b / 4], op, mask, pc, Place{array, offset});
        b = end;
    }
}

void record_access(void* pc, uintptr_t addr, int size, int op, int space) {
    if (++recorded_accesses > kMaxRecordedAccesses) {
        // Stop here: the open barrier interval's groups are partial, so they are dropped; every
        // request already counted was whole.
        capped = true;
        recording = false;
        groups.clear();
        group_index.clear();
        return;
    }
    unsigned k = occurrences.find_or_add(Occurrence{(uintptr_t)pc | ((uint64_t)current << 52)}, 0)++;
    size_t index = group_index.find_or_add(Key{pc, (unsigned)(current / 32), k}, groups.size());
    if (index == groups.size()) groups.push_back(Group{pc, space, op, size, 0, {}});
    Group& g = groups[index];
    if (g.n < 32) g.addr[g.n++] = addr;
}

void access(void* pc, const void* p, int size, int op) {
    if (current < 0) return;  // binding the arguments, not the kernel
    auto addr = (uintptr_t)p;
    int space;
    if (addr >= shared_min && addr < shared_max) {
        const SharedArray* a = nullptr;
        for (const SharedArray& s : shared_arrays)
            if (addr >= s.box_lo && addr < s.box_hi) a = &s;
        if (!a) return;
        if (addr < a->lo || addr + size > a->hi) {
            long long index = addr >= a->lo ? (long long)((addr - a->lo) / a->elsize)
                                            : -(long long)((a->lo - addr + a->elsize - 1) / a->elsize);
            failf("out_of_bounds", current, pc,
                  "Out-of-bounds shared %s of %s[%lld] at @RA(%p): %s has %zu elements (%zu bytes)",
                  op == LOAD ? "read" : "write", a->name.c_str(), index, pc, a->name.c_str(),
                  (size_t)(a->hi - a->lo) / a->elsize, (size_t)(a->hi - a->lo));
        }
        if (op != ATOMIC) {
            check_race(&shadow[a->shadow_at], addr - a->lo, size, op, pc, a);
        }
        space = SHARED;
    } else if (addr >= (uintptr_t)gpudojo_dynamic_shared &&
               addr < (uintptr_t)gpudojo_dynamic_shared + sizeof gpudojo_dynamic_shared) {
        size_t offset = addr - (uintptr_t)gpudojo_dynamic_shared;
        if (offset + size > shared_bytes)
            failf("out_of_bounds", current, pc,
                  "Out-of-bounds shared %s of dynamic shared memory at byte %zu at @RA(%p): the launch gives %zu "
                  "bytes (shared_bytes)",
                  op == LOAD ? "read" : "write", offset, pc, shared_bytes);
        if (op != ATOMIC) {
            check_race(&shadow[dynamic_shadow_at], offset, size, op, pc, nullptr);
        }
        space = SHARED;
    } else if (addr >= arrays_min && addr < arrays_max) {
        const ArrayMap* a = nullptr;
        for (const ArrayMap& m : arrays)
            if (addr >= (uintptr_t)m.region && addr < (uintptr_t)(m.region + m.region_len)) a = &m;
        if (!a) return;
        if (op != LOAD) {
            size_t j = a - arrays.data();
            ++block_stores[j * block_threads + current];
            block_wrote[j] = 1;
        }
        if (addr < (uintptr_t)a->data || addr + size > (uintptr_t)(a->data + a->nbytes)) {
            long long index = addr >= (uintptr_t)a->data ? (long long)((addr - (uintptr_t)a->data) / a->elsize)
                                                         : -(long long)(((uintptr_t)a->data - addr + a->elsize - 1) / a->elsize);
            failf("out_of_bounds", current, pc, "Out-of-bounds %s of %s[%lld] at @RA(%p): %s has %zu elements",
                  op == LOAD ? "read" : "write", a->name.c_str(), index, pc, a->name.c_str(), a->nbytes / a->elsize);
        }
        space = GLOBAL;
    } else {
        return;  // the thread's own stack, or the emulator's memory
    }
    if (recording) record_access(pc, addr, size, op, space);
}

Site& site_of(const Group& g) {
    uint64_t key = (uint64_t)(uintptr_t)g.pc * 2 + g.space;
    auto [it, fresh] = site_index.try_emplace(key, sites.size());
    if (fresh) sites.push_back(Site{g.pc, g.space, g.op, g.size, 0, 0, 0, 0, 0, 0, 0, 0});
    return sites[it->second];
}

// The groups of a barrier interval are complete: sectors and bank wavefronts of each request.
void flush_groups() {
    uintptr_t units[32 * 5];
    for (const Group& g : groups) {
        Site& s = site_of(g);
        s.requests += 1;
        s.accesses += g.n;
        uintptr_t distinct[32];
        std::copy(g.addr, g.addr + g.n, distinct);
        std::sort(distinct, distinct + g.n);
        size_t unique = std::unique(distinct, distinct + g.n) - distinct;
        unsigned long long bytes = unique * (unsigned long long)g.size;
        s.bytes += bytes;
        if (g.space == GLOBAL) {
            size_t n = 0;
            for (size_t i = 0; i < unique; ++i)
                for (uintptr_t sec = distinct[i] >> 5; sec <= (distinct[i] + g.size - 1) >> 5 && n < 32 * 5; ++sec)
                    units[n++] = sec;
            std::sort(units, units + n);
            s.sectors += std::unique(units, units + n) - units;
            s.min_sectors += (bytes + 31) / 32;
        } else {
            // 32 banks of 4 bytes: lanes reading one word share it (a broadcast); distinct words in
            // one bank are served one after another, so the busiest bank sets the wavefronts.
            size_t n = 0;
            for (size_t i = 0; i < unique; ++i)
                for (uintptr_t w = distinct[i] >> 2; w <= (distinct[i] + g.size - 1) >> 2 && n < 32 * 5; ++w)
                    units[n++] = w;
            std::sort(units, units + n);
            n = std::unique(units, units + n) - units;
            unsigned per_bank[32] = {};
            unsigned ways = 0;
            for (size_t i = 0; i < n; ++i) ways = std::max(ways, ++per_bank[units[i] & 31]);
            s.wavefronts += ways;
            s.ideal_wavefronts += (n + 31) / 32;
            s.max_ways = std::max<unsigned long long>(s.max_ways, ways);
        }
    }
    groups.clear();
    group_index.clear();
}

void on_barrier() {
    ++epoch;
    if (recording) flush_groups();
}

void on_warp_sync(int warp) { ++warp_gen[warp]; }

void begin_block(unsigned long long linear) {
    ++epoch;
    recording = record && !capped && linear % block_stride == 0;
    if (recording) {
        ++blocks_recorded;
        occurrences.clear();
    }
}

void end_block() {
    if (recording) flush_groups();
    for (size_t j = 0; j < writers.size(); ++j) {
        if (!block_wrote[j]) continue;
        block_wrote[j] = 0;
        unsigned* c = &block_stores[j * block_threads];
        Writers& w = writers[j];
        for (int t = 0; t < block_threads; ++t) {
            if (!c[t]) continue;
            ++w.threads, w.stores += c[t];
            w.max_per_thread = std::max<unsigned long long>(w.max_per_thread, c[t]);
            c[t] = 0;
        }
    }
}

// The report as JSON members for the result line (code addresses as the runner reads them).
std::string report_json() {
    std::string out = "\"memory\":{\"blocks_recorded\":" + std::to_string(blocks_recorded) +
                      ",\"blocks_total\":" + std::to_string(blocks_total) +
                      ",\"block_stride\":" + std::to_string(block_stride) + ",\"max_accesses\":" + std::to_string(kMaxRecordedAccesses) + ",\"capped\":" + (capped ? "true" : "false") +
                      ",\"sites\":[";
    char buf[512];
    for (size_t i = 0; i < sites.size(); ++i) {
        const Site& s = sites[i];
        snprintf(buf, sizeof buf,
                 "%s{\"pc\":\"%p\",\"space\":\"%s\",\"op\":\"%s\",\"size\":%d,\"requests\":%llu,\"accesses\":%llu,"
                 "\"bytes\":%llu,\"sectors\":%llu,\"min_sectors\":%llu,\"wavefronts\":%llu,\"ideal_wavefronts\":%llu,"
                 "\"max_ways\":%llu}",
                 i ? "," : "", s.pc, space_names[s.space], op_names[s.op], s.size, s.requests, s.accesses, s.bytes,
                 s.sectors, s.min_sectors, s.wavefronts, s.ideal_wavefronts, s.max_ways);
        out += buf;
    }
    out += "],\"writers\":[";
    bool first = true;
    for (size_t j = 0; j < writers.size(); ++j) {
        if (!writers[j].stores) continue;
        snprintf(buf, sizeof buf, "%s{\"array\":\"%s\",\"threads\":%llu,\"stores\":%llu,\"max_per_thread\":%llu}",
                 first ? "" : ",", arrays[j].name.c_str(), writers[j].threads, writers[j].stores,
                 writers[j].max_per_thread);
        out += buf;
        first = false;
    }
    return out + "]}";
}

}  // namespace gpudojo_memory

// --- the entry points -fsanitize=thread compiles calls to -----------------------------------

#define GPUDOJO_RA __builtin_return_address(0)
#define GPUDOJO_PLAIN(N)                                                                                         \
    extern "C" void __tsan_read##N(void* p) { gpudojo_memory::access(GPUDOJO_RA, p, N, gpudojo_memory::LOAD); } \
    extern "C" void __tsan_write##N(void* p) { gpudojo_memory::access(GPUDOJO_RA, p, N, gpudojo_memory::STORE); } \
    extern "C" void __tsan_unaligned_read##N(void* p) {                                                          \
        gpudojo_memory::access(GPUDOJO_RA, p, N, gpudojo_memory::LOAD);                                          \
    }                                                                                                            \
    extern "C" void __tsan_unaligned_write##N(void* p) {                                                         \
        gpudojo_memory::access(GPUDOJO_RA, p, N, gpudojo_memory::STORE);                                         \
    }                                                                                                            \
    extern "C" void __tsan_volatile_read##N(void* p) { gpudojo_memory::access(GPUDOJO_RA, p, N, gpudojo_memory::LOAD); } \
    extern "C" void __tsan_volatile_write##N(void* p) {                                                          \
        gpudojo_memory::access(GPUDOJO_RA, p, N, gpudojo_memory::STORE);                                         \
    }
GPUDOJO_PLAIN(1)
GPUDOJO_PLAIN(2)
GPUDOJO_PLAIN(4)
GPUDOJO_PLAIN(8)
GPUDOJO_PLAIN(16)
#undef GPUDOJO_PLAIN
extern "C" void __tsan_read_range(void* p, unsigned long n) {
    gpudojo_memory::access(GPUDOJO_RA, p, (int)std::min(n, 16ul), gpudojo_memory::LOAD);
}
extern "C" void __tsan_write_range(void* p, unsigned long n) {
    gpudojo_memory::access(GPUDOJO_RA, p, (int)std::min(n, 16ul), gpudojo_memory::STORE);
}
extern "C" void __tsan_init(void) { gpudojo_memory::instrumented = true; }
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit(void) {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) {}

// Atomics run whole (fibers switch only at barriers and collectives); they are recorded, never races.
#define GPUDOJO_ATOMICS(N, T)                                                                                   \
    extern "C" T __tsan_atomic##N##_load(const volatile T* a, int) {                                            \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                            \
    }                                                                                                           \
    extern "C" void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                         \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                               \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                                         \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                     \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                                        \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                                        \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                                        \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                                         \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                       \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                                        \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                      \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                                       \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                     \
    }                                                                                                           \
    extern "C" int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {             \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                 \
    }                                                                                                           \
    extern "C" int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {               \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                 \
    }                                                                                                           \
    extern "C" T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                   \
        gpudojo_memory::access(GPUDOJO_RA, (const void*)a, N / 8, gpudojo_memory::ATOMIC);                      \
        __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                       \
        return c;                                                                                               \
    }
GPUDOJO_ATOMICS(8, unsigned char)
GPUDOJO_ATOMICS(16, unsigned short)
GPUDOJO_ATOMICS(32, unsigned int)
GPUDOJO_ATOMICS(64, unsigned long long)
#undef GPUDOJO_ATOMICS
#undef GPUDOJO_RA
