/* test_shard.c — N copies of a program over its records (common/shard.c):
 * this binary is its own copy (HAT_SHARD set: it echoes its records, as
 * TEST_SHARD_MODE says), and the parent checks that every record reaches
 * copy i mod N, the lines come back in record order whatever the copies'
 * speeds, "null" lines count as failures (and stop the drain when asked),
 * and a copy that dies fails the run. */
#include "test.h"
#include "jsonl.h"
#include "shard.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The copy: each record "rec-I" (or "bad") read from stdin becomes the
 * line "rec-I-K" (or null); copy K sleeps K ms a record so the copies run
 * at different speeds.  mode "die": copy 1 exits 3 after its first record. */
static int copy_main(shard_id me)
{
    const char *mode = getenv("TEST_SHARD_MODE");
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    int seen = 0;
    while ((n = getline(&buf, &cap, stdin)) > 0) {
        json_t *w = json_loadb(buf, n, 0, NULL), *keep = NULL;
        const char *file;
        long line;
        json_t *r = shard_unwrap(w, &keep, &file, &line);
        const char *s = json_string_value(r);
        usleep(1000 * me.k);
        if (!strcmp(s, "bad")) printf("null\n");
        else printf("%s-%d\n", s, me.k);
        fflush(stdout);
        json_decref(r);
        json_decref(keep);
        if (mode && !strcmp(mode, "die") && me.k == 1 && ++seen == 1) exit(3);
    }
    free(buf);
    return 0;
}

static char **self_argv;
static char path[256];

/* Send nrec records ("bad" where i % bad_every == 0, if bad_every) to n
 * copies and drain them into path; the drain's and finish's results. */
static void run(int n, int nrec, int bad_every, int stop, int *drain_rc, int *finish_rc, long *failed)
{
    shard_pool *p = shard_start(n, self_argv);
    CHECK(p != NULL);
    hat_out *o = out_open(path);
    int rc = 0;
    *failed = 0;
    for (int i = 0; i < nrec && !rc; i++) {
        char b[32];
        snprintf(b, sizeof b, "rec-%d", i);
        json_t *r = json_string(bad_every && i % bad_every == 0 ? "bad" : b);
        rc = shard_send_record(p, r, "in.jsonl", i + 1);
        json_decref(r);
        if (!rc) rc = shard_drain(p, o, 0, stop, failed);
    }
    shard_close(p);
    if (!rc) rc = shard_drain(p, o, 1, stop, failed);
    *drain_rc = rc;
    *finish_rc = shard_finish(p);
    out_close(o);
}

static char *slurp(void)
{
    size_t len;
    char *s = read_file(path, &len);
    return s ? s : xstrdup("");
}

static void records_come_back_in_order(void)
{
    unsetenv("TEST_SHARD_MODE");
    int drc, frc;
    long failed;
    run(3, 50, 0, 1, &drc, &frc, &failed);
    CHECK_EQ_INT(drc, 0);
    CHECK_EQ_INT(frc, 0);
    CHECK_EQ_INT(failed, 0);
    sbuf want;
    sbuf_init(&want);
    for (int i = 0; i < 50; i++) sbuf_printf(&want, "rec-%d-%d\n", i, i % 3);
    char *got = slurp();
    CHECK_STR(got, want.s);
    free(got);
    sbuf_free(&want);
}

static void null_lines_are_failures(void)
{
    unsetenv("TEST_SHARD_MODE");
    int drc, frc;
    long failed;
    run(2, 30, 7, 0, &drc, &frc, &failed);     /* records 0, 7, 14, 21, 28 fail */
    CHECK_EQ_INT(drc, 0);
    CHECK_EQ_INT(frc, 0);
    CHECK_EQ_INT(failed, 5);
    sbuf want;
    sbuf_init(&want);
    for (int i = 0; i < 30; i++)
        if (i % 7) sbuf_printf(&want, "rec-%d-%d\n", i, i % 2);
    char *got = slurp();
    CHECK_STR(got, want.s);
    free(got);
    sbuf_free(&want);
    run(2, 30, 7, 1, &drc, &frc, &failed);     /* stop: at record 0 */
    CHECK_EQ_INT(drc, -1);
    CHECK_EQ_INT(frc, -1);
    CHECK_EQ_INT(failed, 1);
}

static void a_copy_that_dies_fails_the_run(void)
{
    setenv("TEST_SHARD_MODE", "die", 1);
    int drc, frc;
    long failed;
    run(2, 20, 0, 1, &drc, &frc, &failed);
    CHECK_EQ_INT(drc, -1);
    CHECK_EQ_INT(frc, -1);
    unsetenv("TEST_SHARD_MODE");
}

int main(int argc, char **argv)
{
    shard_id me = shard_self();
    if (me.n) return copy_main(me);
    (void)argc;
    self_argv = argv;
    hat_prog = "test_shard";
    snprintf(path, sizeof path, "%s/test_shard.%d.out", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    RUN(records_come_back_in_order);
    RUN(null_lines_are_failures);
    RUN(a_copy_that_dies_fails_the_run);
    unlink(path);
    TEST_MAIN_END();
}
