// AMX variant of the attention job (attention_kernel.h) for a bf16 or e4m3 cache: 8 to 64
// query rows of a KV head (MLA decode's 16 heads, 8 at TP 2; prefill) times the keys on the AMX
// tile unit, exact to f32 rounding through multi-term bf16 splits. An e4m3 tile's rows are
// first widened in scratch to bf16 holding each value · 2^-8 (exactly); q carries the 2^8 and
// the final normalization divides it out of o. Other jobs run the AVX-512 variant.
//
// Per KV head, one pass over the keys in tiles of 64 (the AVX-512 variant's online softmax,
// with the 16 rows as the 16 lanes of a vector):
//   the next tile's K and V rows are prefetched (TilePrefetch, attention_kernel_impl.h) in
//                    step with the tile unit's instructions, over scores and P·V alike;
//   Sᵀ[keys, rows] = K · qᵀ: four 16-key C tiles, A = 16 K rows × 32 dims loaded from the
//                    cache in place (or from a copy where the rows are not evenly spaced),
//                    B = q in VNNI pairs as three bf16 terms (prepared once per job), each
//                    k-step's B tiles shared by the four key groups;
//   per tile: max, 2^(S − m) and the running sums lane-wise over the key rows of Sᵀ;
//             P[rows, 64 keys] = the weights transposed, as p_hi + p_lo (four A tiles);
//   per 32 columns of V: the tile's V rows' columns interleaved in key pairs (two VNNI B
//             tiles per 32 keys, 2 KiB written just before use, so read from L1), then
//             O[rows, 32 columns] += P · V, both 32-key halves per load and store of O's
//             two tiles (O stays in memory: 16 × dv f32 is more than the eight tiles).
// Three bf16 terms hold an f32 mantissa exactly and products of bf16 values are exact in the
// tile unit's f32 accumulation, so the scores (and the lse the merges need) are as exact as
// f32 FMAs; the weights keep 16 bits (~2⁻¹⁷ relative in o). Two terms of q instead fail the
// attention tests' lse tolerance. A bf16 cache's q is rounded to bf16 first (attention.h), so
// its second and third terms are zero: one term would do there (untried without AMX hardware).
// Where it stands (kernels_attention_bench, 16 heads, AMX Xeon VM, fractions of the read
// ceiling of the same run): MlaDecode from DRAM 0.52-0.55 on 1 and 2 threads, from L2
// (resident:1) only 0.69-0.73: the work alone runs slower than DRAM delivers; the layout
// read with no arithmetic (MlaPagedRead) 0.66-0.73. Per 64-key tile from L2, timed by phase
// (throwaway rdtsc marks): the score products with their tile stores 38%, softmax and the
// weights' tiles 13%, P·V 44%, 3.4x its 128 products at 16 cycles each (per 32 columns O's two
// tiles are loaded, take eight products and are stored, chunk after chunk, with every tile
// register in use); from DRAM the score phase, whose K tile loads wait on memory, 55% and
// P·V 34%. Leaving out one part (throwaway switches) gained 15-20% each and the gains add up;
// interleaving V between the score products' k-steps, with word unpacks (34 cycles per
// 32 keys × 32 columns against the permutes' 60), or one chunk ahead of its products left
// every rate as it was. attention_decode_bench Mla64K: 7.3-7.5 ms without DCP, 3.8-4.3 with
// N = 2.
#include <immintrin.h>

#include <bit>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/amx_tile_config.h"
#include "ctxpar/kernels/attention_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int kTileRows = 16;  // rows of every tile: query rows of a head, keys of a score tile
constexpr int kAmxKeys = 64;   // keys per score tile: four 16-key C tiles share q's tiles
static_assert(kAmxKeys <= kKeyTile, "TilePrefetch holds the spans of kKeyTile keys");
constexpr int kPvKeys = 32;   // keys per softmax step: one bf16 k-step of P · V
constexpr int kDimStep = 32;  // bf16 values per 64-byte tile row
// bf16 terms of q: three hold all 24 bits of an f32 mantissa, so Q · Kᵀ is f32-exact (the
// scores feed the lse, which the merge across ranks and chunks needs to f32 precision).
constexpr int kQTerms = 3;

// Tiles 0-7 all 16 rows × 64 bytes.
void configure_tiles() {
  AmxTileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kTileRows;
  }
  load_tile_config(c);
}

// Rows per KV head from which the tile unit pays: GQA decode's 4 rows per head read the cache
// at 0.31 of the read ceiling this way and at 0.72 with the AVX-512 dot products
// (kernels_attention_bench GqaDecode, against the ceiling before its prefetching loops; 0.58-0.62
// against today's); MLA decode's 16 (8 at TP 2) gain 4x. A variant for 1-4 rows (their three
// q terms as the 12 columns of one B tile, the weights' hi and lo parts as the 8 rows of one A
// tile) computed 1.6-1.8x faster than the dot products from L2 (31-35 against 19-20 GB/s at
// d 128) yet read DRAM at the same 0.56-0.63, and slowed GqaFewHeads64K (2 rows) by 10-20%:
// the layout and the core's overlap of reads with arithmetic hold that rate (GqaPagedRead).
constexpr int kAmxMinRows = 8;

bool amx_fits(const AttnJob& job) {
  const int head_rows = job.rows / job.kv_heads;
  return job.dtype != KvDType::kF32 && head_rows >= kAmxMinRows && head_rows <= kMaxJobRows &&
         job.dk % kDimStep == 0 && job.dv % kDimStep == 0 && (!job.v_in_k_row || job.dv <= job.dk);
}

inline __m512 bf16_to_f32(__m256i b) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
}
inline __m256i f32_to_bf16(__m512 x) {
  return std::bit_cast<__m256i>(_mm512_cvtneps_pbh(x));
}

// What widen_fp8 yields per e4m3 value (simd.h's load_fp8_pair factor): q is scaled by its
// inverse and o by it, both exactly.
constexpr float kFp8Factor = simd::kFp8LoadFactor;

// n e4m3 values (n % 32 == 0) as bf16 · 2^-8 in order: simd::Vec16::load_fp8's widening over
// 32 values at once (one 512-bit sign extension, shift and mask instead of two 256-bit ones:
// MLA decode over an e4m3 cache ran 3-5% slower with two load_fp8 calls), rounded to bf16,
// which holds every e4m3 value · 2^-8 exactly.
void widen_fp8(const uint8_t* src, int64_t n, uint16_t* dst) {
  const __m512i mask = _mm512_set1_epi16(static_cast<int16_t>(0xBF80));
  for (int64_t i = 0; i < n; i += 32) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m512i h = _mm512_and_si512(_mm512_slli_epi16(_mm512_cvtepi8_epi16(bytes), 7), mask);
    const __m512 lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    const __m512 hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
    _mm512_storeu_si512(dst + i, std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
}

// Up to 16 rows of a head: the lanes of one pass over a score tile.
struct RowGroup {
  int r0 = 0, rows = 0;  // the job's rows [r0, r0 + rows)
  uint16_t* qv;          // [dk / 32][3 terms][16 pairs][16 rows][2] q·scale·log2(e), VNNI B
  float* o;              // [16 rows, dv] unnormalized output
  float* m;              // [16] running max (base 2)
  float* l;              // [16] running sum
  float* alpha;          // [16]
};
constexpr int kMaxGroups = kMaxJobRows / kTileRows;

// Scratch of one head's pass, carved from the job's scratch (attn_scratch_layout() is larger).
struct AmxScratch {
  RowGroup groups[kMaxGroups];
  uint16_t* kst;   // [64 keys, dk]                               K rows copied (key_group)
  uint16_t* wide;  // [64 keys, dk + dv]                           an e4m3 tile's rows as bf16
  float* st;       // [64 keys, 16 rows]                           one group's scores → weights
  uint16_t* p;     // [groups][2 halves][hi, lo][16 rows, 32 keys]  the weights as A tiles
  uint16_t* vv;    // [2 chunks][2 halves][2 tiles][16 pairs][16 columns][2]  32 columns of V
};

AmxScratch carve(float* scratch, int64_t dk, int64_t dv) {
  char* const end = reinterpret_cast<char*>(scratch + attn_scratch_layout(dk, dv).total);
  char* at = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(scratch) + 63) & ~uintptr_t{63});
  const auto take = [&](int64_t bytes) {
    char* p = at;
    at += (bytes + 63) / 64 * 64;
    return p;
  };
  AmxScratch s;
  for (RowGroup& g : s.groups) {
    g.qv = reinterpret_cast<uint16_t*>(take(dk / kDimStep * kQTerms * 1024));
    g.o = reinterpret_cast<float*>(take(kTileRows * dv * 4));
    g.m = reinterpret_cast<float*>(take(64));
    g.l = reinterpret_cast<float*>(take(64));
    g.alpha = reinterpret_cast<float*>(take(64));
  }
  s.kst = reinterpret_cast<uint16_t*>(take(kAmxKeys * dk * 2));
  s.wide = reinterpret_cast<uint16_t*>(take(kAmxKeys * (dk + dv) * 2));
  s.st = reinterpret_cast<float*>(take(kAmxKeys * kTileRows * 4));
  s.p = reinterpret_cast<uint16_t*>(take(kMaxGroups * 4 * 1024));
  s.vv = reinterpret_cast<uint16_t*>(take(2 * 4 * 1024));
  CTXPAR_CHECK(at <= end, "AMX attention scratch for dk {} dv {} needs {} bytes more", dk, dv,
               at - end);
  return s;
}

// Row r's q (scaled into base 2) as kQTerms bf16 terms in B-tile pair order; rows past `rows`
// zero. Per 32 dims: each row's terms as 16 pairs (one 32-bit lane a pair), then the
// [16 rows, 16 pairs] block of a term transposed into the tile's [16 pairs, 16 rows].
// round_q: q rounded to bf16 first (a bf16 cache's attention, attention.h).
void prepare_q(const float* const* q, int rows, int64_t dk, float q_scale, bool round_q,
               uint16_t* qv) {
  const __m512 scale = _mm512_set1_ps(q_scale);
  const auto load = [round_q](const float* p) {
    const __m512 x = _mm512_loadu_ps(p);
    return round_q ? bf16_to_f32(std::bit_cast<__m256i>(_mm512_cvtneps_pbh(x))) : x;
  };
  for (int64_t ks = 0; ks < dk / kDimStep; ++ks) {
    simd::Vec16 terms[kQTerms][kTileRows];
    for (int r = 0; r < kTileRows; ++r) {
      __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
      if (r < rows) {
        lo = _mm512_mul_ps(load(q[r] + ks * kDimStep), scale);
        hi = _mm512_mul_ps(load(q[r] + ks * kDimStep + 16), scale);
      }
      for (int term = 0; term < kQTerms; ++term) {
        // Dims 2p and 2p + 1 in lane p, the even one in the low half (pair order).
        const __m512i b = std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
        terms[term][r] = simd::Vec16{_mm512_castsi512_ps(b)};
        lo = _mm512_sub_ps(lo, bf16_to_f32(_mm512_castsi512_si256(b)));
        hi = _mm512_sub_ps(hi, bf16_to_f32(_mm512_extracti64x4_epi64(b, 1)));
      }
    }
    for (int term = 0; term < kQTerms; ++term) {
      transpose(terms[term]);
      uint16_t* dst = qv + (ks * kQTerms + term) * 512;
      for (int p = 0; p < kTileRows; ++p)
        terms[term][p].store(reinterpret_cast<float*>(dst + p * 32));
    }
  }
}

// The A operand of 16 keys [j0, j0 + 16) of a tile: their rows in place when they are evenly
// spaced (a paged block's run, a contiguous cache) — the tile unit loads them with that
// stride — else copied into stage (row stride dk). Rows past n read as zero either way (a
// partial group is always copied). Returns the base; *stride gets the row stride in bytes.
const uint16_t* key_group(const uint16_t* const* rows, int j0, int n, int64_t dk, uint16_t* stage,
                          int64_t* stride) {
  if (j0 + 16 <= n) {
    const int64_t step =
        reinterpret_cast<const char*>(rows[j0 + 1]) - reinterpret_cast<const char*>(rows[j0]);
    bool even = step >= dk * 2;
    for (int j = j0 + 2; even && j < j0 + 16; ++j) {
      even = reinterpret_cast<const char*>(rows[j]) - reinterpret_cast<const char*>(rows[j - 1]) ==
             step;
    }
    if (even) {
      *stride = step;
      return rows[j0];
    }
  }
  for (int j = 0; j < 16; ++j) {
    uint16_t* dst = stage + j * dk;
    for (int64_t i = 0; i < dk; i += kDimStep) {
      _mm512_store_si512(
          dst + i, j0 + j < n ? _mm512_loadu_si512(rows[j0 + j] + i) : _mm512_setzero_si512());
    }
  }
  *stride = dk * 2;
  return stage;
}

// Columns [c, c + 32) of 32 V rows (n of them, zero past n) interleaved in key pairs: the B
// tiles vv[0] (columns c..c+15) and vv[512] (c+16..c+31), row k holding (v[2k][col],
// v[2k + 1][col]) for each column. 2 KiB, written just before the tile unit reads them, so
// they are read from L1 (the whole tile's V interleaved at once was 64 KiB for MLA, in L2).
void interleave_values(const uint16_t* const* rows, int n, int64_t c, uint16_t* vv) {
  alignas(64) static constexpr uint16_t kLo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                   37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                   11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                   53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                   27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i lo_idx = _mm512_load_si512(kLo);
  const __m512i hi_idx = _mm512_load_si512(kHi);
  for (int k = 0; k < kPvKeys / 2; ++k) {
    const __m512i va = 2 * k < n ? _mm512_loadu_si512(rows[2 * k] + c) : _mm512_setzero_si512();
    const __m512i vb =
        2 * k + 1 < n ? _mm512_loadu_si512(rows[2 * k + 1] + c) : _mm512_setzero_si512();
    _mm512_store_si512(vv + k * 32, _mm512_permutex2var_epi16(va, lo_idx, vb));
    _mm512_store_si512(vv + 512 + k * 32, _mm512_permutex2var_epi16(va, hi_idx, vb));
  }
}

// Online softmax over the tile's scores st[64 keys][16 rows] (lanes are rows): keys at or
// past valid[r] masked; st becomes the weights, o rows are rescaled.
void softmax_tile(float* st, __m512i valid, const RowGroup& sc, int64_t dv) {
  const __m512 neg_inf = _mm512_set1_ps(kNegInf);
  __m512 mx = _mm512_loadu_ps(sc.m);
  const __m512 m_old = mx;
  if (_mm512_cmpge_epi32_mask(valid, _mm512_set1_epi32(kAmxKeys)) == 0xFFFF) {
    for (int j = 0; j < kAmxKeys; ++j) mx = _mm512_max_ps(mx, _mm512_load_ps(st + j * kTileRows));
  } else {
    for (int j = 0; j < kAmxKeys; ++j) {
      const __mmask16 keep = _mm512_cmpgt_epi32_mask(valid, _mm512_set1_epi32(j));
      const __m512 s = _mm512_mask_mov_ps(neg_inf, keep, _mm512_load_ps(st + j * kTileRows));
      _mm512_store_ps(st + j * kTileRows, s);
      mx = _mm512_max_ps(mx, s);
    }
  }
  // A row with no key yet keeps m = -inf; its weights 2^(-inf - 0) are 0.
  const __mmask16 none = _mm512_cmp_ps_mask(mx, neg_inf, _CMP_EQ_OQ);
  const simd::Vec16 m_use{_mm512_mask_mov_ps(mx, none, _mm512_setzero_ps())};
  simd::Vec16 sum = simd::Vec16::zero();
  for (int j = 0; j < kAmxKeys; ++j) {
    const simd::Vec16 p = exp2(simd::Vec16{_mm512_load_ps(st + j * kTileRows)} - m_use);
    p.store(st + j * kTileRows);
    sum = sum + p;
  }
  const simd::Vec16 alpha = exp2(simd::Vec16{m_old} - m_use);  // 0 where m was -inf
  _mm512_storeu_ps(sc.l, _mm512_fmadd_ps(_mm512_loadu_ps(sc.l), alpha.v, sum.v));
  _mm512_storeu_ps(sc.m, mx);
  alpha.store(sc.alpha);
  for (int r = 0; r < sc.rows; ++r) {
    const float a = sc.alpha[r];
    if (a == 1.0f) continue;
    float* orow = sc.o + r * dv;
    const __m512 av = _mm512_set1_ps(a);
    for (int64_t i = 0; i < dv; i += 16) {
      _mm512_storeu_ps(orow + i, _mm512_mul_ps(_mm512_loadu_ps(orow + i), av));
    }
  }
}

// The weights st[32 keys][16 rows] as A tiles p[hi, lo][16 rows][32 keys].
void weights_to_tiles(const float* st, uint16_t* p) {
  __m512i hi[kTileRows], lo[kTileRows];
  for (int half = 0; half < 2; ++half) {
    simd::Vec16 blk[16];
    for (int j = 0; j < 16; ++j) blk[j] = simd::Vec16::load(st + (half * 16 + j) * kTileRows);
    transpose(blk);  // blk[r]: row r's weights of keys [16·half, 16·half + 16)
    for (int r = 0; r < kTileRows; ++r) {
      const __m256i h = f32_to_bf16(blk[r].v);
      const __m256i l = f32_to_bf16(_mm512_sub_ps(blk[r].v, bf16_to_f32(h)));
      if (half == 0) {
        hi[r] = _mm512_castsi256_si512(h);
        lo[r] = _mm512_castsi256_si512(l);
      } else {
        hi[r] = _mm512_inserti64x4(hi[r], h, 1);
        lo[r] = _mm512_inserti64x4(lo[r], l, 1);
      }
    }
  }
  for (int r = 0; r < kTileRows; ++r) {
    _mm512_store_si512(p + r * 32, hi[r]);
    _mm512_store_si512(p + 512 + r * 32, lo[r]);
  }
}

// One KV head's rows [r0, r0 + rows) over the job's keys, in groups of 16 that share each
// K tile (read from memory once, then from L2) and its interleaved V rows.
void head_pass(const AttnJob& job, int hh, int r0, int rows, const RowResolver& resolver,
               AmxScratch& sc) {
  const int64_t dk = job.dk, dv = job.dv;
  const int64_t k_steps = dk / kDimStep;
  const int num_groups = (rows + kTileRows - 1) / kTileRows;
  // An e4m3 tile's rows are widened into sc.wide first and read as bf16 · kFp8Factor.
  const bool fp8 = job.dtype == KvDType::kF8E4M3;
  const float factor = fp8 ? kFp8Factor : 1.0f;
  const int64_t elem = fp8 ? 1 : 2;
  for (int gi = 0; gi < num_groups; ++gi) {
    RowGroup& g = sc.groups[gi];
    g.r0 = r0 + gi * kTileRows;
    g.rows = std::min(kTileRows, rows - gi * kTileRows);
    prepare_q(job.q + g.r0, g.rows, dk, job.scale * kLog2e / factor, job.dtype == KvDType::kBF16,
              g.qv);
    std::memset(g.o, 0, static_cast<size_t>(kTileRows * dv) * sizeof(float));
    for (int r = 0; r < kTileRows; ++r) {
      g.m[r] = kNegInf;
      g.l[r] = 0.0f;
    }
  }

  const uint16_t* k_rows[2][kAmxKeys];
  const uint16_t* v_rows[2][kAmxKeys];
  const auto resolve = [&](int64_t t0, int n, int buf) {
    resolver.resolve(t0, n, k_rows[buf], v_rows[buf]);
    for (int j = 0; j < n; ++j) {
      k_rows[buf][j] = reinterpret_cast<const uint16_t*>(
          reinterpret_cast<const char*>(k_rows[buf][j]) + hh * job.k_head_stride);
      v_rows[buf][j] = reinterpret_cast<const uint16_t*>(
          reinterpret_cast<const char*>(v_rows[buf][j]) + hh * job.v_head_stride);
    }
  };
  int cur = 0;
  if (job.key_begin < job.key_end) {
    resolve(job.key_begin,
            static_cast<int>(std::min<int64_t>(kAmxKeys, job.key_end - job.key_begin)), 0);
  }
  for (int64_t t0 = job.key_begin; t0 < job.key_end; t0 += kAmxKeys) {
    const int n = static_cast<int>(std::min<int64_t>(kAmxKeys, job.key_end - t0));
    const int n_next = static_cast<int>(std::clamp<int64_t>(job.key_end - t0 - n, 0, kAmxKeys));
    if (n_next > 0) resolve(t0 + n, n_next, cur ^ 1);
    if (fp8) {
      for (int j = 0; j < n; ++j) {
        uint16_t* k_wide = sc.wide + j * dk;
        widen_fp8(reinterpret_cast<const uint8_t*>(k_rows[cur][j]), dk, k_wide);
        k_rows[cur][j] = k_wide;
        if (!job.v_in_k_row) {
          uint16_t* v_wide = sc.wide + kAmxKeys * dk + j * dv;
          widen_fp8(reinterpret_cast<const uint8_t*>(v_rows[cur][j]), dv, v_wide);
          v_rows[cur][j] = v_wide;
        }
      }
    }
    const int key_groups = (n + 15) / 16;
    const int halves = (n + kPvKeys - 1) / kPvKeys;
    // The next tile's rows, spread over this tile's tile-unit work in proportion to its
    // instructions (a score k-step 3 per key group, a P·V step 4), by the first row group.
    const int64_t tdps = k_steps * 3 * key_groups + halves * (dv / 32) * 4;
    const int64_t next_bytes = n_next * (dk + (job.v_in_k_row ? 0 : dv)) * elem;
    const int64_t bytes_per_tdp = (next_bytes + tdps - 1) / tdps;
    TilePrefetch<uint16_t> prefetch(k_rows[cur ^ 1], v_rows[cur ^ 1], n_next, 1, 0, 0, dk * elem,
                                    job.v_in_k_row ? 0 : dv * elem, job.prefetch_to_l2);
    const uint16_t* ka[4];
    int64_t a_stride[4] = {};
    for (int kg = 0; kg < key_groups; ++kg) {
      ka[kg] = key_group(k_rows[cur], 16 * kg, n, dk, sc.kst + 16 * kg * dk, &a_stride[kg]);
    }
    for (int gi = 0; gi < num_groups; ++gi) {
      RowGroup& g = sc.groups[gi];
      // Sᵀ = K · qᵀ (three terms): tile kg the scores of keys [16kg, 16kg + 16); each k-step's
      // q tiles are loaded once for all four key groups.
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t ks = 0; ks < k_steps; ++ks) {
        const uint16_t* qk = g.qv + ks * kQTerms * 512;
        const int64_t d0 = ks * kDimStep;
        _tile_loadd(5, qk, 64);
        _tile_loadd(6, qk + 512, 64);
        _tile_loadd(7, qk + 1024, 64);
// Key group kg where the tile has it (a tile index must be a constant, so no loop).
#define CTXPAR_AMX_SCORE_GROUP(kg)                     \
  if (key_groups > (kg)) {                             \
    if (gi == 0) prefetch.consumed(3 * bytes_per_tdp); \
    _tile_loadd(4, ka[kg] + d0, a_stride[kg]);         \
    _tile_dpbf16ps(kg, 4, 5);                          \
    _tile_dpbf16ps(kg, 4, 6);                          \
    _tile_dpbf16ps(kg, 4, 7);                          \
  }
        CTXPAR_AMX_SCORE_GROUP(0)
        CTXPAR_AMX_SCORE_GROUP(1)
        CTXPAR_AMX_SCORE_GROUP(2)
        CTXPAR_AMX_SCORE_GROUP(3)
#undef CTXPAR_AMX_SCORE_GROUP
      }
      _tile_stored(0, sc.st, 64);
      _tile_stored(1, sc.st + 16 * kTileRows, 64);
      _tile_stored(2, sc.st + 32 * kTileRows, 64);
      _tile_stored(3, sc.st + 48 * kTileRows, 64);

      // Online softmax over the tile's 64 keys, its weights as A tiles.
      alignas(64) int32_t valid[kTileRows];
      for (int r = 0; r < kTileRows; ++r) {
        // Rows past the group's own are not masked: their q is zero and their outputs are
        // never read, and a whole tile of visible keys then skips the masking.
        valid[r] =
            r >= g.rows || job.row_key_end == nullptr
                ? n
                : static_cast<int32_t>(std::clamp<int64_t>(job.row_key_end[g.r0 + r] - t0, 0, n));
      }
      softmax_tile(sc.st, _mm512_load_si512(valid), g, dv);
      uint16_t* pg = sc.p + gi * 4 * 512;
      weights_to_tiles(sc.st, pg);
      if (halves > 1) weights_to_tiles(sc.st + kPvKeys * kTileRows, pg + 2 * 512);
    }

    // O[rows, dv] += P · V per 32 columns, both 32-key halves (two bf16 k-steps) per load and
    // store of each group's O tiles. Tiles: O 0-1, V 4-5, P 2-3 (first half) and 6-7.
    const uint16_t* const* vrows = job.v_in_k_row ? k_rows[cur] : v_rows[cur];
    const int64_t o_stride = dv * 4;
    for (int64_t c = 0; c < dv; c += 32) {
      uint16_t* vv = sc.vv + ((c / 32) & 1) * 4 * 512;
      for (int h = 0; h < halves; ++h) {
        interleave_values(vrows + h * kPvKeys, std::min(kPvKeys, n - h * kPvKeys), c,
                          vv + h * 2 * 512);
      }
      for (int gi = 0; gi < num_groups; ++gi) {
        RowGroup& g = sc.groups[gi];
        if (c == 0 || num_groups > 1) {
          const uint16_t* pg = sc.p + gi * 4 * 512;
          _tile_loadd(2, pg, 64);
          _tile_loadd(3, pg + 512, 64);
          if (halves > 1) {
            _tile_loadd(6, pg + 1024, 64);
            _tile_loadd(7, pg + 1536, 64);
          }
        }
        if (gi == 0) prefetch.consumed(4 * bytes_per_tdp);
        _tile_loadd(0, g.o + c, o_stride);
        _tile_loadd(1, g.o + c + 16, o_stride);
        _tile_loadd(4, vv, 64);
        _tile_loadd(5, vv + 512, 64);
        _tile_dpbf16ps(0, 2, 4);
        _tile_dpbf16ps(0, 3, 4);
        _tile_dpbf16ps(1, 2, 5);
        _tile_dpbf16ps(1, 3, 5);
        if (halves > 1) {
          if (gi == 0) prefetch.consumed(4 * bytes_per_tdp);
          _tile_loadd(4, vv + 1024, 64);
          _tile_loadd(5, vv + 1536, 64);
          _tile_dpbf16ps(0, 6, 4);
          _tile_dpbf16ps(0, 7, 4);
          _tile_dpbf16ps(1, 6, 5);
          _tile_dpbf16ps(1, 7, 5);
        }
        _tile_stored(0, g.o + c, o_stride);
        _tile_stored(1, g.o + c + 16, o_stride);
      }
    }
    cur ^= 1;
  }

  for (int gi = 0; gi < num_groups; ++gi) {
    const RowGroup& g = sc.groups[gi];
    for (int r = 0; r < g.rows; ++r) {
      float* dst = job.out[g.r0 + r];
      if (g.l[r] > 0.0f) {
        const float inv = 1.0f / (factor * g.l[r]);
        const float* src = g.o + r * dv;
        for (int64_t i = 0; i < dv; ++i) dst[i] = src[i] * inv;
        *job.lse[g.r0 + r] = (g.m[r] + std::log2(g.l[r])) * kLn2;
      } else {
        std::memset(dst, 0, static_cast<size_t>(dv) * sizeof(float));
        *job.lse[g.r0 + r] = kNegInf;
      }
    }
  }
}

}  // namespace

void run_attention_job_amx(const AttnJob& job, float* scratch) {
  if (!amx_fits(job)) {
    avx512_attention_job()(job, scratch);
    return;
  }
  AmxScratch sc = carve(scratch, job.dk, job.dv);
  const RowResolver resolver(job.keys);
  const int head_rows = job.rows / job.kv_heads;
  configure_tiles();
  for (int hh = 0; hh < job.kv_heads; ++hh)
    head_pass(job, hh, hh * head_rows, head_rows, resolver, sc);
  _tile_release();
}

}  // namespace ctxpar::kernels::detail
