/* onednn.c — one block of a row-major product on oneDNN's matmul, or on
 * OpenBLAS where oneDNN is not the faster (CPU back end).
 *
 * Why a second GEMM library: on AVX-512 CPUs oneDNN's brgemm kernels run
 * the shapes of a training step at 110 GFLOP/s a core where OpenBLAS
 * 0.3.21's sgemm gives 97 (AMD Zen 4, one thread, every product of the
 * small bench config; tests/bench_gemm.c measures it on the machine at
 * hand), and attention's skinny tiles gain more.  On AVX2-only CPUs
 * oneDNN falls back to its older jit gemm, slower than OpenBLAS there, so
 * the choice is made at run time from the kernel oneDNN itself reports
 * for a probe product:
 *   HAT_GEMM=auto     (default) oneDNN where its kernel is a brgemm, else OpenBLAS
 *   HAT_GEMM=onednn   oneDNN whatever its kernel;  HAT_GEMM=openblas  never
 * Both are fp32 with fp32 accumulation; they differ only in the order
 * of each K-long sum (~1e-7 relative).
 *
 * A product shape is one primitive (a plan), built the first time it is
 * seen (0.15 ms: oneDNN caches the kernels themselves) and kept for the
 * process in a hash table.  Callers split the work between their OpenMP
 * threads and each runs its block on one thread (oneDNN, called from a
 * parallel region, does not thread again): oneDNN threading one product
 * itself gave 3-5% over OpenBLAS on 2 cores where this gives 13%.  Each
 * thread has its own stream, scratchpad (the library's own, one per
 * primitive, made two threads on one plan take turns) and memory objects
 * per plan, so a call creates nothing (a 64x64x32 tile: 4.9 us, OpenBLAS
 * 5.2; at 64x1024x32, 46 against 65).  Results are deterministic for a
 * given thread count. */
#include "kernels.h"
#include "util.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc, acc;
    float alpha;
    dnnl_primitive_t prim;          /* the key is everything above */
    dnnl_memory_desc_t scratch;     /* its scratchpad, which the caller gives */
} plan;

/* Shapes kept at most: a step at T = 3072 has ~350 (attention's tiles
 * take 7 for each multiple of 64 up to T); past it, OpenBLAS. */
#define PLANS 2048                  /* table slots, a power of two */
#define MAX_PLANS (PLANS / 2)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static int active;
static char kernel_name[64] = "openblas";
static plan *table[PLANS];
static plan plans[MAX_PLANS];
static int nplans;

/* The (rows, cols) matrix at row-major leading dimension ld, or, trans,
 * its transpose: stored (cols, rows). */
static int desc(dnnl_memory_desc_t *d, int rows, int cols, int ld, int trans)
{
    dnnl_dims_t dims = { rows, cols }, st = { trans ? 1 : ld, trans ? ld : 1 };
    return dnnl_memory_desc_init_by_strides(d, 2, dims, dnnl_f32, st) != dnnl_success;
}

/* q's primitive, C (M,N) = alpha A (M,K) B (K,N) [+ C] (acc: a sum
 * post-op; alpha: output scales), and its scratchpad's descriptor into q. */
static dnnl_primitive_t build(plan *q, const char **impl)
{
    dnnl_memory_desc_t a, b, c;
    if (desc(&a, q->M, q->K, q->lda, q->ta) || desc(&b, q->K, q->N, q->ldb, q->tb) ||
        desc(&c, q->M, q->N, q->ldc, 0)) return NULL;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    if (dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) || dnnl_primitive_attr_create(&attr) ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        (q->alpha != 1.0f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &q->alpha)) ||
        (q->acc && (dnnl_post_ops_create(&po) || dnnl_post_ops_append_sum(po, 1.0f) ||
                    dnnl_primitive_attr_set_post_ops(attr, po))))
        goto out;
    if (!dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL)) {
        if (impl) dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl);
        if (impl && *impl) snprintf(kernel_name, sizeof kernel_name, "onednn %s", *impl);
        q->scratch = *dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (dnnl_primitive_create(&p, pd)) p = NULL;
        dnnl_primitive_desc_destroy(pd);
    }
out:
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return p;
}

static void init(void)
{
    const char *want = getenv("HAT_GEMM");
    if (want && *want && strcmp(want, "auto") && strcmp(want, "onednn") && strcmp(want, "openblas"))
        hat_die("HAT_GEMM=%s: expected auto, onednn or openblas", want);
    if (want && !strcmp(want, "openblas")) return;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0)) return;
    const char *impl = NULL;
    plan q = { 0, 1, 256, 256, 256, 256, 256, 256, 0, 1.0f, NULL, { 0 } };
    dnnl_primitive_t probe = build(&q, &impl);
    if (!probe) { dnnl_engine_destroy(engine); return; }
    dnnl_primitive_destroy(probe);
    active = (want && !strcmp(want, "onednn")) || (impl && !strncmp(impl, "brg", 3));
    if (!active) { strcpy(kernel_name, "openblas"); dnnl_engine_destroy(engine); }
}

int onednn_active(void)
{
    pthread_once(&once, init);
    return active;
}

const char *gemm_kernel_name(void)
{
    pthread_once(&once, init);
    return kernel_name;
}

static uint32_t key_hash(const plan *q)
{
    uint32_t h = 2166136261u;                /* FNV-1a over the key's bytes */
    const unsigned char *b = (const unsigned char *)q;
    for (size_t i = 0; i < offsetof(plan, prim); i++) h = (h ^ b[i]) * 16777619u;
    return h;
}

/* The index of the kept plan for q's shape, built the first time; -1 once
 * MAX_PLANS are kept or oneDNN has no kernel for it.  Plans are never
 * freed or moved, so a plan stays good without the lock. */
static int plan_for(plan *q)
{
    uint32_t i = key_hash(q) & (PLANS - 1);
    int at = -1;
    pthread_mutex_lock(&plans_lock);
    for (; table[i]; i = (i + 1) & (PLANS - 1))
        if (!memcmp(table[i], q, offsetof(plan, prim))) { at = (int)(table[i] - plans); break; }
    if (at < 0 && nplans < MAX_PLANS && (q->prim = build(q, NULL))) {
        at = nplans++;
        plans[at] = *q;
        table[i] = &plans[at];
    }
    pthread_mutex_unlock(&plans_lock);
    return at;
}

/* What a thread keeps: its stream, scratchpad and, per plan, the memory
 * objects of A, B, C and the scratchpad (their pointers set per call). */
typedef struct {
    dnnl_stream_t stream;
    void *scratch;
    size_t scratch_bytes;
    dnnl_memory_t (*mem)[4];        /* (MAX_PLANS) */
} thread_state;

static __thread thread_state ts;

static int thread_ready(void)
{
    if (!ts.mem) ts.mem = xcalloc(MAX_PLANS, sizeof *ts.mem);
    return ts.stream || !dnnl_stream_create(&ts.stream, engine, dnnl_stream_default_flags);
}

static void *scratchpad(size_t bytes)
{
    if (bytes <= ts.scratch_bytes) return ts.scratch;
    free(ts.scratch);
    if (posix_memalign(&ts.scratch, 64, bytes)) hat_die("out of memory (oneDNN scratchpad of %zu bytes)", bytes);
    ts.scratch_bytes = bytes;
    return ts.scratch;
}

/* Plan i's memory objects for this thread, made the first time. */
static dnnl_memory_t *memories(int i)
{
    dnnl_memory_t *m = ts.mem[i];
    if (m[0]) return m;
    const plan *q = &plans[i];
    dnnl_memory_desc_t a, b, c;
    if (desc(&a, q->M, q->K, q->lda, q->ta) || desc(&b, q->K, q->N, q->ldb, q->tb) ||
        desc(&c, q->M, q->N, q->ldc, 0) ||
        dnnl_memory_create(&m[0], &a, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&m[1], &b, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&m[2], &c, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&m[3], &q->scratch, engine, DNNL_MEMORY_NONE))
        hat_die("oneDNN: cannot describe a %dx%dx%d product", q->M, q->N, q->K);
    return m;
}

int onednn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
    if (!onednn_active() || (beta != 0.0f && beta != 1.0f) || !thread_ready()) return -1;
    plan q = { ta, tb, M, N, K, lda, ldb, ldc, beta != 0.0f, alpha, NULL, { 0 } };
    int i = plan_for(&q);
    if (i < 0) return -1;
    const plan *p = &plans[i];
    dnnl_memory_t *m = memories(i);
    size_t sbytes = dnnl_memory_desc_get_size(&p->scratch);
    dnnl_memory_set_data_handle(m[0], (void *)A);
    dnnl_memory_set_data_handle(m[1], (void *)B);
    dnnl_memory_set_data_handle(m[2], C);
    dnnl_memory_set_data_handle(m[3], sbytes ? scratchpad(sbytes) : NULL);
    dnnl_exec_arg_t args[] = { { DNNL_ARG_SRC, m[0] }, { DNNL_ARG_WEIGHTS, m[1] }, { DNNL_ARG_DST, m[2] },
                               { DNNL_ARG_SCRATCHPAD, m[3] } };
    /* a product that started cannot fall back: C may be half written */
    if (dnnl_primitive_execute(p->prim, ts.stream, 4, args) || dnnl_stream_wait(ts.stream))
        hat_die("oneDNN matmul %dx%dx%d failed", M, N, K);
    return 0;
}

void gemm_block(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
    if (!onednn_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
