/* test_threads.c — how the process's OpenMP threads wait (matmul.c,
 * "libgomp's spin"): the CPU mask is given back in full before main and
 * to every worker, the thread count is what the user or libgomp would
 * have chosen, and a thread waiting for the next parallel region sleeps
 * within microseconds instead of spinning for milliseconds.  The hook
 * stands aside where the user set a wait policy or a placement, so the
 * spin check only runs where none is set. */
#include "test.h"
#include "kernels.h"

#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

/* The parent (make, sh) has the mask this process was started with. */
static int parent_mask(cpu_set_t *m) { return sched_getaffinity(getppid(), sizeof *m, m); }

static void mask_and_thread_count_kept(void)
{
    matmul_init();
    cpu_set_t want, got;
    if (parent_mask(&want)) return;
    CHECK(!sched_getaffinity(0, sizeof got, &got) && CPU_EQUAL(&got, &want));
    const char *n = getenv("OMP_NUM_THREADS");
    if (n) CHECK_EQ_INT(omp_get_max_threads(), atoi(n));
    else CHECK_EQ_INT(omp_get_max_threads(), CPU_COUNT(&want));
    int workers_ok = 1;
    #pragma omp parallel num_threads(2) reduction(&&:workers_ok)
    {
        cpu_set_t w;
        workers_ok = !sched_getaffinity(0, sizeof w, &w) && CPU_EQUAL(&w, &want);
    }
    CHECK(workers_ok);
}

/* 20 serial stretches of 20 ms between 2-thread regions: libgomp's
 * default spin (~8 ms each here) burns ~0.16 s of CPU; sleeping, ~0. */
static void idle_threads_sleep(void)
{
    cpu_set_t m;
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("OMP_PROC_BIND") ||
        getenv("OMP_PLACES") || getenv("GOMP_CPU_AFFINITY") ||
        sched_getaffinity(0, sizeof m, &m) || CPU_COUNT(&m) < 2)
        return;
    double s = 0;
    #pragma omp parallel num_threads(2) reduction(+:s)
    s += 1;                                   /* the worker exists before timing */
    clock_t c0 = clock();
    for (int r = 0; r < 20; r++) {
        #pragma omp parallel num_threads(2) reduction(+:s)
        s += omp_get_thread_num();
        usleep(20000);
    }
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    CHECK(s == 22);
    if (cpu >= 0.06) fprintf(stderr, "  idle waiting took %.3f s of CPU\n", cpu);
    CHECK(cpu < 0.06);
}

int main(void)
{
    RUN(mask_and_thread_count_kept);
    RUN(idle_threads_sleep);
    TEST_MAIN_END();
}
