/* bench_gemm.c — the GEMM peak a training step can reach: every dense
 * product of one sft-step step (q, k, v, o, gate, up, down per layer and
 * the LM head; forward, then backward's d(input) and d(weight)) run alone
 * through hat's own matmul_forward / matmul_backward at the step's
 * shapes, on the threads OMP_NUM_THREADS gives.  tests/bench_model.sh
 * divides the step's achieved FLOP/s by this figure for its MFU: what
 * the GEMM library gives these very products on this machine, not a
 * datasheet.
 *
 *   bench_gemm CONFIG.json B T [REPS]
 *
 * One JSON line: the linear FLOPs per step, the best of REPS (default 5,
 * after one warm-up) seconds for all of them, GFLOP/s, the GEMM library
 * and kernel in use (gemm_kernel: HAT_GEMM chooses, man 7 hat) and the
 * kernel OpenBLAS picked for this CPU (OPENBLAS_CORETYPE overrides it).  Attention's
 * own products (per-head tiles) are not included: they are counted in
 * the step's FLOPs but run at the tile shapes, not these. */
#include "kernels.h"
#include "model.h"
#include "util.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { int C, OC, count; } shape;   /* (N,C) x (OC,C)^T, count times */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *filled(size_t n, float v)
{
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, n * sizeof(float))) hat_die("out of memory");
    for (size_t i = 0; i < n; i++) p[i] = v * (float)((i % 13) + 1);
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 4) { fputs("usage: bench_gemm CONFIG.json B T [REPS]\n", stderr); return 2; }
    hat_prog = "bench_gemm";
    model_config c;
    if (model_config_load(&c, argv[1])) return 1;
    int B = atoi(argv[2]), T = atoi(argv[3]), reps = argc > 4 ? atoi(argv[4]) : 5;
    if (B < 1 || T < 1 || reps < 1) { fputs("bench_gemm: B, T and REPS must be positive\n", stderr); return 2; }
    int N = B * T, C = c.hidden_size, FF = c.intermediate_size, V = c.vocab_size;
    int HD = c.n_heads * c.head_dim, KD = c.n_kv_heads * c.head_dim, L = c.n_layers;
    shape sh[] = { { C, HD, L }, { C, KD, 2 * L }, { HD, C, L }, { C, FF, 2 * L }, { FF, C, L }, { C, V, 1 } };
    int ns = sizeof sh / sizeof sh[0];
    size_t maxio = 0, maxw = 0;
    for (int s = 0; s < ns; s++) {
        size_t io = (size_t)N * (sh[s].C > sh[s].OC ? sh[s].C : sh[s].OC), w = (size_t)sh[s].C * sh[s].OC;
        if (io > maxio) maxio = io;
        if (w > maxw) maxw = w;
    }
    float *x = filled(maxio, 1e-3f), *y = filled(maxio, 0), *dy = filled(maxio, 1e-3f);
    float *dx = filled(maxio, 0), *w = filled(maxw, 1e-3f), *dw = filled(maxw, 0);
    double flops = 0;
    for (int s = 0; s < ns; s++) flops += 3.0 * 2 * N * sh[s].C * sh[s].OC * sh[s].count;
    double best = 0;
    for (int r = 0; r <= reps; r++) {
        double t0 = now();
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < sh[s].count; k++) {
                matmul_forward(y, x, w, N, sh[s].C, sh[s].OC, 0);
                matmul_backward(dx, dw, dy, x, w, N, sh[s].C, sh[s].OC);
            }
        double t = now() - t0;
        if (r && (best == 0 || t < best)) best = t;   /* rep 0 warms up */
    }
    printf("{\"B\":%d,\"T\":%d,\"threads\":%d,\"linear_gflop_per_step\":%.2f,"
           "\"gemm_ms_per_step\":%.1f,\"gemm_gflops\":%.1f,\"gemm_kernel\":\"%s\",\"openblas_core\":\"%s\"}\n",
           B, T, omp_get_max_threads(), flops / 1e9, best * 1e3, flops / best / 1e9,
           gemm_kernel_name(), openblas_get_corename());
    free(x); free(y); free(dy); free(dx); free(w); free(dw);
    return 0;
}
