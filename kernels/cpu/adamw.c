/* adamw.c — the AdamW update and the reductions the optimiser needs.
 * Each thread takes a fixed range; the arithmetic per element does not
 * depend on the range, so results do not depend on the thread count.
 * adamw_update_tensors updates a whole model in one pass. */
#include "kernels.h"
#include "cpu/vecmath.h"

#include <math.h>
#include <omp.h>

static void adamw_range(float *restrict p, float *restrict m, float *restrict v,
                        const float *restrict g, size_t n, float lr, float beta1,
                        float beta2, float eps, float wd, float bc1, float bc2)
{
    for (size_t i = 0; i < n; i++) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        float mh = m[i] / bc1, vh = v[i] / bc2;
        p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
    }
}

/* GCC will not vectorise sqrtf while it may set errno, so the AVX-512
 * body is written out; it returns how many elements it did (a multiple
 * of 16) and the plain loop finishes.  Same operations, in the same
 * order, as adamw_range. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx512f")))
static size_t adamw_avx512(float *p, float *m, float *v, const float *g, size_t n,
                           float lr, float beta1, float beta2, float eps, float wd,
                           float bc1, float bc2)
{
    __m512 b1 = _mm512_set1_ps(beta1), c1 = _mm512_set1_ps(1.0f - beta1);
    __m512 b2 = _mm512_set1_ps(beta2), c2 = _mm512_set1_ps(1.0f - beta2);
    __m512 k1 = _mm512_set1_ps(bc1), k2 = _mm512_set1_ps(bc2), e = _mm512_set1_ps(eps);
    __m512 l = _mm512_set1_ps(lr), w = _mm512_set1_ps(wd);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 gi = _mm512_loadu_ps(g + i), pi = _mm512_loadu_ps(p + i);
        __m512 mi = _mm512_fmadd_ps(b1, _mm512_loadu_ps(m + i), _mm512_mul_ps(c1, gi));
        __m512 vi = _mm512_fmadd_ps(b2, _mm512_loadu_ps(v + i), _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
        __m512 mh = _mm512_div_ps(mi, k1), vh = _mm512_div_ps(vi, k2);
        __m512 u = _mm512_fmadd_ps(w, pi, _mm512_div_ps(mh, _mm512_add_ps(_mm512_sqrt_ps(vh), e)));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        _mm512_storeu_ps(p + i, _mm512_fnmadd_ps(l, u, pi));
    }
    return i;
}
#define HAVE_AVX512_BODY 1
#endif

/* One element range of one tensor: the AVX-512 body where the CPU has
 * it, the plain loop for the rest.  lo is a multiple of 16 from the
 * tensor's start, so which elements the tail does is fixed by the
 * tensor, not by the split. */
static void adamw_piece(float *p, float *m, float *v, const float *g, size_t n,
                        float lr, float beta1, float beta2, float eps, float wd,
                        float bc1, float bc2, int avx512)
{
    size_t done = 0;
#ifdef HAVE_AVX512_BODY
    if (avx512) done = adamw_avx512(p, m, v, g, n, lr, beta1, beta2, eps, wd, bc1, bc2);
#else
    (void)avx512;
#endif
    adamw_range(p + done, m + done, v + done, g + done, n - done, lr, beta1, beta2, eps, wd, bc1, bc2);
}

static int have_avx512(void)
{
#ifdef HAVE_AVX512_BODY
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

void adamw_update(float *p, float *m, float *v, const float *g, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd,
                  int t)
{
    size_t off = 0;
    int decay = 1;
    adamw_update_tensors(p, m, v, g, &off, &n, &decay, 1, lr, beta1, beta2, eps, wd, t);
}

/* Every tensor in one parallel region (one fork and join per step, not
 * one per tensor): thread k takes the k-th share of the tensors' total
 * length, in multiples of 16 elements, and walks the tensors its share
 * meets.  The concatenation counts each tensor as rounded up to 16, so
 * every piece starts at a multiple of 16 from its tensor's start and the
 * vector body and the tail do the same elements for any thread count:
 * the result does not depend on it. */
void adamw_update_tensors(float *p, float *m, float *v, const float *g,
                          const size_t *offset, const size_t *numel, const int *decay,
                          int n_tensors, float lr, float beta1, float beta2, float eps,
                          float wd, int t)
{
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    int avx512 = have_avx512();
    size_t total = 0;               /* each tensor's length rounded up to 16 */
    for (int i = 0; i < n_tensors; i++) total += (numel[i] + 15) / 16 * 16;
    #pragma omp parallel if (total >= 16384)
    {
        int nt = omp_get_num_threads(), k = omp_get_thread_num();
        size_t chunk = ((total + nt - 1) / nt + 15) / 16 * 16;
        size_t lo = k * chunk < total ? k * chunk : total, hi = lo + chunk < total ? lo + chunk : total;
        size_t base = 0;            /* start of tensor i in the concatenation */
        for (int i = 0; i < n_tensors && base < hi; base += (numel[i] + 15) / 16 * 16, i++) {
            size_t a = lo > base ? lo - base : 0, b = hi - base < numel[i] ? hi - base : numel[i];
            if (a >= b) continue;
            size_t o = offset[i] + a;
            adamw_piece(p + o, m + o, v + o, g + o, b - a, lr, beta1, beta2, eps,
                        decay[i] ? wd : 0.0f, bc1, bc2, avx512);
        }
    }
}

/* Sum of squares of one block, in double. */
HAT_CLONES
static double sumsq_block(const float *x, size_t n)
{
    double s = 0;
    #pragma omp simd reduction(+:s)
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

/* A fixed number of pieces (by n alone), summed in piece order: the
 * same answer for any thread count or schedule. */
#define SUMSQ_PIECES 1024
double sumsq(const float *x, size_t n)
{
    double part[SUMSQ_PIECES], total = 0;
    #pragma omp parallel for schedule(static) if (n >= 16384)
    for (int b = 0; b < SUMSQ_PIECES; b++) {
        size_t lo = n * b / SUMSQ_PIECES, hi = n * (b + 1) / SUMSQ_PIECES;
        part[b] = sumsq_block(x + lo, hi - lo);
    }
    for (int b = 0; b < SUMSQ_PIECES; b++) total += part[b];
    return total;
}

void scale_inplace(float *x, size_t n, float s)
{
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}
