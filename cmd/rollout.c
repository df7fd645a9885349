/* rollout — play tasks through the simulator with a checkpoint as the
 * policy; write trajectories (man 5 traj.jsonl), optionally with the
 * judge's verdict and the token ids, mask and log-probs of every turn. */
#include "ckpt.h"
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "judge.h"
#include "jsonl.h"
#include "rollout.h"
#include "progress.h"
#include "shard.h"
#include "tasks.h"
#include "tokenizer.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: rollout --ckpt CKPT --world FILE [--harness H] [options] [TASKS.jsonl...]\n"
    "Play each task through the simulator with the checkpoint as the agent, many\n"
    "conversations at once, and write one trajectory per task in input order.\n"
    "  --ckpt CKPT          checkpoint or Hugging Face directory (with tokenizer.json)\n"
    "  --tokenizer FILE     tokenizer.json to use instead of the checkpoint's\n"
    "  --world FILE         world.json (required)\n"
    "  --harness H          harness for lines without an inline \"harness\"\n"
    "  --tasks-are-cases    input lines are evaluation cases {\"id\",\"task\",\"harness\"?,...}\n"
    "  --judge              add the judge's \"verdict\" to each line\n"
    "  --judge-config FILE  judge weights and thresholds (default data/judge/default.json)\n"
    "  --temperature X      0 = greedy (default 0)\n"
    "  --top-k N            sample from the N likeliest tokens (default off)\n"
    "  --top-p X            nucleus sampling mass (default 1 = off)\n"
    "  --max-tokens N       generated tokens per turn (default 256)\n"
    "  --max-turns N        assistant turns per conversation (default: the harness's\n"
    "                       max_turns param, else 6)\n"
    "  --max-gen-tokens N   generated tokens per conversation (default no limit)\n"
    "  --mtp K              speculative decoding with the checkpoint's MTP module,\n"
    "                       up to K drafted tokens per step (greedy output unchanged)\n"
    "  --max-context N      tokens per conversation (default the model's maximum)\n"
    "  --device D           cpu (default), cuda, or auto (cuda when a GPU is usable\n"
    "                       and --mtp is off, else cpu)\n"
    "  --precision P        GPU weights and KV cache: bf16 (default, fast) or fp32\n"
    "                       (greedy output matches the CPU's)\n"
    "  --no-thinking        enable_thinking=false in the generation prompt\n"
    "  --batch N            conversations in flight (default 8; with --jobs, in each copy)\n"
    "  --jobs N             N copies of rollout at once, task i played by copy i mod N,\n"
    "                       OMP_NUM_THREADS shared out among them: the same output,\n"
    "                       faster on N cores (default 1; --device cpu only)\n"
    "  --no-shared-prefix   copy the system prompt's KV cache into each conversation\n"
    "                       instead of computing it once and sharing it (the previous\n"
    "                       path, for comparison: the same output, slower)\n"
    "  --logprobs           add \"tokens\": {\"ids\",\"mask\",\"logprobs\"}\n"
    "  --seed N             sampling seed (default 1); task i uses stream i\n"
    "  --skip-bad           skip bad task lines and failed conversations, report the count\n"
    "  -o FILE              output (default stdout)\n";

enum { O_CKPT = 1, O_TOK, O_WORLD, O_HARNESS, O_CASES, O_JUDGE, O_JCFG, O_TEMP, O_TOPK, O_TOPP, O_MTP,
       O_MAXTOK, O_TURNS, O_GENTOK, O_CTX, O_NOTHINK, O_BATCH, O_LOGP, O_DEVICE, O_PRECISION, O_NOSHARE, O_JOBS };

/* One conversation between input and output. */
typedef struct {
    long    line;
    const char *file;    /* one of the names kept in main */
    char   *id;          /* trajectory id */
    json_t *extra;       /* case keys for meta.case, or NULL */
    json_t *out;         /* the finished line, or NULL while running */
    int     failed;
} job;

typedef struct {
    job   *v;
    long   n, cap, emitted;
} jobs;

static job *job_new(jobs *J)
{
    if (J->n == J->cap) J->v = xrealloc(J->v, (J->cap = J->cap ? 2 * J->cap : 64) * sizeof *J->v);
    job *j = &J->v[J->n++];
    memset(j, 0, sizeof *j);
    return j;
}

/* A case line {"id","task","harness"?,...}: split into task and the keys
 * that go to meta.case.  Returns the task (borrowed from line) or NULL. */
static const json_t *case_task(const json_t *line, json_t **extra, char **err)
{
    const json_t *task = json_object_get(line, "task");
    if (!json_is_object(task)) { *err = xstrdup("a case needs a \"task\" object"); return NULL; }
    *extra = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)line, k, v)
        if (strcmp(k, "task") && strcmp(k, "harness")) json_object_set(*extra, k, v);
    return task;
}

/* The task and harness of an input line (a task, or with cases a case),
 * both borrowed from line (or h0); NULL with *err when it cannot be
 * played.  *extra: the case keys for meta.case (the caller's). */
static const json_t *check_line(const json_t *line, int cases, const json_t *h0, json_t **extra,
                                const json_t **h, char **err)
{
    const json_t *task = cases ? case_task(line, extra, err) : line;
    *h = json_object_get(line, "harness");
    if (!*h && task) *h = json_object_get(task, "harness");
    if (!*h) *h = h0;
    if (task && !*err) *err = task_check(task);
    if (!*err && !*h) *err = xstrdup("no harness: give --harness or an inline \"harness\"");
    return *err ? NULL : task;
}

/* In a copy: the record the parent sent, its file name kept in names
 * (the jobs point at it until the end). */
static json_t *unwrap(json_t *w, const char **file, long *lno, char ***names, int *nnames)
{
    json_t *keep = NULL, *r = shard_unwrap(w, &keep, file, lno);
    int i = 0;
    while (i < *nnames && (!(*names)[i] || strcmp((*names)[i], *file))) i++;
    if (i == *nnames) {
        *names = xrealloc(*names, (*nnames + 1) * sizeof **names);
        (*names)[(*nnames)++] = xstrdup(*file);
    }
    *file = (*names)[i];
    json_decref(keep);
    return r;
}

/* --jobs N: the lines read and checked here (so that a bad one is reported
 * once, at its place), each good one sent to copy i mod N as
 * {"f":FILE,"l":LINE,"r":LINE_JSON}, their trajectories written back in
 * input order (shard.h). */
static int run_copies(int njobs, char **argv, char **inputs, int nin, int cases, const json_t *h0,
                      const cli_common *c)
{
    hat_out *o = out_open(c->output);
    if (!o) return -1;
    shard_pool *sp = shard_start(njobs, argv);
    if (!sp) { out_abort(o); return -1; }
    int rc = 0;
    long bad = 0;
    progress *pg = progress_start(NULL, "conversations", 0);
    for (int fi = 0; !rc && fi < nin; fi++) {
        jsonl_reader *in = jsonl_open(inputs ? inputs[fi] : "-", c->skip_bad);
        if (!in) { rc = -1; break; }
        json_t *line;
        int got;
        while (!rc && (got = jsonl_next(in, &line)) > 0) {
            json_t *extra = NULL;
            const json_t *h;
            char *err = NULL;
            if (check_line(line, cases, h0, &extra, &h, &err)) {
                rc = shard_send_record(sp, line, jsonl_name(in), jsonl_line(in));
            } else {
                hat_errat(jsonl_name(in), jsonl_line(in), "%s", err);
                free(err);
                bad++;
                if (!c->skip_bad) rc = -1;
            }
            json_decref(extra);
            json_decref(line);
            if (!rc) rc = shard_drain(sp, o, 0, !c->skip_bad, &bad);
            progress_update(pg, shard_taken(sp), 0);
        }
        if (got < 0 || jsonl_close(in)) rc = -1;
    }
    shard_close(sp);
    if (!rc) rc = shard_drain(sp, o, 1, !c->skip_bad, &bad);
    progress_update(pg, shard_taken(sp), 0);
    progress_end(pg);
    if (shard_finish(sp)) rc = -1;
    if (c->skip_bad && bad) hat_warn("skipped %ld bad tasks", bad);
    return out_finish(o, rc);
}

/* The terminal's progress line: conversations done, of those read so far. */
static void show_progress(progress *pg, rollout *r, long total_read, double t0, int final)
{
    if (!final && !progress_due(pg)) return;
    rollout_stats s = rollout_get_stats(r);
    double dt = hat_now() - t0;
    progress_status(pg, "%ld read, %d running, %ld turns, %.0f tok/s (%s)", total_read, rollout_running(r),
                    s.turns, s.gen_tokens / (dt > 1e-9 ? dt : 1e-9), rollout_device(r));
    progress_update(pg, s.conversations, 0);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "ckpt", required_argument, NULL, O_CKPT }, { "tokenizer", required_argument, NULL, O_TOK },
        { "world", required_argument, NULL, O_WORLD }, { "harness", required_argument, NULL, O_HARNESS },
        { "tasks-are-cases", no_argument, NULL, O_CASES }, { "judge", no_argument, NULL, O_JUDGE },
        { "judge-config", required_argument, NULL, O_JCFG },
        { "temperature", required_argument, NULL, O_TEMP }, { "top-k", required_argument, NULL, O_TOPK },
        { "top-p", required_argument, NULL, O_TOPP }, { "max-tokens", required_argument, NULL, O_MAXTOK },
        { "max-turns", required_argument, NULL, O_TURNS }, { "max-gen-tokens", required_argument, NULL, O_GENTOK },
        { "max-context", required_argument, NULL, O_CTX }, { "no-thinking", no_argument, NULL, O_NOTHINK },
        { "batch", required_argument, NULL, O_BATCH }, { "logprobs", no_argument, NULL, O_LOGP },
        { "mtp", required_argument, NULL, O_MTP }, { "device", required_argument, NULL, O_DEVICE },
        { "precision", required_argument, NULL, O_PRECISION },
        { "no-shared-prefix", no_argument, NULL, O_NOSHARE }, { "jobs", required_argument, NULL, O_JOBS },
        { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *ckpath = NULL, *tpath = NULL, *wpath = NULL, *hpath = NULL, *jcfg = NULL;
    int cases = 0, use_judge = 0, batch = 8, logprobs = 0, max_ctx = 0, share = 1, njobs = 1, opt;
    rollout_params p = ROLLOUT_PARAMS_INIT;
    gen_device dev = GEN_DEVICE_INIT;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_CKPT: ckpath = optarg; break;
        case O_TOK: tpath = optarg; break;
        case O_WORLD: wpath = optarg; break;
        case O_HARNESS: hpath = optarg; break;
        case O_CASES: cases = 1; break;
        case O_JUDGE: use_judge = 1; break;
        case O_JCFG: jcfg = optarg; use_judge = 1; break;
        case O_TEMP: p.temperature = (float)cli_double(&spec, "--temperature", optarg, 0, 100); break;
        case O_TOPK: p.top_k = (int)cli_long(&spec, "--top-k", optarg, 0, 1 << 24); break;
        case O_TOPP: p.top_p = (float)cli_double(&spec, "--top-p", optarg, 0, 1); break;
        case O_MAXTOK: p.max_tokens = (int)cli_long(&spec, "--max-tokens", optarg, 1, 1 << 20); break;
        case O_TURNS: p.max_turns = (int)cli_long(&spec, "--max-turns", optarg, 1, ROLLOUT_MAX_TURNS); break;
        case O_MTP: p.mtp_k = (int)cli_long(&spec, "--mtp", optarg, 0, GEN_MTP_MAX); break;
        case O_GENTOK: p.max_gen_tokens = (int)cli_long(&spec, "--max-gen-tokens", optarg, 1, 1 << 30); break;
        case O_CTX: max_ctx = (int)cli_long(&spec, "--max-context", optarg, 16, 1 << 24); break;
        case O_NOTHINK: p.enable_thinking = CHAT_THINK_OFF; break;
        case O_BATCH: batch = (int)cli_long(&spec, "--batch", optarg, 1, 4096); break;
        case O_LOGP: logprobs = 1; break;
        case O_NOSHARE: share = 0; break;
        case O_JOBS: njobs = (int)cli_long(&spec, "--jobs", optarg, 1, 256); break;
        case O_DEVICE: dev.device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: dev.precision = gen_precision_arg(&spec, optarg); break;
        }
    }
    if (!ckpath) cli_usage_error(&spec, "--ckpt is required");
    if (!wpath) cli_usage_error(&spec, "--world is required");
    shard_id me = shard_self();                /* a copy of a --jobs run */
    if (me.n) {                                /* its records on stdin, its lines to stdout */
        njobs = 1;
        c.output = NULL;
        optind = argc;
    }
    if (njobs > 1 && dev.device != HAT_DEVICE_CPU) cli_usage_error(&spec, "--jobs needs --device cpu");
    /* The device first: a missing GPU fails before any loading. */
    char *err = NULL;
    dev.mtp = p.mtp_k > 0;
    int drc = gen_device_check(&dev, &err);
    if (drc == EXIT_USAGE) cli_usage_error(&spec, "%s", err);
    if (drc) { hat_errat(NULL, 0, "%s", err); free(err); return drc; }

    int rc = 0;
    ckpt k = { 0 };
    world *w = NULL;
    json_t *h0 = NULL, *jconf = NULL;
    tokenizer *t = NULL;
    judge *jd = NULL;
    rollout *r = NULL;
    hat_out *o = NULL;
    jobs J = { 0 };
    if (ckpt_load(&k, ckpath)) { rc = -1; goto out; }
    if (ckpt_tokenizer(&k, ckpath, tpath, 1, &t)) { rc = -1; goto out; }
    if (p.mtp_k && !k.m->cfg.n_mtp) {
        hat_errat(ckpath, 0, "--mtp needs a checkpoint with an MTP module (num_nextn_predict_layers 1)");
        rc = -1;
        goto out;
    }
    if (max_ctx > k.m->cfg.max_position_embeddings) max_ctx = k.m->cfg.max_position_embeddings;
    if (!(w = world_load(wpath))) { rc = -1; goto out; }
    if (hpath && !(h0 = harness_load_checked(hpath))) { rc = -1; goto out; }
    if (jcfg && !(jconf = json_load_path(jcfg))) { rc = -1; goto out; }
    if (use_judge && !(jd = judge_new(w, jconf, &err))) {
        hat_errat(jcfg ? jcfg : "judge", 0, "%s", err);
        rc = -1;
        goto out;
    }
    if (njobs > 1) {
        /* checked once here, so that a bad checkpoint or world is
         * reported once; the copies load their own */
        judge_free(jd); jd = NULL;
        world_free(w); w = NULL;
        tok_free(t); t = NULL;
        ckpt_free(&k);
        rc = run_copies(njobs, argv, optind < argc ? argv + optind : NULL, optind < argc ? argc - optind : 1,
                        cases, h0, &c);
        goto out;
    }
    if (!(r = rollout_open(k.m, t, w, batch, max_ctx, &dev, &err))) {
        hat_errat(tpath && strncmp(err, "--device", 8) ? tpath : ckpath, 0, "%s", err);
        rc = -1;
        goto out;
    }
    rollout_set_judge(r, jd);
    rollout_set_shared_prefix(r, share);
    {
        const char *base = strrchr(ckpath, '/');
        rollout_set_name(r, base && base[1] ? base + 1 : ckpath);
    }
    if (!(o = out_open(c.output))) { rc = -1; goto out; }

    int nin = optind < argc ? argc - optind : 1, fi = 0, eof = 0;
    long bad = 0;
    double t0 = hat_now();
    progress *pg = progress_start(NULL, "conversations", 0);   /* before the reader's: this line is ours */
    jsonl_reader *in = NULL;
    char **names = xcalloc(nin, sizeof *names);    /* for messages after a reader closes */
    int nnames = nin;
    while (!rc && (!eof || rollout_running(r) || rollout_pending(r))) {
        /* Fill free places with the next task lines. */
        while (!rc && !eof && rollout_running(r) < batch) {
            if (!in) {
                if (fi == nin) { eof = 1; break; }
                in = jsonl_open(optind < argc ? argv[optind + fi] : "-", c.skip_bad);
                if (!in) { rc = -1; break; }
                names[fi++] = xstrdup(jsonl_name(in));
            }
            json_t *line;
            int got = jsonl_next(in, &line);
            if (got <= 0) {
                if (got < 0 || jsonl_close(in)) rc = -1;
                in = NULL;
                continue;
            }
            const char *file = names[fi - 1];
            long lno = jsonl_line(in);
            if (me.n) line = unwrap(line, &file, &lno, &names, &nnames);
            json_t *extra = NULL;
            const json_t *h, *task = check_line(line, cases, h0, &extra, &h, &err);
            job *j = NULL;
            if (!err) {
                j = job_new(&J);
                j->line = lno;
                j->file = file;
                j->extra = extra;
                extra = NULL;
                const json_t *cid = cases ? json_object_get(line, "id") : NULL;
                const char *id = json_string_value(cid ? cid : json_object_get(task, "id"));
                j->id = xasprintf("%s.r", id ? id : "");
                /* task i's stream is i, in a copy too: the same bytes at any --jobs */
                uint64_t stream = me.n ? (uint64_t)(J.n - 1) * me.n + me.k : (uint64_t)(J.n - 1);
                if (rollout_add(r, task, h, c.seed, stream, &p, (void *)(intptr_t)(J.n - 1), &err)) {
                    J.n--;
                    free(j->id);
                    json_decref(j->extra);
                    if (!err) err = xstrdup("no free place for the conversation");   /* cannot happen */
                }
            }
            if (err) {
                hat_errat(file, lno, "%s", err);
                if (me.n) exit(EXIT_FAIL);     /* (the parent checked every line it sent) */
                free(err);
                err = NULL;
                bad++;
                if (!c.skip_bad) rc = -1;
            }
            json_decref(extra);
            json_decref(line);
        }
        if (rc) break;
        rollout_step(r);
        for (rollout_result *x; (x = rollout_take(r)); rollout_result_free(x)) {
            job *j = &J.v[(intptr_t)x->user];
            if (x->finish == ROLLOUT_ERROR) {
                hat_errat(j->file, j->line, "%s", x->error);
                j->failed = 1;
                bad++;
                if (!c.skip_bad && !me.n) rc = -1;    /* a copy writes "null": the parent decides */
                continue;
            }
            if (j->extra) json_object_set(x->meta, "case", j->extra);
            j->out = rollout_result_json(x, j->id, logprobs);
        }
        /* Emit in input order. */
        for (; !rc && J.emitted < J.n && (J.v[J.emitted].out || J.v[J.emitted].failed); J.emitted++) {
            job *j = &J.v[J.emitted];
            if (j->out) rc = out_json(o, j->out);
            else if (me.n) rc = out_puts(o, "null\n");
            json_decref(j->out); json_decref(j->extra); free(j->id);
            j->out = j->extra = NULL;
            j->id = NULL;
        }
        show_progress(pg, r, J.n, t0, 0);
    }
    if (in && jsonl_close(in)) rc = -1;
    show_progress(pg, r, J.n, t0, 1);
    progress_end(pg);
    if (c.skip_bad && bad && !me.n) hat_warn("skipped %ld bad tasks", bad);
    for (int i = 0; i < nnames; i++) free(names[i]);
    free(names);
out:
    if (o) { if (rc) out_abort(o); else rc = out_close(o); }
    for (long i = J.emitted; i < J.n; i++) { json_decref(J.v[i].out); json_decref(J.v[i].extra); free(J.v[i].id); }
    free(J.v);
    rollout_free(r);
    judge_free(jd);
    json_decref(jconf);
    json_decref(h0);
    world_free(w);
    tok_free(t);
    ckpt_free(&k);
    free(err);
    return rc ? EXIT_FAIL : EXIT_OK;
}
