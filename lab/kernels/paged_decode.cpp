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

// One row's state: its queries (scaled, KV head major: query h*M + m, m = l*G + g), the online
// softmax state per query, the scores of the current chunk and the V mask of its keys.
struct Row {
    const Args& a;
    int64_t row, L, M, Q, seq, own, cp, ct, H, G, D, bs, tok_stride, page_elems;
    const int64_t* ids;
    const float* k_cache;
    const float* v_cache;
    float *qs, *acc, *mrun, *lrun, *s;
    uint32_t* vmask;

    Row(const Args& a_, int64_t r, std::vector<float>& buf) : a(a_), row(r) {
        H = a.num_kv_heads; G = a.group; D = a.head_dim; bs = a.block_size;
        L = a.qsl[r + 1] - a.qsl[r];
        M = L * G;
        Q = H * M;
        seq = a.seq_lens[r];
        own = a.own_blocks[r];
        cp = pages_per_chunk(Q, bs);
        ct = cp * bs;
        tok_stride = H * D;
        page_elems = bs * tok_stride;
        ids = a.table + r * a.width;
        k_cache = a.kv;
        v_cache = a.kv + a.num_cache_blocks * page_elems;
        buf.resize(static_cast<size_t>(Q * D * 2 + Q * 2 + Q * ct + ct + 64));
        qs = buf.data();
        acc = qs + Q * D;
        mrun = acc + Q * D;
        lrun = mrun + Q;
        s = lrun + Q;  // [Q, ct]
        vmask = reinterpret_cast<uint32_t*>(s + Q * ct);  // [ct]: all ones where the key's V counts
        const int64_t Hq = H * G;
        for (int64_t h = 0; h < H; ++h)
            for (int64_t l = 0; l < L; ++l)
                for (int64_t g = 0; g < G; ++g) {
                    const float* src = a.q + ((a.qsl[r] + l) * Hq + h * G + g) * D;
                    float* dst = qs + (h * M + l * G + g) * D;
                    for (int64_t d = 0; d < D; ++d) dst[d] = src[d] * a.scale;
                }
        std::fill(acc, acc + Q * D, 0.0f);
        std::fill(mrun, mrun + Q, -INFINITY);
        std::fill(lrun, lrun + Q, 0.0f);
    }

    bool trusted(int64_t c) const { return a.trusting && c >= own; }
    int64_t qpos(int64_t m) const { return seq - L + m / G; }

    void key_masks(int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c)
            for (int64_t i = 0; i < bs; ++i)
                vmask[(c - c0) * bs + i] = (c * bs + i < seq || trusted(c)) ? 0xffffffffu : 0u;
    }

    // Scores of every query against every key of pages [c0, c1), -inf where masked. Plain loops.
    void scores(int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
            const float* page = k_cache + ids[c] * page_elems;
            for (int64_t i = 0; i < bs; ++i) {
                const int64_t t = (c - c0) * bs + i;
                const int64_t kpos = c * bs + i;
                for (int64_t h = 0; h < H; ++h) {
                    const float* k = page + i * tok_stride + h * D;
                    for (int64_t m = 0; m < M; ++m) {
                        const float* qq = qs + (h * M + m) * D;
                        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                        for (int64_t d = 0; d < D; ++d) dot += qq[d] * k[d];
                        s[(h * M + m) * ct + t] = (kpos <= qpos(m) || trusted(c)) ? dot : -INFINITY;
                    }
                }
            }
        }
    }

    // Online softmax over the chunk's T tokens: new max, rescale what was accumulated, probabilities
    // in place of the scores (masked ones exactly 0).
    void softmax(int64_t T) {
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
    }

    // acc += p x V over the chunk's keys; V rows of keys past seq_len and-ed to zero (NaN-safe).
    void values(int64_t c0, int64_t c1) {
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

    void finish() {
        const int64_t Hq = H * G;
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
    }
};

// ---- the same two phases with explicit SIMD (GCC vector extensions: AVX-512, AVX2 or SSE, as the
// machine has). Used when head_dim and block_size are multiples of the vector width VW.
#if defined(__AVX512F__)
constexpr int VW = 16;
#else
constexpr int VW = 8;
#endif
typedef float vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));
typedef float vf_u __attribute__((vector_size(VW * 4), aligned(4), may_alias));  // unaligned access
typedef uint32_t vu_u __attribute__((vector_size(VW * 4), aligned(4), may_alias));

inline vf load(const float* p) { return *reinterpret_cast<const vf_u*>(p); }
inline void store(float* p, vf x) { *reinterpret_cast<vf_u*>(p) = x; }

// One level of a transposing sum: x and y hold per-key partial sums in blocks of S lanes; the result
// holds them in blocks of 2S lanes, keys of x and y interleaved (lane i: x if (i / S) is even).
template <int S>
inline vf fold(vf x, vf y) {
    vi lo, hi;
    for (int i = 0; i < VW; ++i) {
        const bool from_x = (i / S) % 2 == 0;
        lo[i] = from_x ? i : VW + i - S;
        hi[i] = from_x ? i + S : VW + i;
    }
    return __builtin_shuffle(x, y, lo) + __builtin_shuffle(x, y, hi);
}

// r[j] = sum of the lanes of v[j], for VW vectors.
inline vf transpose_sum(vf* v) {
    for (int n = VW / 2; n >= 1; n /= 2) {
        const int S = VW / 2 / n;  // 1, 2, 4, (8)
        for (int j = 0; j < n; ++j) {
            if (S == 1) v[j] = fold<1>(v[2 * j], v[2 * j + 1]);
            else if (S == 2) v[j] = fold<2>(v[2 * j], v[2 * j + 1]);
            else if (S == 4) v[j] = fold<4>(v[2 * j], v[2 * j + 1]);
            else v[j] = fold<8>(v[2 * j], v[2 * j + 1]);
        }
    }
    return v[0];
}

// ND = head_dim / VW vectors per K or V row.
template <int ND>
void scores_simd(Row& r, int64_t c0, int64_t c1) {
    vi iota;
    for (int i = 0; i < VW; ++i) iota[i] = i;
    const vf ninf = vf{} - INFINITY;
    for (int64_t c = c0; c < c1; ++c) {
        const float* page = r.k_cache + r.ids[c] * r.page_elems;
        const bool trusted = r.trusted(c);
        for (int64_t h = 0; h < r.H; ++h)
            for (int64_t m = 0; m < r.M; ++m) {
                vf q[ND];
                for (int dc = 0; dc < ND; ++dc) q[dc] = load(r.qs + (h * r.M + m) * r.D + dc * VW);
                const int32_t qp = static_cast<int32_t>(r.qpos(m));
                float* out = r.s + (h * r.M + m) * r.ct + (c - c0) * r.bs;
                for (int64_t i0 = 0; i0 < r.bs; i0 += VW) {
                    vf part[VW];
                    for (int j = 0; j < VW; ++j) {
                        const float* k = page + (i0 + j) * r.tok_stride + h * r.D;
                        vf x = q[0] * load(k);
                        for (int dc = 1; dc < ND; ++dc) x += q[dc] * load(k + dc * VW);
                        part[j] = x;
                    }
                    const vf dots = transpose_sum(part);
                    const vi kpos = iota + static_cast<int32_t>(c * r.bs + i0);
                    const vi valid = (kpos <= qp) | (trusted ? -1 : 0);
                    store(out + i0, valid ? dots : ninf);
                }
            }
    }
}

// NQ queries of KV head h, from query m0 on, accumulate p x V over the chunk's keys: each V row is
// loaded (and masked) once for the NQ queries, whose accumulators stay in registers.
template <int ND, int NQ>
void values_block(Row& r, int64_t c0, int64_t c1, int64_t h, int64_t m0) {
    vf acc[NQ][ND];
    const float* pq[NQ];
    for (int q = 0; q < NQ; ++q) {
        pq[q] = r.s + (h * r.M + m0 + q) * r.ct;
        for (int dc = 0; dc < ND; ++dc) acc[q][dc] = load(r.acc + (h * r.M + m0 + q) * r.D + dc * VW);
    }
    for (int64_t c = c0; c < c1; ++c) {
        const float* page = r.v_cache + r.ids[c] * r.page_elems + h * r.D;
        for (int64_t i = 0; i < r.bs; ++i) {
            const int64_t t = (c - c0) * r.bs + i;
            const vu_u mask = vu_u{} + r.vmask[t];
            const float* v = page + i * r.tok_stride;
            vf vv[ND];
            for (int dc = 0; dc < ND; ++dc)
                vv[dc] = (vf)(*reinterpret_cast<const vu_u*>(v + dc * VW) & mask);  // the same bits as floats
            for (int q = 0; q < NQ; ++q) {
                const float p = pq[q][t];
                for (int dc = 0; dc < ND; ++dc) acc[q][dc] += p * vv[dc];
            }
        }
    }
    for (int q = 0; q < NQ; ++q)
        for (int dc = 0; dc < ND; ++dc) store(r.acc + (h * r.M + m0 + q) * r.D + dc * VW, acc[q][dc]);
}

template <int ND>
void values_simd(Row& r, int64_t c0, int64_t c1) {
    constexpr int QB = ND >= 16 ? 1 : 16 / ND;  // queries per block: QB x ND accumulators in registers
    for (int64_t h = 0; h < r.H; ++h) {
        int64_t m = 0;
        for (; m + QB <= r.M; m += QB) values_block<ND, QB>(r, c0, c1, h, m);
        for (; m < r.M; ++m) values_block<ND, 1>(r, c0, c1, h, m);
    }
}

// exp_neg on VW lanes (floor by truncation, corrected where it rounded up).
inline vf exp_neg_v(vf x) {
    const vf t = x * kLog2e;
    vi n = __builtin_convertvector(t, vi);
    n += (__builtin_convertvector(n, vf) > t);  // a true lane is -1
    const vf r = (t - __builtin_convertvector(n, vf)) * kLn2;
    vf p = vf{} + 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vi bits = (n + 127) << 23;
    return p * (vf)bits;
}

// Row::softmax on VW lanes at a time (T is a multiple of VW here).
void softmax_simd(Row& r, int64_t T) {
    const vf ninf = vf{} - INFINITY;
    for (int64_t qi = 0; qi < r.Q; ++qi) {
        float* sq = r.s + qi * r.ct;
        vf vmax = ninf;
        for (int64_t t = 0; t < T; t += VW) {
            const vf x = load(sq + t);
            vmax = x > vmax ? x : vmax;  // a NaN lane is passed over, as in Row::softmax
        }
        float cmax = -INFINITY;
        for (int i = 0; i < VW; ++i) cmax = std::max(cmax, vmax[i]);
        const float mnew = std::max(r.mrun[qi], cmax);
        if (mnew == -INFINITY) {
            std::fill(sq, sq + T, 0.0f);
            continue;
        }
        const float alpha = r.mrun[qi] == -INFINITY ? 0.0f : exp_neg(std::max(r.mrun[qi] - mnew, -80.0f));
        vf vsum = vf{};
        for (int64_t t = 0; t < T; t += VW) {
            const vf x = load(sq + t);
            vf y = x - mnew;
            y = y < -80.0f ? vf{} - 80.0f : y;  // NaN stays NaN
            const vf p = exp_neg_v(y);
            const vf pm = x == ninf ? vf{} : p;
            store(sq + t, pm);
            vsum += pm;
        }
        float sum = 0.0f;
        for (int i = 0; i < VW; ++i) sum += vsum[i];
        r.lrun[qi] = r.lrun[qi] * alpha + sum;
        r.mrun[qi] = mnew;
        float* aq = r.acc + qi * r.D;
        if (alpha != 1.0f)
            for (int64_t d = 0; d < r.D; ++d) aq[d] *= alpha;
    }
}

using Phase = void (*)(Row&, int64_t, int64_t);

struct Phases {
    Phase scores, values;
};

Phases simd_phases(int64_t head_dim, int64_t block_size) {
    if (head_dim % VW || block_size % VW) return {nullptr, nullptr};
    switch (head_dim / VW) {
        case 1: return {scores_simd<1>, values_simd<1>};
        case 2: return {scores_simd<2>, values_simd<2>};
        case 4: return {scores_simd<4>, values_simd<4>};
        case 8: return {scores_simd<8>, values_simd<8>};
        case 16: return {scores_simd<16>, values_simd<16>};
        default: return {nullptr, nullptr};
    }
}

// One row: all its query tokens and heads against the pages it walks. Returns 0, or 1 when a walked
// block id lies outside the cache.
int attend_row(const Args& a, int64_t row, std::vector<float>& buf, Phases simd) {
    if (a.qsl[row + 1] - a.qsl[row] <= 0) return 0;
    Row r(a, row, buf);
    for (int64_t c0 = 0; c0 < a.walk; c0 += r.cp) {
        const int64_t c1 = std::min(c0 + r.cp, a.walk);
        for (int64_t c = c0; c < c1; ++c)
            if (r.ids[c] < 0 || r.ids[c] >= a.num_cache_blocks) return 1;
        r.key_masks(c0, c1);
        if (simd.scores) simd.scores(r, c0, c1); else r.scores(c0, c1);
        if (simd.scores) softmax_simd(r, (c1 - c0) * r.bs); else r.softmax((c1 - c0) * r.bs);
        if (simd.values) simd.values(r, c0, c1); else r.values(c0, c1);
    }
    r.finish();
    return 0;
}

}  // namespace

extern "C" {

// Returns 0, or 1 when the walk meets a block id outside the cache (the output is then incomplete).
int lab_paged_attention_f32(const float* q, const float* kv, float* out, const int64_t* qsl,
                            const int64_t* seq_lens, const int64_t* own_blocks, const int64_t* table,
                            int64_t rows, int64_t width, int64_t walk, int64_t block_size,
                            int64_t num_kv_heads, int64_t group, int64_t head_dim, int64_t num_cache_blocks,
                            float scale, int trusting, int num_threads, int use_simd) {
    const Args a{q, kv, out, qsl, seq_lens, own_blocks, table, rows, width, walk, block_size,
                 num_kv_heads, group, head_dim, num_cache_blocks, scale, trusting};
    const Phases simd = use_simd ? simd_phases(head_dim, block_size) : Phases{nullptr, nullptr};
    std::atomic<int64_t> next{0};
    std::atomic<int> bad{0};
    auto work = [&]() {
        std::vector<float> buf;
        for (int64_t r = next++; r < rows; r = next++)
            if (attend_row(a, r, buf, simd)) bad = 1;
    };
    const int n = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(num_threads, rows)));
    std::vector<std::thread> pool;
    for (int i = 1; i < n; ++i) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    return bad.load();
}

// The source's version, so a stale build is never loaded by a newer wrapper.
int lab_paged_attention_abi() { return 2; }

// The vector width of the SIMD path (lanes), and whether it serves this head_dim and block_size.
int lab_paged_attention_simd_width() { return VW; }
int lab_paged_attention_simd_serves(int64_t head_dim, int64_t block_size) {
    return simd_phases(head_dim, block_size).scores != nullptr;
}

}  // extern "C"
