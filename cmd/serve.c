/* serve — the agent in production: a checkpoint, a harness and the
 * simulator's world behind HTTP (OpenAI-compatible chat completions and
 * the full agent loop), JSONL on stdin/stdout, or an interactive REPL.
 * Option parsing and glue; the server is common/serve*.c. */
#include "ckpt.h"
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "serve.h"
#include "tokenizer.h"
#include "util.h"
#include "world.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: serve (--ckpt CKPT | --policy teacher) --world FILE --harness H [options]\n"
    "Serve the agent: HTTP (--port/--http), JSONL on stdin (--stdio), or a REPL on a terminal.\n"
    "  --ckpt CKPT          checkpoint or Hugging Face directory (with tokenizer.json)\n"
    "  --tokenizer FILE     tokenizer.json to use instead of the checkpoint's\n"
    "  --world FILE         world.json: the tools' back end (required)\n"
    "  --harness H          harness directory, .tar(.gz) or JSON (required); reloaded on\n"
    "                       SIGHUP and when its files change\n"
    "  --port N             serve HTTP on port N (0 = any free port)\n"
    "  --host ADDR          address to bind (default 127.0.0.1)\n"
    "  --http ADDR:PORT     the same as --host ADDR --port PORT\n"
    "  --stdio              JSONL requests on stdin, answers on stdout\n"
    "  --token TOKEN        require Authorization: Bearer TOKEN (default $HAT_SERVE_TOKEN)\n"
    "  --slots N            sequences in flight per engine (default 8)\n"
    "  --max-context N      tokens per sequence (default the model's maximum)\n"
    "  --queue N            waiting requests before 429 (default 64)\n"
    "  --max-body N         request body bytes (default 1048576)\n"
    "  --max-messages N     messages per chat request (default 256)\n"
    "  --max-tokens N       ceiling and default of max_tokens per turn (default 1024)\n"
    "  --connections N      open HTTP connections at most (default 64)\n"
    "  --timeout S          idle connection timeout in seconds (default 30)\n"
    "  --per-ip N           connections one client address may hold (default 64)\n"
    "  --reserve N          extra connections for /health and /metrics only (default 4)\n"
    "  --header-timeout S   a request's headers must arrive within S seconds (default 10)\n"
    "  --request-timeout S  and its whole body within S seconds (default 60)\n"
    "  --drain-timeout S    on SIGTERM finish requests for S seconds at most, then end\n"
    "                       them with 503 (default 30); a second signal exits at once\n"
    "  --poll-ms N          harness change polling period (default 1000; 0 = off)\n"
    "  --window N           --stdio: requests in flight (default --slots)\n"
    "  --history FILE       REPL history file\n"
    "  --port-file FILE     write the bound HTTP port here\n"
    "  --mtp K              speculative decoding: the MTP module drafts K tokens per step\n"
    "  --device D           cpu (default), cuda, or auto (cuda when a GPU is usable\n"
    "                       and --mtp is off, else cpu): where both engines decode\n"
    "  --precision P        GPU weights and KV cache: bf16 (default, fast) or fp32\n"
    "                       (greedy output matches the CPU's)\n"
    "  --policy teacher     test only: the scripted teacher replays instead of a model\n"
    "  --seed N             sampling seed for requests without one (default 1)\n";

enum { O_CKPT = 1, O_TOK, O_WORLD, O_HARNESS, O_PORT, O_HOST, O_HTTP, O_STDIO, O_TOKEN, O_SLOTS, O_CTX,
       O_QUEUE, O_BODY, O_MSGS, O_MAXTOK, O_CONNS, O_TIMEOUT, O_POLL, O_WINDOW, O_HIST, O_PORTFILE,
       O_MTP, O_POLICY, O_DEVICE, O_PRECISION, O_PERIP, O_RESERVE, O_HDRTO, O_REQTO, O_DRAINTO };

static volatile int stop_flag;
static serve *the_server;

/* The first signal starts the drain; a second one ends the process now. */
static void on_stop(int sig)
{
    static const char msg[] = "serve: second signal: exiting without finishing\n";
    if (stop_flag) {
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(EXIT_FAIL);
    }
    stop_flag = 1;
}
static void on_hup(int sig) { if (the_server) serve_request_reload(the_server); }

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        { "ckpt", required_argument, NULL, O_CKPT }, { "tokenizer", required_argument, NULL, O_TOK },
        { "world", required_argument, NULL, O_WORLD }, { "harness", required_argument, NULL, O_HARNESS },
        { "port", required_argument, NULL, O_PORT }, { "host", required_argument, NULL, O_HOST },
        { "http", required_argument, NULL, O_HTTP }, { "stdio", no_argument, NULL, O_STDIO },
        { "token", required_argument, NULL, O_TOKEN }, { "slots", required_argument, NULL, O_SLOTS },
        { "max-context", required_argument, NULL, O_CTX }, { "queue", required_argument, NULL, O_QUEUE },
        { "max-body", required_argument, NULL, O_BODY }, { "max-messages", required_argument, NULL, O_MSGS },
        { "max-tokens", required_argument, NULL, O_MAXTOK }, { "connections", required_argument, NULL, O_CONNS },
        { "timeout", required_argument, NULL, O_TIMEOUT }, { "poll-ms", required_argument, NULL, O_POLL },
        { "window", required_argument, NULL, O_WINDOW }, { "history", required_argument, NULL, O_HIST },
        { "port-file", required_argument, NULL, O_PORTFILE }, { "mtp", required_argument, NULL, O_MTP },
        { "policy", required_argument, NULL, O_POLICY }, { "device", required_argument, NULL, O_DEVICE },
        { "precision", required_argument, NULL, O_PRECISION }, { "per-ip", required_argument, NULL, O_PERIP },
        { "reserve", required_argument, NULL, O_RESERVE }, { "header-timeout", required_argument, NULL, O_HDRTO },
        { "request-timeout", required_argument, NULL, O_REQTO },
        { "drain-timeout", required_argument, NULL, O_DRAINTO }, { 0 } };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *ckpath = NULL, *tpath = NULL, *wpath = NULL, *hpath = NULL, *hist = NULL;
    serve_config sc = { 0 };
    sc.limits = (serve_limits)SERVE_LIMITS_INIT;
    sc.dev = (gen_device)GEN_DEVICE_INIT;
    sc.slots = 8;
    sc.queue_max = 64;
    sc.poll_ms = 1000;
    sc.log = stderr;
    serve_http_opts ho = { "127.0.0.1", -1, getenv("HAT_SERVE_TOKEN"), 64, 30, NULL, 64, 4, 10, 60, 30 };
    int stdio = 0, window = 0, opt;
    cli_init(argc, argv);
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case O_CKPT: ckpath = optarg; break;
        case O_TOK: tpath = optarg; break;
        case O_WORLD: wpath = optarg; break;
        case O_HARNESS: hpath = optarg; break;
        case O_PORT: ho.port = (int)cli_long(&spec, "--port", optarg, 0, 65535); break;
        case O_HOST: ho.host = optarg; break;
        case O_HTTP: {
            char *colon = strrchr(optarg, ':');
            if (!colon) cli_usage_error(&spec, "--http wants ADDR:PORT");
            *colon = 0;
            ho.host = *optarg == '[' ? optarg + 1 : optarg;
            if (*optarg == '[' && colon > optarg && colon[-1] == ']') colon[-1] = 0;
            ho.port = (int)cli_long(&spec, "--http", colon + 1, 0, 65535);
            break;
        }
        case O_STDIO: stdio = 1; break;
        case O_TOKEN: ho.token = optarg; break;
        case O_SLOTS: sc.slots = (int)cli_long(&spec, "--slots", optarg, 1, 4096); break;
        case O_CTX: sc.max_context = (int)cli_long(&spec, "--max-context", optarg, 16, 1 << 24); break;
        case O_QUEUE: sc.queue_max = (int)cli_long(&spec, "--queue", optarg, 1, 1 << 20); break;
        case O_BODY: sc.limits.max_body = (size_t)cli_long(&spec, "--max-body", optarg, 64, 1L << 30); break;
        case O_MSGS: sc.limits.max_messages = (int)cli_long(&spec, "--max-messages", optarg, 1, 1 << 20); break;
        case O_MAXTOK: sc.limits.max_tokens = (int)cli_long(&spec, "--max-tokens", optarg, 1, 1 << 20); break;
        case O_CONNS: ho.threads_max = (int)cli_long(&spec, "--connections", optarg, 1, 1 << 16); break;
        case O_TIMEOUT: ho.timeout_s = (int)cli_long(&spec, "--timeout", optarg, 1, 86400); break;
        case O_POLL: sc.poll_ms = (int)cli_long(&spec, "--poll-ms", optarg, 0, 3600000); break;
        case O_WINDOW: window = (int)cli_long(&spec, "--window", optarg, 1, 1 << 20); break;
        case O_HIST: hist = optarg; break;
        case O_PORTFILE: ho.port_file = optarg; break;
        case O_MTP: sc.mtp = (int)cli_long(&spec, "--mtp", optarg, 0, 8); break;
        case O_POLICY: sc.policy = optarg; break;
        case O_DEVICE: sc.dev.device = gen_device_arg(&spec, optarg); break;
        case O_PRECISION: sc.dev.precision = gen_precision_arg(&spec, optarg); break;
        case O_PERIP: ho.per_ip = (int)cli_long(&spec, "--per-ip", optarg, 1, 1 << 16); break;
        case O_RESERVE: ho.reserve = (int)cli_long(&spec, "--reserve", optarg, 0, 1024); break;
        case O_HDRTO: ho.header_timeout_s = (int)cli_long(&spec, "--header-timeout", optarg, 1, 86400); break;
        case O_REQTO: ho.request_timeout_s = (int)cli_long(&spec, "--request-timeout", optarg, 1, 86400); break;
        case O_DRAINTO: ho.drain_timeout_s = (double)cli_long(&spec, "--drain-timeout", optarg, 0, 86400); break;
        }
    }
    if (!ckpath && !sc.policy) cli_usage_error(&spec, "--ckpt is required");
    if (!wpath) cli_usage_error(&spec, "--world is required");
    if (!hpath) cli_usage_error(&spec, "--harness is required");
    if (stdio && ho.port >= 0) cli_usage_error(&spec, "--stdio and --port/--http exclude each other");
    if (sc.policy && strcmp(sc.policy, "teacher")) cli_usage_error(&spec, "--policy: only \"teacher\"");
    /* The device first: a missing GPU fails before any loading. */
    char *err = NULL;
    sc.dev.mtp = sc.mtp > 0;
    int drc = gen_device_check(&sc.dev, &err);
    if (drc == EXIT_USAGE) cli_usage_error(&spec, "%s", err);
    if (drc) { hat_errat(NULL, 0, "%s", err); free(err); return drc; }

    int rc = 0;
    ckpt k = { 0 };
    world *w = NULL;
    tokenizer *t = NULL;
    json_t *h = NULL;
    serve *s = NULL;
    if (ckpath && ckpt_load(&k, ckpath)) { rc = -1; goto out; }
    if (ckpath && ckpt_tokenizer(&k, ckpath, tpath, 1, &t)) { rc = -1; goto out; }
    if (!(w = world_load(wpath))) { rc = -1; goto out; }
    if (!(h = harness_load_checked(hpath))) { rc = -1; goto out; }
    sc.m = k.m;
    sc.t = t;
    sc.w = w;
    sc.seed = c.seed_set ? c.seed : 1;
    sc.harness_path = hpath;
    const char *base = ckpath ? strrchr(ckpath, '/') : NULL;
    sc.model_name = ckpath ? (base && base[1] ? base + 1 : ckpath) : sc.policy;
    if (sc.mtp > 0 && k.m && !k.m->cfg.n_mtp)
        hat_warn("--mtp %d: the checkpoint has no MTP module; decoding is not speculative", sc.mtp);
    if (!(s = serve_new(&sc, h, &err))) { hat_warn("%s", err); rc = -1; goto out; }
    if (k.m) {
        const serve_config *g = serve_get_config(s);
        json_t *st = serve_stats(s);
        hat_warn("KV cache %.1f MiB in all (%d sequences x %d tokens per engine), on %s in %s",
                 json_integer_value(json_object_get(st, "kv_cache_bytes")) / 1048576.0, g->slots,
                 g->max_context, json_string_value(json_object_get(st, "device")),
                 json_string_value(json_object_get(st, "precision")));
        json_decref(st);
    }
    the_server = s;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = { 0 };
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_stop;
    if (ho.port >= 0) {
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        rc = serve_http_run(s, &ho, &stop_flag);
    } else if (!stdio && isatty(0)) rc = serve_repl_run(s, stdin, stdout, hist);
    else rc = serve_stdio_run(s, stdin, stdout, window ? window : serve_get_config(s)->slots);
out:
    the_server = NULL;
    serve_free(s);
    free(err);
    json_decref(h);
    world_free(w);
    tok_free(t);
    ckpt_free(&k);
    return rc ? EXIT_FAIL : EXIT_OK;
}
