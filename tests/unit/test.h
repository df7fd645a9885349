/* test.h — a tiny test harness for the C unit tests.
 *
 * Each test is a function; RUN(fn) runs it and prints one TAP-like line,
 * "ok - fn" or "not ok - fn", with every failed CHECK on stderr as
 * file:line.  tests/run.sh counts those lines.  main returns non-zero when
 * anything failed, so a crash or an early exit is also a failure. */
#ifndef HAT_TEST_H
#define HAT_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failed_here, t_pass, t_fail;

#define CHECK(c) do { if (!(c)) { t_failed_here = 1; \
    fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (a), _b = (b); if (_a != _b) { t_failed_here = 1; \
    fprintf(stderr, "  %s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, _a, _b); } } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
    if (!_a || !_b || strcmp(_a, _b)) { t_failed_here = 1; \
    fprintf(stderr, "  %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
            _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (a), _b = (b); \
    if (!(fabs(_a - _b) <= (tol))) { t_failed_here = 1; \
    fprintf(stderr, "  %s:%d: %s == %.9g, expected %.9g (tol %g)\n", __FILE__, __LINE__, \
            #a, _a, _b, (double)(tol)); } } while (0)

#define RUN(fn) do { t_failed_here = 0; fn(); \
    if (t_failed_here) { t_fail++; printf("not ok - %s\n", #fn); } \
    else { t_pass++; printf("ok - %s\n", #fn); } fflush(stdout); } while (0)

#define TEST_MAIN_END() return t_fail ? 1 : 0

/* A scratch directory per test binary, under tests/out (or $TMPDIR). */
/* Largest |a - b| over the array relative to the reference's largest |b|. */
static inline double test_rel_err(const float *a, const float *b, size_t n)
{
    double e = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        mx = fmax(mx, fabs((double)b[i]));
    }
    return e / fmax(mx, 1e-30);
}

static inline const char *test_tmpdir(void)
{
    static char dir[512];
    if (!dir[0]) {
        const char *base = getenv("HAT_TEST_TMP");
        snprintf(dir, sizeof dir, "%s/unitXXXXXX", base ? base : "/tmp");
        if (!mkdtemp(dir)) { perror("mkdtemp"); exit(1); }
    }
    return dir;
}

/* The example harness directory (examples/harness under $HAT_TOP, the
 * checkout tests/run.sh runs from). */
static inline const char *test_example_harness(void)
{
    static char path[1024];
    if (!path[0]) {
        const char *top = getenv("HAT_TOP");
        snprintf(path, sizeof path, "%s/examples/harness", top ? top : ".");
    }
    return path;
}

/* A conformance file (reference outputs of Hugging Face tokenizers, the
 * Qwen3 chat template, the original IFEval checker), kept in the
 * repository under tests/fixtures/conformance.  A missing file stops the
 * test binary: a test without its input must fail, not pass. */
static inline char *test_conformance(const char *dir, const char *name)
{
    const char *top = getenv("HAT_TOP");
    size_t n = strlen(top ? top : ".") + strlen(dir) + strlen(name) + 40;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/tests/fixtures/conformance/%s/%s", top ? top : ".", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) { fprintf(stderr, "%s: cannot open (conformance data)\n", p); exit(1); }
    fclose(f);
    return p;
}

/* How many times id occurs in an id list (a tok_ids or anything with
 * int *v and size_t n): the control-token counts of the prompt tests. */
static inline int test_count_int(const int *v, size_t n, int id)
{
    int c = 0;
    for (size_t i = 0; i < n; i++) c += v[i] == id;
    return c;
}
#define COUNT_ID(ids, id) test_count_int((ids)->v, (ids)->n, (id))

#endif
