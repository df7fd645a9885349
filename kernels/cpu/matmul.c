/* matmul.c — dense layers on OpenBLAS sgemm, or on oneDNN's matmul where
 * that is faster (onednn.c says where; CPU back end).
 * Weights are (OC, C) as in Hugging Face, so forward is inp W^T.
 *
 * Threading: the OpenMP threads split each product into disjoint blocks
 * of the output and each runs a single-threaded sgemm on its block
 * (oneDNN too: it threads itself less well on 2 cores, 3-5% above
 * OpenBLAS where one thread a block gives 13%).
 * Letting OpenBLAS thread itself instead (its pthread build is Debian's
 * default) puts two thread pools on the same cores: after every sgemm
 * its workers spin in sched_yield while ours spin in libgomp, and a
 * 2-core profile spent a third of the time there.  The split is a fixed
 * function of the sizes and the thread count, and every output element
 * is still one K-long sum in one call, so results are deterministic for
 * a given thread count.  With the OpenMP build of OpenBLAS, calls made
 * inside a parallel region are single-threaded already.
 *
 * Waiting: see "libgomp's spin" below. */
#include "kernels.h"

#include <cblas.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single_threaded(void)
{
    /* 1 = pthreads build.  (On the OpenMP build this call would also set
     * OUR OpenMP thread count, so it is made only where it is needed.) */
    if (openblas_get_parallel() == 1) openblas_set_num_threads(1);
}

void matmul_init(void) { pthread_once(&blas_once, blas_single_threaded); }

/* ------------------------------------------------------------ libgomp's spin
 * A thread that reaches the end of a parallel region first, or waits for
 * the next one, spins before it sleeps: 300,000 rounds by default, some
 * 8 ms here, longer than a scheduler slice.  On cores shared with other
 * work the spinning thread keeps the core the one it waits for needs; a
 * 2-thread training step profiled at load 4.5 spent 42% of its samples
 * there, and OMP_WAIT_POLICY=passive made it 1.8x faster.  libgomp
 * spins only 100 rounds when it manages more threads than it found CPUs
 * (its manual, GOMP_SPINCOUNT), and it counts the CPUs once, from the
 * affinity mask, as it is loaded.  Its settings cannot be changed after
 * that, nor set from the environment by this program (a .preinit_array
 * hook runs before the C library has the environment), so: the hook
 * narrows the mask to one CPU while the libraries load, and the
 * constructor below, which runs after them and before main, gives the
 * mask back and the default thread count (the CPUs, as libgomp would
 * have chosen).  Thread counts and results are unchanged; only the
 * waiting is short.  Anyone who sets OMP_WAIT_POLICY, GOMP_SPINCOUNT or
 * a thread placement (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY) gets
 * libgomp exactly as they asked. */
static cpu_set_t wait_mask;
static int wait_narrowed, wait_nthreads_set;

static int env_has(char **envp, const char *key)
{
    size_t n = strlen(key);
    for (; envp && *envp; envp++)
        if (!strncmp(*envp, key, n) && (*envp)[n] == '=') return 1;
    return 0;
}

static void wait_short_begin(int argc, char **argv, char **envp)
{
    (void)argc; (void)argv;
    static const char *const keep[] = { "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_PROC_BIND",
                                        "OMP_PLACES", "GOMP_CPU_AFFINITY" };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (env_has(envp, keep[i])) return;
    if (sched_getaffinity(0, sizeof wait_mask, &wait_mask) || CPU_COUNT(&wait_mask) < 2) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &wait_mask)) { CPU_SET(c, &one); break; }
    wait_nthreads_set = env_has(envp, "OMP_NUM_THREADS");
    wait_narrowed = !sched_setaffinity(0, sizeof one, &one);
}

__attribute__((section(".preinit_array"), used))
static void (*const wait_short_hook)(int, char **, char **) = wait_short_begin;

__attribute__((constructor))
static void wait_short_end(void)
{
    if (!wait_narrowed) return;
    sched_setaffinity(0, sizeof wait_mask, &wait_mask);
    if (!wait_nthreads_set) omp_set_num_threads(CPU_COUNT(&wait_mask));
}

/* Below this many multiply-adds a split costs more than it saves. */
#define SPLIT_MIN_FLOPS (64 * 64 * 64)

/* [lo, hi) of part t of n split into nt parts, boundaries rounded to
 * multiples of 16 (whole SIMD panels for sgemm). */
static void part(int n, int nt, int t, int *lo, int *hi)
{
    int chunk = (n + nt - 1) / nt;
    chunk = (chunk + 15) / 16 * 16;
    *lo = t * chunk < n ? t * chunk : n;
    *hi = *lo + chunk < n ? *lo + chunk : n;
}

static int threads_for(double flops)
{
    int nt = omp_get_max_threads();
    return flops < SPLIT_MIN_FLOPS ? 1 : nt;
}

/* Under HAT_GEMM=bf16 the operands are rounded to bf16 once, by all the
 * threads, into buffers of the calling thread, and every block reads
 * them there (rounding inside each block had both threads round the
 * whole weight matrix: 1.46x fp32's rate where the kernels give 2x).
 * slot 0-2: one buffer per operand of a call. */
static const uint16_t *rounded(int slot, const float *src, size_t n, int nt)
{
    static __thread uint16_t *buf[3];
    static __thread size_t have[3];
    if (n > have[slot]) {
        free(buf[slot]);
        if (!(buf[slot] = malloc(n * sizeof(uint16_t)))) return NULL;
        have[slot] = n;
    }
    uint16_t *d = buf[slot];
    #pragma omp parallel num_threads(nt)
    {
        int lo, hi;
        part((int)((n + 15) / 16), nt, omp_get_thread_num(), &lo, &hi);
        size_t a = (size_t)lo * 16, b = (size_t)hi * 16 < n ? (size_t)hi * 16 : n;
        if (b > a) bf16_from_f32(d + a, src + a, b - a);
    }
    return d;
}

/* One block: A and B at element offsets ao and bo of the fp32 operands,
 * or of their bf16 copies a16 and b16 where those are given. */
static void block(int ta, int tb, int M, int N, int K, const float *A, const uint16_t *a16, size_t ao,
                  int lda, const float *B, const uint16_t *b16, size_t bo, int ldb, float beta,
                  float *C, int ldc)
{
    if (a16 && b16 && !onednn_gemm_bf16(ta, tb, M, N, K, a16 + ao, lda, b16 + bo, ldb, beta, C, ldc))
        return;
    gemm_block(ta, tb, M, N, K, 1.0f, A + ao, lda, B + bo, ldb, beta, C, ldc);
}

void matmul_forward(float *out, const float *inp, const float *w,
                    int N, int C, int OC, float beta)
{
    matmul_init();
    int nt = threads_for((double)N * C * OC), bf = gemm_bf16();
    const uint16_t *x16 = bf ? rounded(0, inp, (size_t)N * C, nt) : NULL;
    const uint16_t *w16 = bf ? rounded(1, w, (size_t)OC * C, nt) : NULL;
    int by_rows = N >= 16 * nt;     /* else (decoding) split the outputs */
    #pragma omp parallel num_threads(nt)
    {
        int lo, hi;
        part(by_rows ? N : OC, nt, omp_get_thread_num(), &lo, &hi);
        if (hi > lo && by_rows)
            block(0, 1, hi - lo, OC, C, inp, x16, (size_t)lo * C, C, w, w16, 0, C, beta,
                  out + (size_t)lo * OC, OC);
        else if (hi > lo)
            block(0, 1, N, hi - lo, C, inp, x16, 0, C, w, w16, (size_t)lo * C, C, beta, out + lo, OC);
    }
}

/* dinp = dout W + dbeta * dinp (dbeta 0 or 1); dw += dout^T inp. */
static void backward(float *dinp, float *dw, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC, float dbeta)
{
    matmul_init();
    int nt = threads_for((double)N * C * OC), bf = gemm_bf16();
    const uint16_t *g16 = bf ? rounded(0, dout, (size_t)N * OC, nt) : NULL;
    const uint16_t *w16 = bf && dinp ? rounded(1, w, (size_t)OC * C, nt) : NULL;
    const uint16_t *x16 = bf && dw ? rounded(2, inp, (size_t)N * C, nt) : NULL;
    #pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), lo, hi;
        if (dinp) {   /* (N,OC) x (OC,C): split rows, or columns when few */
            int by_rows = N >= 16 * nt;
            part(by_rows ? N : C, nt, t, &lo, &hi);
            if (hi > lo && by_rows)
                block(0, 0, hi - lo, C, OC, dout, g16, (size_t)lo * OC, OC, w, w16, 0, C, dbeta,
                      dinp + (size_t)lo * C, C);
            else if (hi > lo)
                block(0, 0, N, hi - lo, OC, dout, g16, 0, OC, w, w16, lo, C, dbeta, dinp + lo, C);
        }
        if (dw) {     /* (OC,N) x (N,C): split the larger side of dw */
            int by_rows = OC >= C;
            part(by_rows ? OC : C, nt, t, &lo, &hi);
            if (hi > lo && by_rows)
                block(1, 0, hi - lo, C, N, dout, g16, lo, OC, inp, x16, 0, C, 1.0f,
                      dw + (size_t)lo * C, C);
            else if (hi > lo)
                block(1, 0, OC, hi - lo, N, dout, g16, 0, OC, inp, x16, lo, C, 1.0f, dw + lo, C);
        }
    }
}

void matmul_backward(float *dinp, float *dw, const float *dout,
                     const float *inp, const float *w, int N, int C, int OC)
{
    backward(dinp, dw, dout, inp, w, N, C, OC, 1.0f);
}

void matmul_backward_set(float *dinp, float *dw, const float *dout,
                         const float *inp, const float *w, int N, int C, int OC)
{
    backward(dinp, dw, dout, inp, w, N, C, OC, 0.0f);
}

/* ------------------------------------------------------------ reference */

void matmul_forward_ref(float *out, const float *inp, const float *w,
                        int N, int C, int OC, float beta)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = 0;
            for (int i = 0; i < C; i++) s += (double)inp[(size_t)n * C + i] * w[(size_t)o * C + i];
            float *y = out + (size_t)n * OC + o;
            *y = (float)s + (beta != 0 ? beta * *y : 0);
        }
}

void matmul_backward_ref(float *dinp, float *dw, const float *dout,
                         const float *inp, const float *w, int N, int C, int OC)
{
    for (int n = 0; n < N && dinp; n++)
        for (int i = 0; i < C; i++) {
            double s = 0;
            for (int o = 0; o < OC; o++) s += (double)dout[(size_t)n * OC + o] * w[(size_t)o * C + i];
            dinp[(size_t)n * C + i] += (float)s;
        }
    for (int o = 0; o < OC && dw; o++)
        for (int i = 0; i < C; i++) {
            double s = 0;
            for (int n = 0; n < N; n++) s += (double)dout[(size_t)n * OC + o] * inp[(size_t)n * C + i];
            dw[(size_t)o * C + i] += (float)s;
        }
}
