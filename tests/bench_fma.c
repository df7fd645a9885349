/* bench_fma.c — the machine's fp32 multiply-add peak: what no GEMM can
 * beat.  Each OpenMP thread runs ACC independent chains of fused
 * multiply-adds on registers only (no loads or stores in the loop), on
 * the widest vectors the CPU has (AVX-512 where it is there, else AVX2
 * with FMA), so the figure is issue width x vector width x clock as the
 * cores run right now, not a datasheet's.  tests/bench_model.sh puts it
 * beside the GEMM library's rate on the step's shapes (bench_gemm.c): the
 * gap between the two is the library's, the gap between the GEMM rate and
 * the step's is hat's.
 *
 *   bench_fma [SECONDS]     one JSON line: {"fma_gflops", "threads", "isa"}
 *
 * The best of 5 rounds of about SECONDS/5 each (default 1 s in all). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define ACC 12          /* > FMA latency (4) x pipes (2) on current x86 cores */

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));

/* n rounds of ACC chains; returns a sum so the work is not discarded. */
#define CHAINS(V)                                                                \
    {                                                                            \
        V a[ACC], b = (V){ 0 } + 0.999999f, c = (V){ 0 } + 1e-7f;               \
        for (int i = 0; i < ACC; i++) a[i] = (V){ 0 } + (float)i;                \
        for (long k = 0; k < n; k++)                                             \
            _Pragma("GCC unroll 12") for (int i = 0; i < ACC; i++) a[i] = a[i] * b + c; \
        float s = 0;                                                             \
        for (int i = 0; i < ACC; i++) s += a[i][0];                              \
        return s;                                                                \
    }

__attribute__((target("avx512f"))) static float chains16(long n) CHAINS(v16)
__attribute__((target("avx2,fma"))) static float chains8(long n) CHAINS(v8)

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(secs > 0)) { fputs("usage: bench_fma [SECONDS]\n", stderr); return 2; }
    __builtin_cpu_init();
    int wide = __builtin_cpu_supports("avx512f"), lanes = wide ? 16 : 8;
    if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        puts("{\"fma_gflops\":null,\"threads\":null,\"isa\":null}");
        return 0;
    }
    int nt = omp_get_max_threads();
    /* calibrate: rounds of n iterations that take about secs / 5 */
    long n = 1 << 20;
    for (;;) {
        double t = omp_get_wtime();
        volatile float s = wide ? chains16(n) : chains8(n);
        (void)s;
        t = omp_get_wtime() - t;
        if (t > secs / 20 || n > (1L << 40)) { n = (long)(n * (secs / 5) / t) + 1; break; }
        n *= 4;
    }
    double best = 0;
    for (int r = 0; r < 5; r++) {
        float sink = 0;
        double t = omp_get_wtime();
        #pragma omp parallel reduction(+ : sink)
        sink += wide ? chains16(n) : chains8(n);
        t = omp_get_wtime() - t;
        double g = 2.0 * lanes * ACC * (double)n * nt / t / 1e9;
        if (g > best) best = g;
        volatile float keep = sink;       /* the chains' result is used */
        (void)keep;
    }
    printf("{\"fma_gflops\":%.1f,\"threads\":%d,\"isa\":\"%s\"}\n", best, nt, wide ? "avx512f" : "avx2+fma");
    return 0;
}
