// Paged attention on a vLLM-layout KV cache with the page gather fused into the dot products.
//
// The same kernel as lab/kernels/reference.py (read that one first): every row walks `walk` columns
// of its block-table row (walk = cdiv(max_seq_len, block_size), so max_seq_len sizes the work, R10),
// reads each walked page's K and V straight from the cache (no gathered copy), and masks by
// seq_lens, causally inside the query. Online softmax over chunks of pages, as in flash decoding.
//
// Layouts (all contiguous, float32):
//   q       [tokens, num_kv_heads * group, head_dim]      query head h*group+g reads KV head h (GQA)
//   kv      [2, num_cache_blocks, block_size, num_kv_heads, head_dim]      K at 0, V at 1
//   out     [tokens, num_kv_heads * group, head_dim]
//   qsl     [rows + 1]  query_start_loc;  seq_lens, own_blocks [rows];  table [rows, width]
//
// Masking is NaN-safe, as in the reference: a masked score never enters the max or the sum, and the V
// row of a key at or past seq_len is and-ed with an all-zero bit mask (so a NaN in it cannot become
// 0 x NaN). It is still *loaded*: the walk reads every byte a kernel sized by max_seq_len reads.
// trusting != 0 is the variant that masks by seq_len only inside the row's own pages (columns <
// own_blocks) and attends to every slot of every page past them.
//
// Threads: rows are handed out one at a time (an atomic counter) to num_threads std::threads.
// Built by lab/kernels/compiled.py with g++ -O3 -march=native -fopenmp-simd; called through ctypes.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// e^x for x in [-80, 0] (the caller clamps), in a form the compiler vectorizes: x = (n + f) ln 2 with
// n an integer and f in [0, 1); e^(f ln 2) by its Taylor series to degree 7 (relative error < 2e-7 on
// [0, ln 2)), times 2^n built in the exponent bits. e^-80 is negligible next to the row max's 1.
inline float exp_neg(float x) {
    float t = x * kLog2e;
    float n = std::floor(t);
    float r = (t - n) * kLn2;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

struct Args {
    const float* q;
    const float* kv;
    float* out;
    const int64_t* qsl;
    const int64_t* seq_lens;
    const int64_t* own_blocks;
    const int64_t* table;
    int64_t rows, width, walk, block_size, num_kv_heads, group, head_dim, num_cache_blocks;
    float scale;
    int trusting;
};

// Tokens per chunk: the score buffer of a chunk is (queries x tokens) floats; about 32k of them
// keeps it, the chunk's K and its V in L2. Whole pages, at least one.
int64_t pages_per_chunk(int64_t queries, int64_t block_size) {
    int64_t tokens = std::max<int64_t>(block_size, std::min<int64_t>(256, (32 * 1024) / std::max<int64_t>(1, queries)));
    return std::max<int64_t>(1, tokens / block_size);
}

// One row: all its query tokens and heads against the pages it walks. Returns 0, or 1 when a walked
// block id lies outside the cache.
int attend_row(const Args& a, int64_t row, std::vector<float>& buf) {
    const int64_t L = a.qsl[row + 1] - a.qsl[row];
    if (L <= 0) return 0;
    const int64_t H = a.num_kv_heads, G = a.group, D = a.head_dim, bs = a.block_size;
    const int64_t Hq = H * G;
    const int64_t M = L * G;          // queries per KV head: (query token l, group member g) -> l*G + g
    const int64_t Q = H * M;          // queries of the row, KV head major: h*M + m
    const int64_t seq = a.seq_lens[row];
    const int64_t own = a.own_blocks[row];
    const int64_t cp = pages_per_chunk(Q, bs);
    const int64_t ct = cp * bs;       // tokens per chunk
    const int64_t tok_stride = H * D; // floats from one token to the next inside a page
    const int64_t page_elems = bs * tok_stride;
    const float* k_cache = a.kv;
    const float* v_cache = a.kv + a.num_cache_blocks * page_elems;

    // Row-local buffers: queries (scaled), accumulators, running max and sum, chunk scores.
    buf.resize(static_cast<size_t>(Q * D * 2 + Q * 2 + Q * ct + ct));
    float* qs = buf.data();
    float* acc = qs + Q * D;
    float* mrun = acc + Q * D;
    float* lrun = mrun + Q;
    float* s = lrun + Q;              // [Q, ct]
    uint32_t* vmask = reinterpret_cast<uint32_t*>(s + Q * ct);  // [ct]: all ones where V counts

    for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t g = 0; g < G; ++g) {
                const float* src = a.q + ((a.qsl[row] + l) * Hq + h * G + g) * D;
                float* dst = qs + (h * M + l * G + g) * D;
                for (int64_t d = 0; d < D; ++d) dst[d] = src[d] * a.scale;
            }
    std::fill(acc, acc + Q * D, 0.0f);
    std::fill(mrun, mrun + Q, -INFINITY);
    std::fill(lrun, lrun + Q, 0.0f);

    const int64_t* ids = a.table + row * a.width;
    for (int64_t c0 = 0; c0 < a.walk; c0 += cp) {
        const int64_t c1 = std::min(c0 + cp, a.walk);
        const int64_t T = (c1 - c0) * bs;
        for (int64_t c = c0; c < c1; ++c)
            if (ids[c] < 0 || ids[c] >= a.num_cache_blocks) return 1;

        // Scores: each key row of each walked page is read once, straight from the cache.
        for (int64_t c = c0; c < c1; ++c) {
            const float* page = k_cache + ids[c] * page_elems;
            const bool trusted = a.trusting && c >= own;
            for (int64_t i = 0; i < bs; ++i) {
                const int64_t t = (c - c0) * bs + i;
                const int64_t kpos = c * bs + i;
                vmask[t] = (kpos < seq || trusted) ? 0xffffffffu : 0u;
                for (int64_t h = 0; h < H; ++h) {
                    const float* k = page + i * tok_stride + h * D;
                    for (int64_t m = 0; m < M; ++m) {
                        const float* qq = qs + (h * M + m) * D;
                        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                        for (int64_t d = 0; d < D; ++d) dot += qq[d] * k[d];
                        const int64_t qpos = seq - L + m / G;
                        s[(h * M + m) * ct + t] = (kpos <= qpos || trusted) ? dot : -INFINITY;
                    }
                }
            }
        }

        // Online softmax: new max, rescale what was accumulated, probabilities (masked ones exactly 0).
        for (int64_t qi = 0; qi < Q; ++qi) {
            float* sq = s + qi * ct;
            float cmax = -INFINITY;
#pragma omp simd reduction(max : cmax)
            for (int64_t t = 0; t < T; ++t) cmax = std::max(cmax, sq[t]);
            const float mnew = std::max(mrun[qi], cmax);
            if (mnew == -INFINITY) {  // no valid key for this query yet
                std::fill(sq, sq + T, 0.0f);
                continue;
            }
            const float alpha = mrun[qi] == -INFINITY ? 0.0f : exp_neg(std::max(mrun[qi] - mnew, -80.0f));
            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
            for (int64_t t = 0; t < T; ++t) {
                const float x = sq[t];
                const float p = exp_neg(std::max(x - mnew, -80.0f));
                const float pm = x == -INFINITY ? 0.0f : p;
                sq[t] = pm;
                sum += pm;
            }
            // A NaN score (trusting variant, a poisoned page) fails every comparison above: it
            // makes p NaN, hence the sum and the output, as in the reference.
            lrun[qi] = lrun[qi] * alpha + sum;
            mrun[qi] = mnew;
            float* aq = acc + qi * D;
            if (alpha != 1.0f)
                for (int64_t d = 0; d < D; ++d) aq[d] *= alpha;
        }

        // Values: each V row read once; rows of keys past seq_len and-ed to zero (NaN-safe).
        for (int64_t c = c0; c < c1; ++c) {
            const float* page = v_cache + ids[c] * page_elems;
            for (int64_t i = 0; i < bs; ++i) {
                const int64_t t = (c - c0) * bs + i;
                const uint32_t mask = vmask[t];
                for (int64_t h = 0; h < H; ++h) {
                    const uint32_t* v = reinterpret_cast<const uint32_t*>(page + i * tok_stride + h * D);
                    for (int64_t m = 0; m < M; ++m) {
                        const float p = s[(h * M + m) * ct + t];
                        float* aq = acc + (h * M + m) * D;
#pragma omp simd
                        for (int64_t d = 0; d < D; ++d) {
                            const uint32_t bits = v[d] & mask;
                            float vv;
                            std::memcpy(&vv, &bits, sizeof vv);
                            aq[d] += p * vv;
                        }
                    }
                }
            }
        }
    }

    for (int64_t h = 0; h < H; ++h)
        for (int64_t l = 0; l < L; ++l)
            for (int64_t g = 0; g < G; ++g) {
                const int64_t qi = h * M + l * G + g;
                float* dst = a.out + ((a.qsl[row] + l) * Hq + h * G + g) * D;
                const float* aq = acc + qi * D;
                // No valid key (padded rows): 0, as the reference writes. A NaN sum stays NaN.
                const float inv = lrun[qi] == 0.0f ? 0.0f : 1.0f / lrun[qi];
                for (int64_t d = 0; d < D; ++d) dst[d] = lrun[qi] == 0.0f ? 0.0f : aq[d] * inv;
            }
    return 0;
}

}  // namespace

extern "C" {

// Returns 0, or 1 when the walk meets a block id outside the cache (the output is then incomplete).
int lab_paged_attention_f32(const float* q, const float* kv, float* out, const int64_t* qsl,
                            const int64_t* seq_lens, const int64_t* own_blocks, const int64_t* table,
                            int64_t rows, int64_t width, int64_t walk, int64_t block_size,
                            int64_t num_kv_heads, int64_t group, int64_t head_dim, int64_t num_cache_blocks,
                            float scale, int trusting, int num_threads) {
    const Args a{q, kv, out, qsl, seq_lens, own_blocks, table, rows, width, walk, block_size,
                 num_kv_heads, group, head_dim, num_cache_blocks, scale, trusting};
    std::atomic<int64_t> next{0};
    std::atomic<int> bad{0};
    auto work = [&]() {
        std::vector<float> buf;
        for (int64_t r = next++; r < rows; r = next++)
            if (attend_row(a, r, buf)) bad = 1;
    };
    const int n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(num_threads, rows)));
    std::vector<std::thread> pool;
    for (int i = 1; i < n; ++i) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    return bad.load();
}

// The source's version, so a stale build is never loaded by a newer wrapper.
int lab_paged_attention_abi() { return 1; }

}  // extern "C"
