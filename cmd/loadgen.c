/* loadgen — replay evaluation cases, tasks or chat requests against a
 * serve(1) instance at a fixed concurrency (closed loop) or a fixed
 * arrival rate (open loop, Poisson arrivals), and report latency
 * percentiles, time to first token, tokens/s, errors and the share over
 * a latency budget.  The client and the statistics are common/loadgen.c. */
#include "cli.h"
#include "jsonl.h"
#include "loadgen.h"
#include "progress.h"
#include "rng.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: loadgen --url URL [options] [CASES.jsonl]\n"
    "Replay requests against serve(1) and report latency, time to first token and tokens/s.\n"
    "Lines: eval cases {\"id\",\"task\"}, tasks {\"id\",\"viewer\",...} or {\"message\"} go to\n"
    "/v1/agent; lines with \"messages\" go to /v1/chat/completions as they are.\n"
    "  --url URL            the server, http://HOST:PORT (required)\n"
    "  --cases FILE         input lines (default: the operand, else stdin)\n"
    "  --concurrency C      requests in flight (closed loop; default 1)\n"
    "  --rate R             start R requests per second (open loop, Poisson arrivals)\n"
    "  -n N                 requests in all (default: one per line; lines are cycled)\n"
    "  --budget S           latency budget in seconds (default 15)\n"
    "  --stream             chat requests with stream: true (time to first token from SSE)\n"
    "  --max-tokens N       add max_tokens N to every request\n"
    "  --token TOKEN        bearer token (default $HAT_SERVE_TOKEN)\n"
    "  --timeout S          per-request socket timeout (default 120)\n"
    "  --requests FILE      one JSON line per request: index, status, latency_ms, ttft_ms, tokens\n"
    "  --quiet              no table on stderr\n"
    "  --seed N             arrival times for --rate (default 1)\n"
    "  --skip-bad           skip input lines that are not requests and report the count\n"
    "  -o FILE              the report (default stdout)\n";

enum { O_URL = 1, O_CASES, O_CONC, O_RATE, O_BUDGET, O_STREAM, O_MAXTOK, O_TOKEN, O_TIMEOUT, O_REQS, O_QUIET };

typedef struct {
    char  **body;        /* per line: the request body */
    int    *chat;        /* per line: 1 = chat completions */
    long    nlines, n;
    double *start;       /* open loop: start offsets (s), or NULL */
    const char *url;
    const char *token;
    double  timeout, t0;
    long    next;
    pthread_mutex_t mu;
    lg_sample *out;
    progress *pg;        /* requests answered, on a terminal */
    long    answered, failed;
} run;

/* Generated tokens reported in a response body (agent timings, chat
 * usage, or the usage of the last SSE event). */
static long tokens_of(const char *body, size_t len)
{
    long t = 0;
    if (len >= 6 && !strncmp(body, "data: ", 6)) {
        const char *u = NULL;
        for (const char *p = body; (p = strstr(p, "\"completion_tokens\":")); p++) u = p;
        return u ? atol(u + 20) : 0;
    }
    json_t *v = json_loadb(body, len, 0, NULL);
    const json_t *x = json_object_get(json_object_get(v, "timings"), "gen_tokens");
    if (!x) x = json_object_get(json_object_get(v, "usage"), "completion_tokens");
    t = (long)json_integer_value(x);
    json_decref(v);
    return t;
}

static void *worker(void *arg)
{
    run *R = arg;
    for (;;) {
        pthread_mutex_lock(&R->mu);
        long i = R->next < R->n ? R->next++ : -1;
        pthread_mutex_unlock(&R->mu);
        if (i < 0) return NULL;
        if (R->start) {
            double wait = R->t0 + R->start[i] - hat_now();
            if (wait > 0) usleep((useconds_t)(wait * 1e6));
        }
        long l = i % R->nlines;
        lg_response r;
        lg_post(R->url, R->chat[l] ? "/v1/chat/completions" : "/v1/agent", R->token, R->body[l],
                strlen(R->body[l]), R->timeout, &r);
        lg_sample *s = &R->out[i];
        s->status = r.status;
        s->latency = r.t_total;
        s->ttft = r.t_first;
        s->tokens = r.status == 200 ? tokens_of(r.body.s ? r.body.s : "", r.body.len) : 0;
        lg_response_free(&r);
        pthread_mutex_lock(&R->mu);
        R->answered++;
        if (s->status != 200) { R->failed++; progress_status(R->pg, "%ld failed", R->failed); }
        progress_update(R->pg, R->answered, 0);
        pthread_mutex_unlock(&R->mu);
    }
}

/* The request body for one input line, or NULL with *err. */
static char *body_for(json_t *line, int stream, long max_tokens, int *chat, char **err)
{
    json_t *b;
    *chat = 0;
    if (json_object_get(line, "messages")) {
        *chat = 1;
        b = json_deep_copy(line);
        if (stream) json_object_set_new(b, "stream", json_true());
    } else if (json_is_object(json_object_get(line, "task"))) {
        b = json_pack("{s:O}", "task", json_object_get(line, "task"));
        if (json_is_string(json_object_get(line, "id"))) json_object_set(b, "id", json_object_get(line, "id"));
    } else if (json_object_get(line, "viewer")) b = json_pack("{s:O}", "task", line);
    else if (json_object_get(line, "message")) b = json_deep_copy(line);
    else { *err = xstrdup("a line needs \"task\", \"viewer\", \"message\" or \"messages\""); return NULL; }
    if (max_tokens > 0) json_object_set_new(b, "max_tokens", json_integer(max_tokens));
    char *s = json_compact(b);
    json_decref(b);
    return s;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "url", required_argument, NULL, O_URL }, { "cases", required_argument, NULL, O_CASES },
        { "concurrency", required_argument, NULL, O_CONC }, { "rate", required_argument, NULL, O_RATE },
        { "budget", required_argument, NULL, O_BUDGET }, { "stream", no_argument, NULL, O_STREAM },
        { "max-tokens", required_argument, NULL, O_MAXTOK }, { "token", required_argument, NULL, O_TOKEN },
        { "timeout", required_argument, NULL, O_TIMEOUT }, { "requests", required_argument, NULL, O_REQS },
        { "quiet", no_argument, NULL, O_QUIET }, { 0 } };
    cli_spec spec = { usage, "n:", longs };
    cli_common c = { 0 };
    const char *url = NULL, *cases = NULL, *reqs = NULL;
    long conc = 1, n = 0, max_tokens = 0;
    double rate = 0, budget = 15, timeout = 120;
    int stream = 0, quiet = 0, opt;
    run R = { 0 };
    R.token = getenv("HAT_SERVE_TOKEN");
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_URL: url = optarg; break;
        case O_CASES: cases = optarg; break;
        case O_CONC: conc = cli_long(&spec, "--concurrency", optarg, 1, 4096); break;
        case O_RATE: rate = cli_double(&spec, "--rate", optarg, 1e-3, 1e6); break;
        case 'n': n = cli_long(&spec, "-n", optarg, 1, 100000000); break;
        case O_BUDGET: budget = cli_double(&spec, "--budget", optarg, 1e-3, 1e6); break;
        case O_STREAM: stream = 1; break;
        case O_MAXTOK: max_tokens = cli_long(&spec, "--max-tokens", optarg, 1, 1 << 20); break;
        case O_TOKEN: R.token = optarg; break;
        case O_TIMEOUT: timeout = cli_double(&spec, "--timeout", optarg, 0.01, 86400); break;
        case O_REQS: reqs = optarg; break;
        case O_QUIET: quiet = 1; break;
        }
    }
    if (!url) cli_usage_error(&spec, "--url is required");
    if (!cases && optind < argc) cases = argv[optind++];
    if (optind < argc) cli_usage_error(&spec, "one input file at most");
    char *err = NULL;
    if (lg_url_check(url, &err)) cli_usage_error(&spec, "--url %s: %s", url, err);
    R.url = url;
    lg_global_init();

    jsonl_reader *in = jsonl_open(cases ? cases : "-", c.skip_bad);
    if (!in) return EXIT_FAIL;
    json_t *line;
    int got, rc = 0;
    long cap = 0;
    while ((got = jsonl_next(in, &line)) > 0) {
        int chat;
        char *b = body_for(line, stream, max_tokens, &chat, &err);
        json_decref(line);
        if (!b) {
            hat_errat(jsonl_name(in), jsonl_line(in), "%s", err);
            free(err);
            err = NULL;
            if (!c.skip_bad) { rc = 1; break; }
            continue;
        }
        if (R.nlines == cap) {
            cap = cap ? 2 * cap : 64;
            R.body = xrealloc(R.body, cap * sizeof *R.body);
            R.chat = xrealloc(R.chat, cap * sizeof *R.chat);
        }
        R.body[R.nlines] = b;
        R.chat[R.nlines++] = chat;
    }
    if (got < 0) rc = 1;
    if (jsonl_close(in)) rc = 1;
    if (!rc && !R.nlines) { hat_warn("no requests in the input"); rc = 1; }
    if (rc) goto out;

    R.n = n ? n : R.nlines;
    R.out = xcalloc(R.n, sizeof *R.out);
    R.timeout = timeout;
    pthread_mutex_init(&R.mu, NULL);
    long nthreads = conc;
    if (rate > 0) {
        /* Poisson arrivals: exponential gaps of mean 1/rate from the seed. */
        rng_t g;
        rng_seed(&g, c.seed_set ? c.seed : 1);
        R.start = xmalloc(R.n * sizeof *R.start);
        double t = 0;
        for (long i = 0; i < R.n; i++) { R.start[i] = t; t += -log(1 - rng_uniform(&g)) / rate; }
        if (nthreads < 256) nthreads = 256;   /* enough that arrivals are not held back */
    }
    if (nthreads > R.n) nthreads = R.n;
    pthread_t *th = xcalloc(nthreads, sizeof *th);
    R.t0 = hat_now();
    R.pg = progress_start(NULL, "requests", R.n);
    for (long i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker, &R);
    for (long i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    progress_end(R.pg);
    double dur = hat_now() - R.t0;
    free(th);

    json_t *rep = lg_report(R.out, R.n, dur, budget);
    json_object_set_new(rep, "concurrency", rate > 0 ? json_null() : json_integer(conc));
    json_object_set_new(rep, "rate", rate > 0 ? json_real(rate) : json_null());
    if (reqs) {
        hat_out *ro = out_open(reqs);
        if (!ro) rc = 1;
        for (long i = 0; ro && i < R.n; i++) {
            json_t *o = json_pack("{s:I,s:i,s:f,s:f,s:I}", "index", (json_int_t)i, "status", R.out[i].status,
                                  "latency_ms", round(R.out[i].latency * 1e6) / 1e3,
                                  "ttft_ms", round(R.out[i].ttft * 1e6) / 1e3, "tokens", (json_int_t)R.out[i].tokens);
            if (out_json(ro, o)) rc = 1;
            json_decref(o);
        }
        if (ro && out_close(ro)) rc = 1;
    }
    hat_out *o = out_open(c.output);
    if (!o || out_json(o, rep) || out_close(o)) rc = 1;
    if (!quiet) {
        sbuf b;
        sbuf_init(&b);
        lg_table(&b, rep);
        fputs(b.s, stderr);
        sbuf_free(&b);
    }
    json_decref(rep);
    pthread_mutex_destroy(&R.mu);
out:
    for (long i = 0; i < R.nlines; i++) free(R.body[i]);
    free(R.body);
    free(R.chat);
    free(R.out);
    free(R.start);
    return rc ? EXIT_FAIL : EXIT_OK;
}
