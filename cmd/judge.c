/* judge — score trajectories into verdicts.jsonl; `judge calibrate` fits
 * the config to human labels; `judge annotate` collects those labels. */
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "harness_memo.h"
#include "hsa.h"
#include "jsonl.h"
#include "judge.h"
#include "tasks.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: judge [score] --world FILE [--tasks FILE]... [--harness H] [--config FILE]\n"
    "             [--skip-bad] [-o FILE] [TRAJ...]\n"
    "       judge calibrate --labels FILE [--holdout F] [--report FILE] [--seed N]\n"
    "             [--world FILE --tasks FILE] [--config FILE] [-o CONFIG] [VERDICTS|TRAJ...]\n"
    "       judge annotate --labels FILE [--history FILE] [--overall]\n"
    "             [--world FILE --tasks FILE] [--config FILE] TRAJ...\n"
    "Replay each trajectory (traj.jsonl) through the simulator and score it:\n"
    "accuracy, effectiveness, tool rationality, skill selection, CoT penalty,\n"
    "a weighted total, pass, and the reasons of every failed check (man 5 verdicts.jsonl).\n"
    "  --world FILE     world.json the trajectories were made in\n"
    "  --tasks FILE     tasks.jsonl to find each line's task_id in (repeatable;\n"
    "                   a line may carry its task inline as \"task\")\n"
    "  --harness H      harness for lines without an inline \"harness\"\n"
    "  --config FILE    judge config (man 5 judge-config; default data/judge/default.json)\n"
    "  --skip-bad       skip bad lines (unknown task, unparseable) and report the count\n"
    "calibrate:\n"
    "  --labels FILE    human labels JSONL: {\"id\",\"accuracy\",\"effectiveness\"} or {\"id\",\"overall\"}\n"
    "  --holdout F      fraction held out for the report (default 0.3)\n"
    "  --report FILE    agreement report as JSON (default: a summary on stderr)\n"
    "  -o CONFIG        the fitted config (default stdout)\n"
    "annotate:\n"
    "  --labels FILE    labels JSONL to append to; ids already there are skipped\n"
    "  --history FILE   readline history (default LABELS.history)\n"
    "  --overall        ask for one 1-5 label instead of accuracy and effectiveness\n";

enum { O_WORLD = 1, O_TASKS, O_HARNESS, O_CONFIG, O_LABELS, O_HOLDOUT, O_REPORT, O_HISTORY, O_OVERALL };

typedef struct {
    cli_common c;
    const char *world, *harness, *config, *labels, *report, *history;
    const char *tasks[16];
    int ntasks, overall;
    double holdout;
    /* loaded */
    world  *w;
    judge  *j;
    task_index *tasks_by_id;
    int     keep_lines;          /* the index keeps each task's line (calibrate, annotate) */
    json_t *h0;
    long    bad;
} opts;

/* ---- loading ------------------------------------------------------------------- */

/* The task index holds each good task as a view (tasks.h): the few C
 * values the judge reads, in one arena.  Tens of thousands of parsed
 * tasks kept from start-up cost more in page faults and cache misses than
 * parsing each again when it is used, and that costs more than the view.
 * calibrate and annotate also keep the line, to parse for the verdict's
 * JSON (task_json).  A line in task-gen's shape is read into its view
 * straight from the text (task_index_add_line); any other goes through
 * jansson and task_check, which report what is wrong with it. */
#define TASK_FLAGS (JSON_ALLOW_NUL | JSON_DECODE_ANY)   /* as jsonl_next reads them */

static int load_tasks(opts *o)
{
    o->tasks_by_id = task_index_new();
    int rc = 0;
    for (int i = 0; i < o->ntasks && !rc; i++) {
        jsonl_reader *r = jsonl_open(o->tasks[i], o->c.skip_bad);
        if (!r) { rc = -1; break; }
        const char *line;
        size_t len;
        int k;
        while ((k = jsonl_next_line(r, &line, &len)) == 1) {
            if (task_index_add_line(o->tasks_by_id, line, len, o->keep_lines)) continue;
            json_t *t;
            if ((k = jsonl_parse_line(r, &t)) < 0) break;
            if (k == 0) continue;
            char *err = task_check(t);
            if (err) {
                hat_errat(jsonl_name(r), jsonl_line(r), "%s", err);
                free(err);
                json_decref(t);
                o->bad++;
                if (!o->c.skip_bad) { rc = -1; break; }
                continue;
            }
            size_t n = 0;
            const char *text = o->keep_lines ? jsonl_text(r, &n) : NULL;
            task_index_add(o->tasks_by_id, t, text, n);
            json_decref(t);
        }
        if (k < 0) rc = -1;
        if (jsonl_close(r)) rc = -1;
    }
    return rc;
}

static int load_common(opts *o, int need_world)
{
    if (!o->world) {
        if (need_world) { hat_warn("--world is required to score trajectories"); return EXIT_USAGE; }
        return 0;
    }
    o->w = world_load(o->world);
    if (!o->w) return EXIT_FAIL;
    json_t *cfg = NULL;
    if (o->config && !(cfg = json_load_path(o->config))) return EXIT_FAIL;
    char *err;
    o->j = judge_new(o->w, cfg, &err);
    json_decref(cfg);
    if (!o->j) { hat_errat(o->config ? o->config : "judge/default.json", 0, "%s", err); free(err); return EXIT_FAIL; }
    if (o->harness && !(o->h0 = harness_load_checked(o->harness))) return EXIT_FAIL;
    if (load_tasks(o)) return EXIT_FAIL;
    return 0;
}

static void free_common(opts *o)
{
    judge_free(o->j);
    world_free(o->w);
    task_index_free(o->tasks_by_id);
    json_decref(o->h0);
}

/* An indexed task parsed from its kept line (new ref).  The line parsed
 * when it was loaded, so it parses again to the same value. */
static json_t *task_json(const task_view *t)
{
    json_error_t e;
    json_t *j = json_loadb_quick(t->line, t->line_len, TASK_FLAGS, &e);
    if (!j) hat_die("task '%s' no longer parses: %s", t->id, e.text);
    return j;
}

/* ---- scoring a file of trajectories --------------------------------------------- */

/* Called per scored line with the trajectory, its task (the inline one,
 * else NULL and the indexed view) and verdict (borrowed); returns 0 or -1
 * to stop. */
typedef int (*on_verdict)(void *arg, json_t *traj, const json_t *task, const task_view *tv, const judge_verdict *v);

static int score_files(opts *o, int nfiles, char **files, on_verdict cb, void *arg)
{
    int rc = 0;
    for (int fi = 0; fi < (nfiles ? nfiles : 1) && !rc; fi++) {
        hsa_reader *r = hsa_reader_open(nfiles ? files[fi] : "-");
        if (!r) return -1;
        /* Repeated harnesses, messages and "meta" objects (a few hundred
         * distinct ones in a file of teacher trajectories, and a third of
         * what is parsed around the rest) are parsed once (harness_memo.h);
         * the judge only reads them. */
        harness_memo *memo = harness_memo_new();
        harness_memo_share_messages(memo, 1);
        harness_memo_share_key(memo, "meta");
        const char *line;
        size_t len;
        long ln;
        int k;
        while (!rc && (k = hsa_reader_line(r, &line, &len, &ln)) == 1) {
            json_error_t je;
            json_t *rec = harness_memo_parse(memo, line, len, 0, &je);
            char *err = NULL;
            if (!rec) {
                hat_errat(hsa_reader_name(r), ln, "invalid JSON at column %d: %s", je.column, je.text);
                o->bad++;
                if (!o->c.skip_bad) rc = -1;
                continue;
            }
            const json_t *task = json_object_get(rec, "task"), *h = json_object_get(rec, "harness");
            const char *tid = json_string_value(json_object_get(rec, "task_id"));
            const task_view *tv = NULL;
            if (!json_is_object(rec)) err = xstrdup("a trajectory must be a JSON object");
            else if (!task && !tid) err = xstrdup("no \"task_id\" and no inline \"task\"");
            else if (!task && !(tv = o->tasks_by_id ? task_index_get(o->tasks_by_id, tid) : NULL))
                err = xasprintf("unknown task id '%s'%s", tid, o->ntasks ? "" : " (give --tasks)");
            else if (!json_is_object(h) && !(h = o->h0))
                err = xstrdup("no harness: give --harness or an inline \"harness\"");
            else if (!json_is_array(json_object_get(rec, "messages"))) err = xstrdup("missing \"messages\" array");
            judge_verdict v;
            const json_t *msgs = json_object_get(rec, "messages");
            if (!err && (task ? judge_score(o->j, task, h, msgs, &v) : judge_score_view(o->j, tv, h, msgs, &v))) {
                err = xstrdup(json_string_value(json_object_get(json_array_get(v.reasons, 0), "detail")));
                judge_verdict_clear(&v);
            }
            if (err) {
                hat_errat(hsa_reader_name(r), ln, "%s", err);
                free(err);
                o->bad++;
                if (!o->c.skip_bad) rc = -1;
            } else {
                rc = cb(arg, rec, task, tv, &v);
                judge_verdict_clear(&v);
            }
            json_decref(rec);
        }
        if (k < 0) rc = -1;
        hsa_reader_close(r);
        harness_memo_free(memo);
    }
    return rc;
}

typedef struct { hat_out *out; sbuf b; } writer;

static int write_verdict(void *arg, json_t *traj, const json_t *task, const task_view *tv, const judge_verdict *v)
{
    writer *w = arg;
    sbuf_reset(&w->b);
    if (task) judge_verdict_line(&w->b, v, traj, task);
    else judge_verdict_line_view(&w->b, v, traj, tv);
    return out_write(w->out, w->b.s, w->b.len);
}

static int cmd_score(opts *o, int nfiles, char **files)
{
    /* Verdicts through stdio's default 4 KB buffer cost a write call every
     * 20 lines; one large buffer (not for a terminal) writes them in bulk.
     * Nothing has gone to stdout yet, as setvbuf requires. */
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, NULL, _IOFBF, 1 << 18);
    int rc = load_common(o, 1);
    if (rc) { free_common(o); return rc; }
    hat_out *out = out_open(o->c.output);
    writer w = { out, { 0 } };
    sbuf_init(&w.b);
    rc = out ? score_files(o, nfiles, files, write_verdict, &w) : -1;
    sbuf_free(&w.b);
    if (o->c.skip_bad && o->bad) hat_warn("skipped %ld bad lines", o->bad);
    if (out) { if (rc) out_abort(out); else rc = out_close(out); }
    free_common(o);
    return rc ? EXIT_FAIL : EXIT_OK;
}

/* ---- calibrate --------------------------------------------------------------------- */

typedef struct { json_t *by_id; } collect;

static int keep_verdict(void *arg, json_t *traj, const json_t *task, const task_view *tv, const judge_verdict *v)
{
    collect *c = arg;
    json_t *parsed = task ? NULL : task_json(tv);
    json_t *vj = judge_verdict_json(v, traj, task ? task : parsed);
    json_decref(parsed);
    const char *id = json_string_value(json_object_get(vj, "id"));
    if (id) json_object_set(c->by_id, id, vj);
    json_decref(vj);
    return 0;
}

/* Verdict lines are taken as they are; trajectory lines are scored. */
static int read_inputs(opts *o, int nfiles, char **files, json_t *by_id)
{
    collect c = { by_id };
    for (int fi = 0; fi < (nfiles ? nfiles : 1); fi++) {
        const char *path = nfiles ? files[fi] : "-";
        jsonl_reader *r = jsonl_open(path, o->c.skip_bad);
        if (!r) return -1;
        json_t *v;
        int k, rc = 0, trajs = 0;
        while ((k = jsonl_next(r, &v)) == 1) {
            const char *id = json_string_value(json_object_get(v, "id"));
            if (json_object_get(v, "messages")) trajs = 1;
            else if (!id || !json_is_object(json_object_get(v, "scores"))) {
                hat_errat(jsonl_name(r), jsonl_line(r), "neither a verdict (id, scores) nor a trajectory (messages)");
                o->bad++;
                if (!o->c.skip_bad) rc = -1;
            } else json_object_set(by_id, id, v);
            json_decref(v);
            if (rc) break;
        }
        if (k < 0) rc = -1;
        if (jsonl_close(r)) rc = -1;
        if (rc) return -1;
        if (trajs) {
            if (!o->j) { hat_errat(path, 0, "trajectories need --world (and --tasks) to be scored"); return -1; }
            char *one[1] = { (char *)path };
            if (is_stdio_path(path)) { hat_errat(path, 0, "trajectories to score must come from a file"); return -1; }
            if (score_files(o, 1, one, keep_verdict, &c)) return -1;
        }
    }
    return 0;
}

static double label_num(const json_t *l, const char *k)
{
    const json_t *v = json_object_get(l, k);
    return json_is_number(v) ? json_number_value(v) : -1;
}

static int cmd_calibrate(opts *o, int nfiles, char **files)
{
    if (!o->labels) { hat_warn("calibrate needs --labels FILE"); return EXIT_USAGE; }
    o->keep_lines = 1;
    int rc = load_common(o, 0);
    if (rc) { free_common(o); return rc; }
    json_t *by_id = json_object();
    judge_case *cases = NULL;
    size_t n = 0, cap = 0;
    json_t *cfg = o->j ? json_incref((json_t *)judge_config(o->j)) : o->config ? json_load_path(o->config) : judge_default_config();
    char *err = cfg ? judge_config_check(cfg) : xstrdup("no config");
    if (err) { hat_errat(o->config ? o->config : "judge/default.json", 0, "%s", err); free(err); rc = -1; goto done; }
    if (read_inputs(o, nfiles, files, by_id)) { rc = -1; goto done; }
    jsonl_reader *r = jsonl_open(o->labels, o->c.skip_bad);
    if (!r) { rc = -1; goto done; }
    json_t *l;
    long missing = 0;
    int k;
    while ((k = jsonl_next(r, &l)) == 1) {
        const char *id = json_string_value(json_object_get(l, "id"));
        double ov = label_num(l, "overall"), ac = label_num(l, "accuracy"), ef = label_num(l, "effectiveness");
        const char *bad = !id ? "a label needs an \"id\""
            : ov < 0 && (ac < 0 || ef < 0) ? "a label needs \"overall\" (1-5) or \"accuracy\" and \"effectiveness\""
            : ov >= 0 && (ov < 1 || ov > 5) ? "\"overall\" must be 1 to 5"
            : ac >= 0 && ac != 0 && ac != 1 ? "\"accuracy\" must be 0 or 1"
            : ef >= 0 && ef != 0 && ef != 0.5 && ef != 1 ? "\"effectiveness\" must be 0, 0.5 or 1" : NULL;
        if (bad) {
            hat_errat(jsonl_name(r), jsonl_line(r), "%s", bad);
            json_decref(l);
            if (!o->c.skip_bad) { rc = -1; break; }
            continue;
        }
        const json_t *v = json_object_get(by_id, id);
        if (!v) { missing++; json_decref(l); continue; }
        if (n == cap) { cap = cap ? cap * 2 : 256; cases = xrealloc(cases, cap * sizeof *cases); }
        judge_case *c = &cases[n++];
        for (int i = 0; i < JUDGE_NCOMP; i++)
            c->score[i] = json_number_value(json_object_get(json_object_get(v, "scores"), judge_comp_names[i]));
        c->overall = ov;
        c->accuracy = ac;
        c->effectiveness = ef;
        json_decref(l);
    }
    if (k < 0) rc = -1;
    if (jsonl_close(r)) rc = -1;
    if (rc) goto done;
    if (missing) hat_warn("%ld labels have no verdict and were left out", missing);
    json_t *report;
    json_t *fitted = judge_calibrate(cfg, cases, n, o->holdout, o->c.seed, &report, &err);
    if (!fitted) { hat_errat(o->labels, 0, "%s", err); free(err); rc = -1; goto done; }
    hat_out *out = out_open(o->c.output);
    rc = out ? out_json(out, fitted) : -1;
    if (out) { if (rc) out_abort(out); else rc = out_close(out); }
    if (!rc && o->report) {
        hat_out *ro = out_open(o->report);
        rc = ro ? out_json(ro, report) : -1;
        if (ro) { if (rc) out_abort(ro); else rc = out_close(ro); }
    } else if (!rc) {
        const json_t *p = json_object_get(report, "pass");
        fprintf(stderr, "judge: calibrate: %s labels, %lld fit, %lld held out: pass accuracy %.3f, kappa %.3f, spearman %.3f\n",
                json_string_value(json_object_get(report, "mode")), json_integer_value(json_object_get(report, "train")),
                json_integer_value(json_object_get(report, "heldout")), json_number_value(json_object_get(p, "accuracy")),
                json_number_value(json_object_get(p, "kappa")), json_number_value(json_object_get(report, "spearman")));
    }
    json_decref(report);
    json_decref(fitted);
done:
    free(cases);
    json_decref(cfg);
    json_decref(by_id);
    free_common(o);
    return rc ? EXIT_FAIL : EXIT_OK;
}

/* ---- annotate ------------------------------------------------------------------------ */

typedef struct { judge_item *items; json_t *keep; size_t n, cap; } gather;

static int keep_item(void *arg, json_t *traj, const json_t *task, const task_view *tv, const judge_verdict *v)
{
    gather *g = arg;
    json_t *parsed = task || !tv ? NULL : task_json(tv);
    json_t *verdict = v ? judge_verdict_json(v, traj, task ? task : parsed) : NULL;
    json_decref(parsed);
    if (g->n == g->cap) { g->cap = g->cap ? g->cap * 2 : 64; g->items = xrealloc(g->items, g->cap * sizeof *g->items); }
    json_array_append(g->keep, traj);
    if (verdict) json_array_append_new(g->keep, verdict);
    g->items[g->n].traj = traj;
    g->items[g->n].verdict = verdict;
    g->n++;
    return 0;
}

static int cmd_annotate(opts *o, int nfiles, char **files)
{
    if (!o->labels) { hat_warn("annotate needs --labels FILE"); return EXIT_USAGE; }
    if (!nfiles || is_stdio_path(files[0])) { hat_warn("annotate reads trajectories from a file: the terminal is for the labels"); return EXIT_USAGE; }
    o->keep_lines = 1;
    int rc = load_common(o, 0);
    if (rc) { free_common(o); return rc; }
    gather g = { NULL, json_array(), 0, 0 };
    if (o->j) rc = score_files(o, nfiles, files, keep_item, &g);
    else {
        for (int fi = 0; fi < nfiles && !rc; fi++) {
            jsonl_reader *r = jsonl_open(files[fi], o->c.skip_bad);
            if (!r) { rc = -1; break; }
            json_t *t;
            int k;
            while ((k = jsonl_next(r, &t)) == 1) { keep_item(&g, t, NULL, NULL, NULL); json_decref(t); }
            if (k < 0 || jsonl_close(r)) rc = -1;
        }
    }
    char *hist = NULL;
    if (!rc) {
        judge_annotate_opts ao = { o->labels, o->history ? o->history : (hist = xasprintf("%s.history", o->labels)), o->overall };
        rc = judge_annotate(g.items, g.n, &ao, stdin, stdout) < 0 ? -1 : 0;
    }
    free(hist);
    free(g.items);
    json_decref(g.keep);
    free_common(o);
    return rc ? EXIT_FAIL : EXIT_OK;
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "world", required_argument, NULL, O_WORLD }, { "tasks", required_argument, NULL, O_TASKS },
        { "harness", required_argument, NULL, O_HARNESS }, { "config", required_argument, NULL, O_CONFIG },
        { "labels", required_argument, NULL, O_LABELS }, { "holdout", required_argument, NULL, O_HOLDOUT },
        { "report", required_argument, NULL, O_REPORT }, { "history", required_argument, NULL, O_HISTORY },
        { "overall", no_argument, NULL, O_OVERALL }, { 0 } };
    cli_spec spec = { usage, "", longs };
    opts o = { .holdout = 0.3 };
    cli_init(argc, argv);
    const char *sub = "score";
    if (argc > 1 && (!strcmp(argv[1], "score") || !strcmp(argv[1], "calibrate") || !strcmp(argv[1], "annotate"))) {
        sub = argv[1];
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &o.c)) != -1) {
        switch (opt) {
        case O_WORLD: o.world = optarg; break;
        case O_TASKS:
            if (o.ntasks == 16) cli_usage_error(&spec, "at most 16 --tasks files");
            o.tasks[o.ntasks++] = optarg;
            break;
        case O_HARNESS: o.harness = optarg; break;
        case O_CONFIG: o.config = optarg; break;
        case O_LABELS: o.labels = optarg; break;
        case O_HOLDOUT: o.holdout = cli_double(&spec, "--holdout", optarg, 0, 0.9); break;
        case O_REPORT: o.report = optarg; break;
        case O_HISTORY: o.history = optarg; break;
        case O_OVERALL: o.overall = 1; break;
        }
    }
    int nfiles = argc - optind;
    char **files = argv + optind;
    int rc = !strcmp(sub, "calibrate") ? cmd_calibrate(&o, nfiles, files)
           : !strcmp(sub, "annotate") ? cmd_annotate(&o, nfiles, files) : cmd_score(&o, nfiles, files);
    if (rc == EXIT_USAGE) fputs(usage, stderr);
    return rc;
}
