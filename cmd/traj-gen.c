/* traj-gen — teacher trajectories: tasks + harness → traj.jsonl, through the simulator. */
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "harness_memo.h"
#include "judge.h"
#include "jsonl.h"
#include "rng.h"
#include "sim.h"
#include "tasks.h"
#include "teacher.h"
#include "traj_write.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: traj-gen --world FILE --harness H [--think P] [--keep-retries P]\n"
    "                [--teacher-cmd CMD] [--seed N] [--skip-bad] [-o FILE] [TASKS...]\n"
    "Play each task of tasks.jsonl through the simulator with the scripted teacher\n"
    "(or an external policy) and write one trajectory per line (man 5 traj.jsonl).\n"
    "  --world FILE        world.json (required)\n"
    "  --harness H         harness directory, archive or compiled JSON (required\n"
    "                      unless every task line carries an inline \"harness\")\n"
    "  --think P           fraction of trajectories with a short reasoning_content (default 0)\n"
    "  --keep-retries P    fraction that keep failed attempts before a successful retry (default 0.1)\n"
    "  --teacher-cmd CMD   policy program: reads {\"harness\",\"messages\",\"tools\"} on stdin,\n"
    "                      prints one assistant message as JSON\n"
    "  --keep-if EXPR      keep only trajectories whose verdict satisfies EXPR, e.g.\n"
    "                      'pass' or 'accuracy=1,effectiveness>=0.5' (judge(1))\n"
    "  --seed N            seed (default 1)\n"
    "  --skip-bad          skip bad task lines and failed tasks, report the count\n";

typedef struct {
    const char *cmd;
    char *tmp;
} policy;

/* Ask the external policy for one assistant message. */
static json_t *ask_policy(policy *p, const json_t *h, const json_t *msgs, char **err)
{
    json_t *tools = harness_tools(h);
    json_t *req = json_pack("{s:O,s:O,s:o}", "harness", h, "messages", msgs, "tools", tools);
    char *text = json_compact(req);
    json_decref(req);
    int rc = write_file_atomic(p->tmp, text, strlen(text));
    free(text);
    if (rc) { *err = xstrdup("cannot write the request file"); return NULL; }
    char *sh = xasprintf("%s < '%s'", p->cmd, p->tmp);
    FILE *f = popen(sh, "r");
    free(sh);
    if (!f) { *err = xstrdup("cannot run --teacher-cmd"); return NULL; }
    sbuf b;
    sbuf_init(&b);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sbuf_add(&b, buf, n);
    int st = pclose(f);
    json_error_t je;
    json_t *m = b.s ? json_loads(b.s, JSON_DECODE_ANY, &je) : NULL;
    if (st != 0) *err = xasprintf("--teacher-cmd exited with status %d", WEXITSTATUS(st));
    else if (!json_is_object(m)) *err = xasprintf("--teacher-cmd printed no JSON message: %.80s", b.s ? b.s : "");
    sbuf_free(&b);
    if (*err) { json_decref(m); return NULL; }
    json_object_set_new(m, "role", json_string("assistant"));
    return m;
}

static json_t *run_policy(policy *p, sim *s, const json_t *task, char **err)
{
    const json_t *h = sim_harness(s);
    double mt;
    int cap = harness_param(h, "max_turns", &mt) ? 10 : (int)mt + 2;
    json_t *msgs = json_array();
    json_array_append_new(msgs, sim_begin(s, task));
    for (int turn = 0; turn < cap; turn++) {
        json_t *a = ask_policy(p, h, msgs, err);
        if (!a) { json_decref(msgs); return NULL; }
        int done;
        json_t *next = sim_step(s, a, &done);
        json_array_append_new(msgs, a);
        json_array_extend(msgs, next);
        json_decref(next);
        if (done) break;
    }
    return msgs;
}

/* --keep-if: score from the simulator's own record of the conversation
 * (no replay needed: the messages came from this very simulator). */
static int keep(judge *j, const judge_filter *f, sim *s, const json_t *task, const json_t *h,
                const json_t *msgs)
{
    judge_verdict v;
    judge_score_record(j, task, h, sim_record(s), msgs, &v);
    int ok = judge_filter_match(f, &v);
    judge_verdict_clear(&v);
    return ok;
}

int main(int argc, char **argv)
{
    enum { O_WORLD = 1, O_HARNESS, O_THINK, O_KEEP, O_CMD, O_KEEPIF };
    static const struct option longs[] = {
        { "world", required_argument, NULL, O_WORLD }, { "harness", required_argument, NULL, O_HARNESS },
        { "think", required_argument, NULL, O_THINK }, { "keep-retries", required_argument, NULL, O_KEEP },
        { "teacher-cmd", required_argument, NULL, O_CMD }, { "keep-if", required_argument, NULL, O_KEEPIF }, { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *wpath = NULL, *hpath = NULL;
    teacher_opts to = { 0, 0.1 };
    policy pol = { NULL, NULL };
    const char *keep_if = NULL;
    int opt;
    cli_init(argc, argv);
    /* Lines of ~10 KB through stdio's default 4 KB buffer cost two or three
     * write calls each; one large buffer (not for a terminal) writes them
     * in bulk.  Before any output, as setvbuf requires. */
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, NULL, _IOFBF, 1 << 18);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_WORLD: wpath = optarg; break;
        case O_HARNESS: hpath = optarg; break;
        case O_THINK: to.think = cli_double(&spec, "--think", optarg, 0, 1); break;
        case O_KEEP: to.keep_retries = cli_double(&spec, "--keep-retries", optarg, 0, 1); break;
        case O_CMD: pol.cmd = optarg; break;
        case O_KEEPIF: keep_if = optarg; break;
        }
    }
    if (!wpath) cli_usage_error(&spec, "--world is required");
    world *w = world_load(wpath);
    if (!w) return EXIT_FAIL;
    json_t *h0 = hpath ? harness_load_checked(hpath) : NULL;
    if (hpath && !h0) { world_free(w); return EXIT_FAIL; }
    teacher *t = pol.cmd ? NULL : teacher_new();
    if (!pol.cmd && !t) { json_decref(h0); world_free(w); return EXIT_FAIL; }
    /* Task lines repeating an inline harness byte for byte share the
     * parsed harness (harness_memo.h), and so the simulator's caches. */
    harness_memo *hm = harness_memo_new();
    traj_writer *tw = traj_writer_new();
    if (pol.cmd) pol.tmp = xasprintf("%s/traj-gen-%ld.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    judge *jg = NULL;
    judge_filter *filter = NULL;
    if (keep_if) {
        char *err = NULL;
        if (!(filter = judge_filter_parse(keep_if, &err)))
            cli_usage_error(&spec, "--keep-if: %s", err);
        if (!(jg = judge_new(w, NULL, &err))) hat_die("%s", err);
    }
    long dropped = 0;
    sim *s = sim_new(w);
    hat_out *o = out_open(c.output);
    int rc = o ? 0 : -1, nin = optind < argc ? argc - optind : 1;
    long bad = 0, n = 0;
    for (int fi = 0; fi < nin && !rc; fi++) {
        const char *path = optind < argc ? argv[optind + fi] : "-";
        jsonl_reader *r = jsonl_open(path, c.skip_bad);
        if (!r) { rc = -1; break; }
        jsonl_set_memo(r, hm);
        json_t *task;
        int k;
        while (!rc && (k = jsonl_next(r, &task)) == 1) {
            char *err = task_check(task);
            const json_t *h = json_object_get(task, "harness");
            if (!err && !h && !h0) err = xstrdup("no harness: give --harness or an inline \"harness\"");
            if (!err && sim_set_harness(s, h ? h : h0, &err)) { /* err set */ }
            const json_t *hsa = json_object_get(task, "hsa");
            json_t *msgs = NULL, *meta = json_pack("{s:o,s:I,s:s,s:O}", "hsa",
                hsa ? json_incref((json_t *)hsa) : json_array(), "seed", (json_int_t)c.seed,
                "teacher", pol.cmd ? "cmd" : "scripted-v1", "intent", json_object_get(task, "intent"));
            if (!err) {
                rng_t rr;
                rng_derive(&rr, c.seed, (uint64_t)n);
                msgs = pol.cmd ? run_policy(&pol, s, task, &err) : teacher_run(t, s, task, &rr, &to, meta, &err);
                if (msgs && pol.cmd) json_object_set(meta, "accepted", json_object_get(sim_record(s), "accepted"));
            }
            if (err) {
                hat_errat(jsonl_name(r), jsonl_line(r), "%s", err);
                free(err);
                bad++;
                if (!c.skip_bad) rc = -1;
            } else if (filter && !keep(jg, filter, s, task, h ? h : h0, msgs)) {
                dropped++;
            } else {
                rc = traj_write(tw, o, task, h ? h : h0, msgs, meta);
            }
            json_decref(msgs);
            json_decref(meta);
            json_decref(task);
            n++;
        }
        if (k < 0) rc = -1;
        if (jsonl_close(r)) rc = -1;
    }
    if (c.skip_bad && bad) hat_warn("skipped %ld bad tasks", bad);
    if (filter) hat_warn("--keep-if: kept %ld of %ld trajectories", n - bad - dropped, n - bad);
    judge_filter_free(filter);
    judge_free(jg);
    if (o) { if (rc) out_abort(o); else rc = out_close(o); }
    if (pol.tmp) { unlink(pol.tmp); free(pol.tmp); }
    sim_free(s);
    teacher_free(t);
    json_decref(h0);
    traj_writer_free(tw);
    harness_memo_free(hm);
    world_free(w);
    return rc ? EXIT_FAIL : EXIT_OK;
}
