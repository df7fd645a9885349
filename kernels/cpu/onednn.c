/* onednn.c — the dense training products on oneDNN's matmul (CPU back end).
 *
 * Why a second GEMM library: on AVX-512 CPUs oneDNN's brgemm kernels run
 * the shapes of a training step at 110 GFLOP/s a core where OpenBLAS
 * 0.3.21's sgemm gives 97 (AMD Zen 4, one thread, every product of the
 * small bench config; tests/bench_gemm.c measures it on the machine at
 * hand).  On AVX2-only CPUs oneDNN falls back to its older jit gemm,
 * which is slower than OpenBLAS there, so the choice is made at run time
 * from the kernel oneDNN itself reports for a probe product:
 *   HAT_GEMM=auto     (default) oneDNN where its kernel is a brgemm, else OpenBLAS
 *   HAT_GEMM=onednn   oneDNN whatever its kernel;  HAT_GEMM=openblas  never
 * Both are fp32 with fp32 accumulation; they differ only in the order
 * of each K-long sum (~1e-7 relative).
 *
 * A product is one primitive, built the first time its shape is seen
 * (a few milliseconds of JIT) and kept for the process: a training step
 * has a dozen shapes.  oneDNN threads it itself on the OpenMP threads
 * (Debian's build uses OpenMP); from inside a parallel region it runs on
 * the calling thread.  Results are deterministic for a given thread
 * count, as with the OpenBLAS split. */
#include "kernels.h"
#include "util.h"

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc, acc;
    dnnl_primitive_t prim;          /* the key is everything above */
    dnnl_memory_desc_t scratch;     /* its scratchpad, which the caller gives */
} plan;

#define MAX_PLANS 128

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;
static int active;
static char kernel_name[64] = "openblas";
static plan plans[MAX_PLANS];
static int nplans;

/* The (rows, cols) matrix at row-major leading dimension ld, or, trans,
 * its transpose: stored (cols, rows). */
static int desc(dnnl_memory_desc_t *d, int rows, int cols, int ld, int trans)
{
    dnnl_dims_t dims = { rows, cols }, st = { trans ? 1 : ld, trans ? ld : 1 };
    return dnnl_memory_desc_init_by_strides(d, 2, dims, dnnl_f32, st) != dnnl_success;
}

/* q's primitive, C (M,N) = A (M,K) B (K,N) or C += A B (acc: a sum
 * post-op), and its scratchpad's descriptor into q.  The scratchpad is
 * the caller's (user mode): with the library's own, one per primitive,
 * two threads running the same product on their halves took turns. */
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
    plan q = { 0, 1, 256, 256, 256, 256, 256, 256, 0, NULL, { 0 } };
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

/* The kept plan for q's shape, built the first time; NULL once MAX_PLANS
 * shapes are kept (OpenBLAS takes the rest).  Plans are never freed, so
 * the pointer stays good without the lock. */
static const plan *plan_for(plan *q)
{
    const plan *p = NULL;
    pthread_mutex_lock(&plans_lock);
    for (int i = 0; i < nplans && !p; i++)
        if (!memcmp(&plans[i], q, offsetof(plan, prim))) p = &plans[i];
    if (!p && nplans < MAX_PLANS && (q->prim = build(q, NULL))) {
        plans[nplans] = *q;
        p = &plans[nplans++];
    }
    pthread_mutex_unlock(&plans_lock);
    return p;
}

/* A thread's scratchpad, grown to the largest a plan has asked of it. */
static void *scratchpad(size_t bytes)
{
    static __thread void *buf;
    static __thread size_t have;
    if (bytes <= have) return buf;
    free(buf);
    if (posix_memalign(&buf, 64, bytes)) hat_die("out of memory (oneDNN scratchpad of %zu bytes)", bytes);
    have = bytes;
    return buf;
}

static int memory(dnnl_memory_t *m, int rows, int cols, int ld, int trans, const float *data)
{
    dnnl_memory_desc_t d;
    return desc(&d, rows, cols, ld, trans) || dnnl_memory_create(m, &d, engine, (void *)data);
}

int onednn_gemm(int ta, int tb, int M, int N, int K, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
    if (!onednn_active() || (beta != 0.0f && beta != 1.0f)) return -1;
    plan q = { ta, tb, M, N, K, lda, ldb, ldc, beta != 0.0f, NULL, { 0 } };
    const plan *p = plan_for(&q);
    if (!p) return -1;
    /* a stream per call: cheap on the CPU engine, and safe from any thread */
    dnnl_stream_t s;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    if (dnnl_stream_create(&s, engine, dnnl_stream_default_flags)) return -1;
    size_t sbytes = dnnl_memory_desc_get_size(&p->scratch);
    int bad = memory(&ma, M, K, lda, ta, A) || memory(&mb, K, N, ldb, tb, B) ||
              memory(&mc, M, N, ldc, 0, C) ||
              dnnl_memory_create(&ms, &p->scratch, engine, sbytes ? scratchpad(sbytes) : NULL);
    if (!bad) {
        dnnl_exec_arg_t args[] = { { DNNL_ARG_SRC, ma }, { DNNL_ARG_WEIGHTS, mb }, { DNNL_ARG_DST, mc },
                                   { DNNL_ARG_SCRATCHPAD, ms } };
        bad = dnnl_primitive_execute(p->prim, s, 4, args) || dnnl_stream_wait(s);
        /* a product that started cannot fall back: C may be half written */
        if (bad) hat_die("oneDNN matmul %dx%dx%d failed", M, N, K);
    }
    if (ma) dnnl_memory_destroy(ma);
    if (mb) dnnl_memory_destroy(mb);
    if (mc) dnnl_memory_destroy(mc);
    if (ms) dnnl_memory_destroy(ms);
    dnnl_stream_destroy(s);
    return bad ? -1 : 0;
}
