/* diagnose — failures grouped by judge reason and harness element;
 * `diagnose evolve` measures the error reduction of a harness edit
 * without retraining. */
#include "ckpt.h"
#include "cli.h"
#include "diagnose.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "judge.h"
#include "rollout.h"
#include "tokenizer.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: diagnose [--harness H] [--traj FILE]... [--cases FILE] [--examples N] [--json]\n"
    "                [--skip-bad] [-o FILE] [VERDICTS...]\n"
    "       diagnose evolve --ckpt CKPT --world FILE --harness H --edited H2 --cases FILE\n"
    "                [--tokenizer FILE] [--max-tokens N] [--max-turns N] [--batch N]\n"
    "                [--device cpu|cuda|auto] [--precision bf16|fp32] [--seed N] [-o FILE]\n"
    "Group failed verdicts (judge(1) lines or rollout --judge trajectories) by judge\n"
    "reason and by harness element (tool, skill, prompt block, hook), with examples.\n"
    "  --harness H     harness of verdicts whose trajectory carries none\n"
    "  --traj FILE     trajectories the verdicts were scored from (their inline harness)\n"
    "  --cases FILE    cases.jsonl: the harness of each case\n"
    "  --examples N    examples per group (default 3)\n"
    "  --json          JSONL groups instead of text\n"
    "evolve: play the cases' tasks with the model under H and under the edited H2,\n"
    "judge both, and report error rates and the error reduction (JSON).\n"
    "  --device D      where the model decodes (default cpu; see rollout(1))\n"
    "  --precision P   on cuda: bf16 (default) or fp32\n";

enum { O_HARNESS = 1, O_TRAJ, O_CASES, O_EXAMPLES, O_JSON, O_CKPT, O_WORLD, O_EDITED, O_TOK,
       O_MAXTOK, O_TURNS, O_BATCH, O_DEVICE, O_PRECISION };

typedef struct {
    cli_common c;
    const char *harness, *cases, *ckpt, *world, *edited, *tok;
    const char *traj[16];
    int ntraj, examples, json, batch;
    rollout_params p;
    gen_device dev;
} opts;

/* id → harness from the "harness" of each line of path (keyed by key). */
static int index_harnesses(json_t *idx, const char *path, const char *key, int skip_bad)
{
    jsonl_reader *r = jsonl_open(path, skip_bad);
    if (!r) return -1;
    json_t *v;
    int k;
    while ((k = jsonl_next(r, &v)) == 1) {
        const char *id = json_string_value(json_object_get(v, key));
        json_t *h = json_object_get(v, "harness");
        if (id && json_is_object(h)) json_object_set(idx, id, h);
        json_decref(v);
    }
    return k < 0 || jsonl_close(r) ? -1 : 0;
}

static int run_groups(opts *o, int nfiles, char **files)
{
    char *err = NULL;
    diag *d = diag_new(o->examples, &err);
    if (!d) { hat_warn("%s", err); free(err); return EXIT_FAIL; }
    json_t *byid = json_object(), *bycase = json_object(), *h0 = NULL, *groups = NULL;
    int rc = EXIT_FAIL;
    if (o->harness && !(h0 = harness_load_checked(o->harness))) goto done;
    for (int i = 0; i < o->ntraj; i++)
        if (index_harnesses(byid, o->traj[i], "id", o->c.skip_bad)) goto done;
    if (o->cases && index_harnesses(bycase, o->cases, "id", o->c.skip_bad)) goto done;
    long bad = 0;
    for (int fi = 0; fi < (nfiles ? nfiles : 1); fi++) {
        jsonl_reader *r = jsonl_open(nfiles ? files[fi] : "-", o->c.skip_bad);
        if (!r) goto done;
        json_t *v;
        int k, stop = 0;
        while (!stop && (k = jsonl_next(r, &v)) == 1) {
            const char *id = json_string_value(json_object_get(v, "id"));
            const char *tid = json_string_value(json_object_get(v, "task_id"));
            const json_t *h = json_object_get(v, "harness");
            if (!h && id) h = json_object_get(byid, id);
            if (!h && tid) h = json_object_get(bycase, tid);
            if (!h) h = h0;
            if (diag_add(d, v, h, &err)) {
                hat_errat(jsonl_name(r), jsonl_line(r), "%s", err);
                free(err);
                err = NULL;
                bad++;
                if (!o->c.skip_bad) stop = 1;
            }
            json_decref(v);
        }
        if (jsonl_close(r) || k < 0 || stop) goto done;
    }
    if (bad) hat_warn("skipped %ld bad verdicts", bad);
    groups = diag_groups(d);
    hat_out *out = out_open(o->c.output);
    if (!out) goto done;
    int w = 0;
    if (o->json) {
        size_t i;
        json_t *g;
        json_array_foreach(groups, i, g) if (!w) w = out_json(out, g);
    } else {
        char *text = diag_text(groups);
        w = out_puts(out, text);
        free(text);
    }
    if (w) { out_abort(out); goto done; }
    rc = out_close(out) ? EXIT_FAIL : EXIT_OK;
done:
    json_decref(groups);
    json_decref(byid);
    json_decref(bycase);
    json_decref(h0);
    diag_free(d);
    return rc;
}

static json_t *load_cases(const char *path)
{
    jsonl_reader *r = jsonl_open(path, 0);
    if (!r) return NULL;
    json_t *all = json_array(), *v;
    int k;
    while ((k = jsonl_next(r, &v)) == 1) json_array_append_new(all, v);
    if (k < 0 || jsonl_close(r)) { json_decref(all); return NULL; }
    return all;
}

static int run_evolve(opts *o)
{
    if (!o->ckpt || !o->world || !o->harness || !o->edited || !o->cases) {
        hat_warn("evolve needs --ckpt, --world, --harness, --edited and --cases");
        return EXIT_USAGE;
    }
    char *err = NULL;     /* the device first: a missing GPU fails before any loading */
    int rc = gen_device_check(&o->dev, &err);
    if (rc) { hat_errat(NULL, 0, "%s", err); free(err); return rc; }
    rc = EXIT_FAIL;
    ckpt k = { 0 };
    tokenizer *t = NULL;
    world *w = NULL;
    judge *j = NULL;
    json_t *h = NULL, *h2 = NULL, *cases = NULL, *res = NULL;
    if (ckpt_load(&k, o->ckpt)) goto done;
    if (ckpt_tokenizer(&k, o->ckpt, o->tok, 1, &t)) goto done;
    if (!(w = world_load(o->world)) || !(h = harness_load_checked(o->harness)) || !(h2 = harness_load_checked(o->edited)) ||
        !(cases = load_cases(o->cases)))
        goto done;
    if (!(j = judge_new(w, NULL, &err))) { hat_warn("judge: %s", err); goto done; }
    diag_evolve_opts eo = { k.m, t, w, j, NULL, NULL, o->p, o->batch, o->c.seed, &o->dev };
    if (!(res = diag_evolve(&eo, cases, h, h2, &err))) { hat_errat(o->cases, 0, "%s", err); goto done; }
    hat_out *out = out_open(o->c.output);
    if (!out) goto done;
    if (out_json(out, res)) { out_abort(out); goto done; }
    rc = out_close(out) ? EXIT_FAIL : EXIT_OK;
done:
    free(err);
    json_decref(res);
    json_decref(cases);
    json_decref(h);
    json_decref(h2);
    judge_free(j);
    world_free(w);
    tok_free(t);
    ckpt_free(&k);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "harness", required_argument, NULL, O_HARNESS }, { "traj", required_argument, NULL, O_TRAJ },
        { "cases", required_argument, NULL, O_CASES }, { "examples", required_argument, NULL, O_EXAMPLES },
        { "json", no_argument, NULL, O_JSON }, { "ckpt", required_argument, NULL, O_CKPT },
        { "world", required_argument, NULL, O_WORLD }, { "edited", required_argument, NULL, O_EDITED },
        { "tokenizer", required_argument, NULL, O_TOK }, { "max-tokens", required_argument, NULL, O_MAXTOK },
        { "max-turns", required_argument, NULL, O_TURNS }, { "batch", required_argument, NULL, O_BATCH },
        { "device", required_argument, NULL, O_DEVICE }, { "precision", required_argument, NULL, O_PRECISION },
        { 0, 0, 0, 0 } };
    cli_spec spec = { usage, "", longs };
    opts o = { 0 };
    o.examples = 3;
    o.batch = 8;
    o.dev = (gen_device)GEN_DEVICE_INIT;
    rollout_params rp = ROLLOUT_PARAMS_INIT;
    o.p = rp;
    int opt, evolve = 0;
    cli_init(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "evolve")) { evolve = 1; argv++; argc--; }
    while ((opt = cli_next(argc, argv, &spec, &o.c)) != -1) {
        switch (opt) {
        case O_HARNESS: o.harness = optarg; break;
        case O_TRAJ:
            if (o.ntraj == 16) cli_usage_error(&spec, "at most 16 --traj files");
            o.traj[o.ntraj++] = optarg;
            break;
        case O_CASES: o.cases = optarg; break;
        case O_EXAMPLES: o.examples = (int)cli_long(&spec, "--examples", optarg, 0, 1000); break;
        case O_JSON: o.json = 1; break;
        case O_CKPT: o.ckpt = optarg; break;
        case O_WORLD: o.world = optarg; break;
        case O_EDITED: o.edited = optarg; break;
        case O_TOK: o.tok = optarg; break;
        case O_MAXTOK: o.p.max_tokens = (int)cli_long(&spec, "--max-tokens", optarg, 1, 1 << 20); break;
        case O_TURNS: o.p.max_turns = (int)cli_long(&spec, "--max-turns", optarg, 1, ROLLOUT_MAX_TURNS); break;
        case O_BATCH: o.batch = (int)cli_long(&spec, "--batch", optarg, 1, 4096); break;
        case O_DEVICE: o.dev.device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: o.dev.precision = gen_precision_arg(&spec, optarg); break;
        }
    }
    if (evolve) {
        if (optind < argc) cli_usage_error(&spec, "unexpected argument '%s'", argv[optind]);
        int rc = run_evolve(&o);
        if (rc == EXIT_USAGE) cli_usage_error(&spec, "evolve needs --ckpt, --world, --harness, --edited and --cases");
        return rc;
    }
    return run_groups(&o, argc - optind, argv + optind);
}
