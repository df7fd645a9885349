/* generate — sample completions of prompts (token ids, text, or a
 * conversation under a harness) with the KV-cache engine (continuous
 * batching: finished sequences leave, queued ones join), on the CPU or
 * the GPU (--device). */
#include "chat_encode.h"
#include "ckpt.h"
#include "cli.h"
#include "generate.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "progress.h"
#include "shard.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: generate --ckpt CKPT [options] [PROMPTS.jsonl]\n"
    "Read prompts {\"ids\":[...]}, {\"text\":\"...\"} or {\"messages\":[...],\"harness\"?:{...}}\n"
    "(other keys such as \"id\" are copied) and write one line per prompt, in input\n"
    "order: {...,\"gen\":[ids],\"text\":\"...\",\"finish\":\"stop\"|\"length\"} (\"text\" when\n"
    "there is a tokenizer).  Conversations get the generation prompt and stop at\n"
    "<|im_end|>.\n"
    "  --ckpt CKPT        checkpoint or Hugging Face directory\n"
    "  --tokenizer FILE   tokenizer.json (default: the checkpoint's own)\n"
    "  --harness H        harness for conversations without an inline one\n"
    "  --stop-text S      stop when the text contains S (repeatable); \"text\"\n"
    "                     ends before it\n"
    "  --max-tokens N     new tokens per prompt (default 64)\n"
    "  --temperature X    0 = greedy (default 0)\n"
    "  --top-k N          sample from the N likeliest tokens (default off)\n"
    "  --top-p X          nucleus sampling mass (default 1 = off)\n"
    "  --stop ID          stop at this token id (repeatable); config eos_token_id\n"
    "                     stops too\n"
    "  --batch N          sequences decoded together (default 16; with --jobs, in each\n"
    "                     copy)\n"
    "  --jobs N           N copies of generate at once, prompt i decoded by copy\n"
    "                     i mod N, OMP_NUM_THREADS shared out among them: the same\n"
    "                     output, faster on N cores (default 1; --device cpu only;\n"
    "                     --stats: a line from each copy)\n"
    "  --mtp K            speculative decoding: the checkpoint's MTP module drafts\n"
    "                     up to K tokens per step, the model verifies them (greedy\n"
    "                     output is unchanged); default 0 = off\n"
    "  --stats            a last line {\"stats\":{...}} on stderr: steps, drafted,\n"
    "                     accepted, acceptance, tokens per second\n"
    "  --device D         cpu (default), cuda, or auto (cuda when a GPU is usable\n"
    "                     and --mtp is off, else cpu)\n"
    "  --precision P      GPU weights and KV cache: bf16 (default, fast) or fp32\n"
    "                     (greedy output matches the CPU's)\n"
    "  --logprobs         add \"logprobs\": log p of each generated token\n"
    "  --seed N           sampling seed (default 1); prompt i uses stream i\n"
    "  --skip-bad         skip malformed prompt lines\n"
    "  -o FILE            output (default stdout)\n";

enum { O_CKPT = 1, O_MAX, O_TEMP, O_TOPK, O_TOPP, O_STOP, O_BATCH, O_LOGP, O_MTP, O_STATS,
       O_TOK, O_HARNESS, O_STOPTEXT, O_DEVICE, O_PRECISION, O_JOBS };

typedef struct { json_t *in; int *ids; int n; json_t *out; } job;

#define MAX_STOP_TEXT 16

/* What turns ids into text and ends sequences on stop strings. */
typedef struct {
    const tokenizer *tok;            /* NULL: ids only */
    const char *stop_text[MAX_STOP_TEXT];
    int n_stop_text;
} texter;

/* The generated text so far (special tokens dropped) and, through *cut,
 * where the first stop string starts (-1: none).  Caller frees. */
static char *gen_text(const texter *x, gen_engine *e, int slot, size_t *len, long *cut)
{
    int n;
    const int *ids = gen_output(e, slot, &n);
    char *t = tok_decode_model(x->tok, ids, (size_t)n, TOK_SKIP_SPECIAL, len);
    *cut = -1;
    for (int i = 0; i < x->n_stop_text; i++) {
        const char *p = memmem(t, *len, x->stop_text[i], strlen(x->stop_text[i]));
        if (p && (*cut < 0 || p - t < *cut)) *cut = p - t;
    }
    return t;
}

static json_t *finish(const texter *x, gen_engine *e, int slot, job *j, int logprobs, int stopped)
{
    int n;
    const int *ids = gen_output(e, slot, &n);
    json_t *o = json_deep_copy(j->in), *g = json_array(), *lp = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(g, json_integer(ids[i]));
    json_object_set_new(o, "gen", g);
    if (x->tok) {
        size_t len;
        long cut;
        char *t = gen_text(x, e, slot, &len, &cut);
        json_object_set_new(o, "text", json_stringn(t, cut >= 0 ? (size_t)cut : len));
        free(t);
    }
    json_object_set_new(o, "finish", json_string(stopped || gen_status(e, slot) == GEN_STOP ? "stop" : "length"));
    if (logprobs) {
        const float *l = gen_logprobs(e, slot);
        for (int i = 0; i < n; i++) json_array_append_new(lp, json_real(l[i]));
        json_object_set_new(o, "logprobs", lp);
    } else {
        json_decref(lp);
    }
    return o;
}

/* The engine's counters as one JSON line on stderr. */
static void print_stats(gen_engine *e, double secs, const char *device)
{
    gen_stats s = gen_get_stats(e);
    json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:f}", "steps", (json_int_t)s.steps,
        "rows", (json_int_t)s.rows, "generated", (json_int_t)s.generated,
        "drafted", (json_int_t)s.drafted, "accepted", (json_int_t)s.accepted,
        "acceptance", s.drafted ? (double)s.accepted / s.drafted : 0.0,
        "tokens_per_step", s.verify_steps ? (double)(s.accepted + s.verify_steps) / s.verify_steps : 1.0,
        "seconds", secs, "tokens_per_s", secs > 0 ? s.generated / secs : 0.0,
        "prefill_seconds", s.prefill_s, "decode_seconds", s.decode_s,
        "decode_tokens", (json_int_t)s.decode_tokens,
        "decode_tokens_per_s", s.decode_s > 0 ? s.decode_tokens / s.decode_s : 0.0);
    json_object_set_new(o, "device", json_string(device));
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
        { "mtp", required_argument, NULL, O_MTP }, { "stats", no_argument, NULL, O_STATS },
        { "tokenizer", required_argument, NULL, O_TOK }, { "harness", required_argument, NULL, O_HARNESS },
        { "stop-text", required_argument, NULL, O_STOPTEXT },
        { "device", required_argument, NULL, O_DEVICE },
        { "precision", required_argument, NULL, O_PRECISION }, { "jobs", required_argument, NULL, O_JOBS },
        { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *path = NULL, *tok_path = NULL, *hpath = NULL;
    texter x = { 0 };
    gen_params p = { .temperature = 0, .top_k = 0, .top_p = 1, .max_tokens = 64, .eos = -1 };
    int stops[64], n_stop = 0, batch = 16, logprobs = 0, stats = 0, njobs = 1, opt;
    gen_device dev = GEN_DEVICE_INIT;
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
        case O_JOBS: njobs = (int)cli_long(&spec, "--jobs", optarg, 1, 256); break;
        case O_TOK: tok_path = optarg; break;
        case O_HARNESS: hpath = optarg; break;
        case O_DEVICE: dev.device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: dev.precision = gen_precision_arg(&spec, optarg); break;
        case O_STOPTEXT:
            if (x.n_stop_text == MAX_STOP_TEXT) cli_usage_error(&spec, "--stop-text: at most %d", MAX_STOP_TEXT);
            if (!*optarg) cli_usage_error(&spec, "--stop-text: empty string");
            x.stop_text[x.n_stop_text++] = optarg;
            break;
        }
    }
    if (!path) cli_usage_error(&spec, "--ckpt is required");
    if (argc - optind > 1) cli_usage_error(&spec, "at most one input file");
    const char *in = optind < argc ? argv[optind] : NULL;
    shard_id me = shard_self();          /* a copy of a --jobs run: records on stdin, lines to stdout */
    if (me.n) { njobs = 1; in = NULL; c.output = NULL; }
    if (njobs > 1 && dev.device != HAT_DEVICE_CPU) cli_usage_error(&spec, "--jobs needs --device cpu");
    /* The device first: a missing GPU fails before any loading. */
    dev.mtp = p.mtp_k > 0;
    char *derr = NULL;
    int drc = gen_device_check(&dev, &derr);
    if (drc == EXIT_USAGE) cli_usage_error(&spec, "%s", derr);
    if (drc) { hat_errat(NULL, 0, "%s", derr); free(derr); return drc; }
    ckpt k;
    if (ckpt_load(&k, path)) return EXIT_FAIL;
    model_config mcfg = k.m->cfg;         /* (a --jobs parent lets the weights go) */
    const model_config *cfg = &mcfg;
    if (p.mtp_k > 0 && !cfg->n_mtp) {
        hat_errat(path, 0, "--mtp needs a checkpoint with an MTP module (num_nextn_predict_layers 1)");
        ckpt_free(&k);
        return EXIT_FAIL;
    }
    p.eos = cfg->eos_token_id;
    tokenizer *tok = NULL;
    json_t *h = hpath ? harness_load_checked(hpath) : NULL;
    if ((hpath && !h) || ckpt_tokenizer(&k, path, tok_path, 0, &tok)) {
        json_decref(h);
        ckpt_free(&k);
        return EXIT_FAIL;
    }
    if (x.n_stop_text && !tok) cli_usage_error(&spec, "--stop-text needs a tokenizer (--tokenizer)");
    x.tok = tok;
    /* A conversation's turn ends with <|im_end|>. */
    int im_end = tok ? tok_token_id(tok, "<|im_end|>") : -1;
    if (im_end >= 0 && n_stop < 64) stops[n_stop++] = im_end;
    p.stop_ids = stops;
    p.n_stop = n_stop;

    /* Read every prompt first: outputs must come in input order.  With
     * --jobs each good one goes to its copy as soon as it is read. */
    jsonl_reader *r = jsonl_open(in, c.skip_bad);
    if (!r) { ckpt_free(&k); return EXIT_FAIL; }
    if (njobs > 1) ckpt_free(&k);        /* the copies load their own */
    shard_pool *sp = njobs > 1 ? shard_start(njobs, argv) : NULL;
    hat_out *so = sp ? out_open(c.output) : NULL;
    if (njobs > 1 && (!sp || !so)) { shard_finish(sp); jsonl_close(r); ckpt_free(&k); return EXIT_FAIL; }
    job *jobs = NULL;
    long nj = 0, cap = 0, bad = 0, failed = 0;
    int maxlen = 0, rc = 0;
    json_t *v, *keep = NULL;
    while ((rc = jsonl_next(r, &v)) == 1) {
        const char *file = jsonl_name(r);
        long lno = jsonl_line(r);
        if (me.n) v = shard_unwrap(v, &keep, &file, &lno);
        tok_ids ids = { 0 };
        char *perr = NULL;
        int ok = !prompt_encode(tok, v, h, &ids, &perr);
        for (size_t i = 0; ok && i < ids.n; i++)
            if (ids.v[i] >= cfg->vocab_size) {
                perr = xasprintf("token id %d is outside the model's vocabulary (%d)", ids.v[i], cfg->vocab_size);
                ok = 0;
            }
        if (ok && (ids.n < 1 || ids.n + p.max_tokens > (size_t)cfg->max_position_embeddings)) {
            perr = xasprintf("the prompt has %zu tokens; 1..%d fit with --max-tokens %d", ids.n,
                             cfg->max_position_embeddings - p.max_tokens, p.max_tokens);
            ok = 0;
        }
        if (!ok) {
            hat_errat(file, lno, "%s", perr);
            if (me.n) exit(EXIT_FAIL);     /* (the parent checked every line it sent) */
            free(perr);
            tok_ids_free(&ids);
            json_decref(v);
            if (!c.skip_bad) { rc = -1; break; }
            bad++;
            continue;
        }
        if (sp) {
            tok_ids_free(&ids);
            rc = shard_send_record(sp, v, file, lno);
            json_decref(v);
            if (!rc) rc = shard_drain(sp, so, 0, 1, &failed);
            if (rc) break;
            continue;
        }
        if (nj == cap) jobs = xrealloc(jobs, (cap = cap ? 2 * cap : 64) * sizeof *jobs);
        json_object_del(v, "ids");
        int n = (int)ids.n;
        jobs[nj++] = (job){ v, ids.v, n, NULL };
        if (n + p.max_tokens + 1 > maxlen) maxlen = n + p.max_tokens + 1;
    }
    json_decref(keep);
    if (bad) hat_errat(jsonl_name(r), 0, "skipped %ld bad lines", bad);
    if (jsonl_close(r) || rc < 0) {
        if (sp) { shard_finish(sp); out_abort(so); }
        tok_free(tok); json_decref(h); ckpt_free(&k);
        return EXIT_FAIL;
    }
    if (sp) {
        tok_free(tok); json_decref(h); ckpt_free(&k);
        shard_close(sp);
        rc = shard_drain(sp, so, 1, 1, &failed);
        if (shard_finish(sp)) rc = -1;
        return out_finish(so, rc) ? EXIT_FAIL : EXIT_OK;
    }

    hat_out *o = out_open(c.output);
    if (!o) { ckpt_free(&k); return EXIT_FAIL; }
    gen_engine *e = gen_open(k.m, batch, maxlen > 1 ? maxlen : 2, &dev, &derr);
    if (!e) {                      /* cuda, and the GPU engine cannot be built */
        hat_errat(path, 0, "%s", derr);
        free(derr);
        out_abort(o);
        tok_free(tok); json_decref(h); ckpt_free(&k);
        for (long i = 0; i < nj; i++) { json_decref(jobs[i].in); free(jobs[i].ids); }
        free(jobs);
        return EXIT_FAIL;
    }
    long *slot_job = xmalloc(batch * sizeof(long));
    for (int s = 0; s < batch; s++) slot_job[s] = -1;
    long next = 0, emitted = 0;
    double t0 = hat_now();
    int live = 0;
    rc = 0;
    progress *pg = progress_start(NULL, "prompts", nj);
    while ((next < nj || live) && !rc) {
        while (next < nj) {        /* fill free slots */
            /* prompt i's stream is i, in a copy too: the same bytes at any --jobs */
            uint64_t stream = me.n ? (uint64_t)next * me.n + me.k : (uint64_t)next;
            int s = gen_add(e, jobs[next].ids, jobs[next].n, &p, c.seed, stream);
            if (s < 0) break;
            slot_job[s] = next++;
            live++;
        }
        gen_step(e);
        for (int s = 0; s < batch; s++) {
            long j = slot_job[s];
            if (j < 0) continue;
            int stopped = 0;
            if (gen_status(e, s) == GEN_RUNNING) {
                if (!x.n_stop_text) continue;
                size_t len;
                long cut;
                free(gen_text(&x, e, s, &len, &cut));
                if (cut < 0) continue;
                stopped = 1;              /* a stop string: the sequence ends here */
            }
            jobs[j].out = finish(&x, e, s, &jobs[j], logprobs, stopped);
            gen_remove(e, s);
            slot_job[s] = -1;
            live--;
        }
        for (; emitted < nj && jobs[emitted].out && !rc; emitted++) {
            rc = out_json(o, jobs[emitted].out);
            json_decref(jobs[emitted].out);
        }
        if (progress_due(pg)) progress_status(pg, "%d decoding", live);
        progress_update(pg, emitted, 0);
    }
    progress_status(pg, "%s", "");
    progress_end(pg);
    if (stats) print_stats(e, hat_now() - t0, gen_device_name(e));
    for (long i = 0; i < nj; i++) {
        json_decref(jobs[i].in);
        free(jobs[i].ids);
        if (i >= emitted) json_decref(jobs[i].out);
    }
    gen_free(e);
    free(slot_job);
    free(jobs);
    tok_free(tok);
    json_decref(h);
    ckpt_free(&k);
    if (rc) { out_abort(o); return EXIT_FAIL; }
    return out_close(o) ? EXIT_FAIL : EXIT_OK;
}
