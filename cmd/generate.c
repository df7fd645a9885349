/* generate — sample completions of tokenised prompts with the KV-cache
 * engine (continuous batching: finished sequences leave, queued ones join). */
#include "ckpt.h"
#include "cli.h"
#include "generate.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: generate --ckpt CKPT [options] [PROMPTS.jsonl]\n"
    "Read prompts {\"ids\":[...]} (other keys such as \"id\" are copied) and write\n"
    "one line per prompt, in input order: {...,\"gen\":[ids],\"finish\":\"stop\"|\"length\"}.\n"
    "  --ckpt CKPT        checkpoint or Hugging Face directory\n"
    "  --max-tokens N     new tokens per prompt (default 64)\n"
    "  --temperature X    0 = greedy (default 0)\n"
    "  --top-k N          sample from the N likeliest tokens (default off)\n"
    "  --top-p X          nucleus sampling mass (default 1 = off)\n"
    "  --stop ID          stop at this token id (repeatable); config eos_token_id\n"
    "                     stops too\n"
    "  --batch N          sequences decoded together (default 16)\n"
    "  --mtp K            speculative decoding: the checkpoint's MTP module drafts\n"
    "                     up to K tokens per step, the model verifies them (greedy\n"
    "                     output is unchanged); default 0 = off\n"
    "  --stats            a last line {\"stats\":{...}} on stderr: steps, drafted,\n"
    "                     accepted, acceptance, tokens per second\n"
    "  --logprobs         add \"logprobs\": log p of each generated token\n"
    "  --seed N           sampling seed (default 1); prompt i uses stream i\n"
    "  --skip-bad         skip malformed prompt lines\n"
    "  -o FILE            output (default stdout)\n";

enum { O_CKPT = 1, O_MAX, O_TEMP, O_TOPK, O_TOPP, O_STOP, O_BATCH, O_LOGP, O_MTP, O_STATS };

typedef struct { json_t *in; int *ids; int n; json_t *out; } job;

static json_t *finish(gen_engine *e, int slot, job *j, int logprobs)
{
    int n;
    const int *ids = gen_output(e, slot, &n);
    json_t *o = json_deep_copy(j->in), *g = json_array(), *lp = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(g, json_integer(ids[i]));
    json_object_set_new(o, "gen", g);
    json_object_set_new(o, "finish", json_string(gen_status(e, slot) == GEN_STOP ? "stop" : "length"));
    if (logprobs) {
        const float *l = gen_logprobs(e, slot);
        for (int i = 0; i < n; i++) json_array_append_new(lp, json_real(l[i]));
        json_object_set_new(o, "logprobs", lp);
    } else {
        json_decref(lp);
    }
    return o;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The engine's counters as one JSON line on stderr. */
static void print_stats(gen_engine *e, double secs)
{
    gen_stats s = gen_get_stats(e);
    json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f}", "steps", (json_int_t)s.steps,
        "rows", (json_int_t)s.rows, "generated", (json_int_t)s.generated,
        "drafted", (json_int_t)s.drafted, "accepted", (json_int_t)s.accepted,
        "acceptance", s.drafted ? (double)s.accepted / s.drafted : 0.0,
        "tokens_per_step", s.verify_steps ? (double)(s.accepted + s.verify_steps) / s.verify_steps : 1.0,
        "seconds", secs, "tokens_per_s", secs > 0 ? s.generated / secs : 0.0);
    json_t *w = json_pack("{s:o}", "stats", o);
    char *t = json_dumps(w, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fprintf(stderr, "%s\n", t);
    free(t);
    json_decref(w);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "ckpt", required_argument, NULL, O_CKPT },  { "max-tokens", required_argument, NULL, O_MAX },
        { "temperature", required_argument, NULL, O_TEMP }, { "top-k", required_argument, NULL, O_TOPK },
        { "top-p", required_argument, NULL, O_TOPP }, { "stop", required_argument, NULL, O_STOP },
        { "batch", required_argument, NULL, O_BATCH }, { "logprobs", no_argument, NULL, O_LOGP },
        { "mtp", required_argument, NULL, O_MTP }, { "stats", no_argument, NULL, O_STATS }, { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *path = NULL;
    gen_params p = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 64, .eos = -1 };
    int stops[64], n_stop = 0, batch = 16, logprobs = 0, stats = 0, opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_CKPT: path = optarg; break;
        case O_MAX: p.max_tokens = (int)cli_long(&spec, "--max-tokens", optarg, 0, 1 << 20); break;
        case O_TEMP: p.temperature = (float)cli_double(&spec, "--temperature", optarg, 0, 100); break;
        case O_TOPK: p.top_k = (int)cli_long(&spec, "--top-k", optarg, 0, 1 << 24); break;
        case O_TOPP: p.top_p = (float)cli_double(&spec, "--top-p", optarg, 0, 1); break;
        case O_STOP:
            if (n_stop == 64) cli_usage_error(&spec, "--stop: at most 64 ids");
            stops[n_stop++] = (int)cli_long(&spec, "--stop", optarg, 0, 1 << 30);
            break;
        case O_BATCH: batch = (int)cli_long(&spec, "--batch", optarg, 1, 4096); break;
        case O_LOGP: logprobs = 1; break;
        case O_MTP: p.mtp_k = (int)cli_long(&spec, "--mtp", optarg, 0, GEN_MTP_MAX); break;
        case O_STATS: stats = 1; break;
        }
    }
    if (!path) cli_usage_error(&spec, "--ckpt is required");
    if (argc - optind > 1) cli_usage_error(&spec, "at most one input file");
    const char *in = optind < argc ? argv[optind] : NULL;
    ckpt k;
    if (ckpt_load(&k, path)) return EXIT_FAIL;
    const model_config *cfg = &k.m->cfg;
    if (p.mtp_k > 0 && !cfg->n_mtp) {
        hat_errat(path, 0, "--mtp needs a checkpoint with an MTP module (num_nextn_predict_layers 1)");
        ckpt_free(&k);
        return EXIT_FAIL;
    }
    p.eos = cfg->eos_token_id;
    p.stop_ids = stops;
    p.n_stop = n_stop;

    /* Read every prompt first: outputs must come in input order. */
    jsonl_reader *r = jsonl_open(in, c.skip_bad);
    if (!r) { ckpt_free(&k); return EXIT_FAIL; }
    job *jobs = NULL;
    long nj = 0, cap = 0, bad = 0;
    int maxlen = 0, rc = 0;
    json_t *v;
    while ((rc = jsonl_next(r, &v)) == 1) {
        json_t *ids = json_object_get(v, "ids");
        size_t n = json_array_size(ids);
        int ok = json_is_array(ids) && n >= 1 && n + p.max_tokens <= (size_t)cfg->max_position_embeddings;
        int *t = ok ? xmalloc(n * sizeof(int)) : NULL;
        for (size_t i = 0; ok && i < n; i++) {
            json_t *x = json_array_get(ids, i);
            ok = json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) < cfg->vocab_size;
            if (ok) t[i] = (int)json_integer_value(x);
        }
        if (!ok) {
            hat_errat(jsonl_name(r), jsonl_line(r), "need \"ids\": 1..%d token ids in [0, %d) (with --max-tokens %d)",
                      cfg->max_position_embeddings - p.max_tokens, cfg->vocab_size, p.max_tokens);
            free(t);
            json_decref(v);
            if (!c.skip_bad) { rc = -1; break; }
            bad++;
            continue;
        }
        if (nj == cap) jobs = xrealloc(jobs, (cap = cap ? 2 * cap : 64) * sizeof *jobs);
        json_object_del(v, "ids");
        jobs[nj++] = (job){ v, t, (int)n, NULL };
        if ((int)n + p.max_tokens + 1 > maxlen) maxlen = (int)n + p.max_tokens + 1;
    }
    if (bad) hat_errat(jsonl_name(r), 0, "skipped %ld bad lines", bad);
    if (jsonl_close(r) || rc < 0) { ckpt_free(&k); return EXIT_FAIL; }

    hat_out *o = out_open(c.output);
    if (!o) { ckpt_free(&k); return EXIT_FAIL; }
    gen_engine *e = gen_new(k.m, batch, maxlen > 1 ? maxlen : 2);
    long *slot_job = xmalloc(batch * sizeof(long));
    for (int s = 0; s < batch; s++) slot_job[s] = -1;
    long next = 0, emitted = 0;
    double t0 = now();
    int live = 0;
    rc = 0;
    while ((next < nj || live) && !rc) {
        while (next < nj) {        /* fill free slots */
            int s = gen_add(e, jobs[next].ids, jobs[next].n, &p, c.seed, (uint64_t)next);
            if (s < 0) break;
            slot_job[s] = next++;
            live++;
        }
        gen_step(e);
        for (int s = 0; s < batch; s++) {
            long j = slot_job[s];
            if (j < 0 || gen_status(e, s) == GEN_RUNNING) continue;
            jobs[j].out = finish(e, s, &jobs[j], logprobs);
            gen_remove(e, s);
            slot_job[s] = -1;
            live--;
        }
        for (; emitted < nj && jobs[emitted].out && !rc; emitted++) {
            rc = out_json(o, jobs[emitted].out);
            json_decref(jobs[emitted].out);
        }
    }
    if (stats) print_stats(e, now() - t0);
    for (long i = 0; i < nj; i++) {
        json_decref(jobs[i].in);
        free(jobs[i].ids);
        if (i >= emitted) json_decref(jobs[i].out);
    }
    gen_free(e);
    free(slot_job);
    free(jobs);
    ckpt_free(&k);
    if (rc) { out_abort(o); return EXIT_FAIL; }
    return out_close(o) ? EXIT_FAIL : EXIT_OK;
}
