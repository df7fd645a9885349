/* serve_repl.c — serve's interactive mode on GNU readline: type a viewer
 * message, the agent answers through the full loop (harness, simulator
 * tools, hooks), as /v1/agent would.  Commands start with a slash:
 *   /help            the commands
 *   /harness [PATH]  show the current harness, or load PATH (lint first)
 *   /nick NAME       the viewer's nick (default "viewer")
 *   /trace           the last conversation, one message per line
 *   /reset           forget the last conversation and the nick
 *   /stats           queue, requests, latency, harness
 *   /quit            leave (as does end of input)
 * Each message is its own conversation, as a viewer's comment is in a
 * stream; /trace shows how the last one went. */
#include "serve.h"
#include "jsonl.h"

#include <readline/history.h>
#include <readline/readline.h>
#include <stdlib.h>
#include <string.h>

static void print_trace(FILE *out, const json_t *resp)
{
    const json_t *msgs = json_object_get(json_object_get(resp, "trajectory"), "messages");
    if (!msgs) { fprintf(out, "(no conversation yet)\n"); return; }
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        const json_t *calls = json_object_get(m, "tool_calls");
        if (json_array_size(calls)) {
            size_t k;
            json_t *c;
            json_array_foreach(calls, k, c) {
                const json_t *f = json_object_get(c, "function");
                char *a = json_compact(json_object_get(f ? f : c, "arguments"));
                fprintf(out, "  %s: call %s %s\n", role, json_string_value(json_object_get(f ? f : c, "name")),
                        a ? a : "{}");
                free(a);
            }
            continue;
        }
        const char *name = json_string_value(json_object_get(m, "name"));
        fprintf(out, "  %s%s%s: %s\n", role ? role : "?", name ? " " : "", name ? name : "",
                json_string_value(json_object_get(m, "content")) ?: "");
    }
    const json_t *t = json_object_get(resp, "timings");
    fprintf(out, "  (%s, %lld turns, %lld tokens, %.1f ms)\n", json_string_value(json_object_get(resp, "finish")) ?: "?",
            json_integer_value(json_object_get(t, "turns")), json_integer_value(json_object_get(t, "gen_tokens")),
            json_number_value(json_object_get(t, "total_ms")));
}

static void print_stats(serve *s, FILE *out)
{
    json_t *st = serve_stats(s);
    metrics *mx = serve_metrics(s);
    const char *l = "path=\"/v1/agent\"";
    double n = metrics_get(mx, "hat_request_duration_seconds", l, NULL);
    fprintf(out, "harness %s %s; %lld requests; queue %lld, running %lld of %lld slots; reloads %lld (%lld refused)\n",
            json_string_value(json_object_get(json_object_get(st, "harness"), "name")),
            json_string_value(json_object_get(json_object_get(st, "harness"), "version")),
            json_integer_value(json_object_get(st, "requests")), json_integer_value(json_object_get(st, "queue")),
            json_integer_value(json_object_get(st, "running")), json_integer_value(json_object_get(st, "slots")),
            json_integer_value(json_object_get(st, "reloads")), json_integer_value(json_object_get(st, "reload_failures")));
    if (n > 0)
        fprintf(out, "agent latency p50 %.3f s, p95 %.3f s over %.0f requests\n",
                metrics_quantile(mx, "hat_request_duration_seconds", l, 0.5),
                metrics_quantile(mx, "hat_request_duration_seconds", l, 0.95), n);
    json_decref(st);
}

static void ask(serve *s, FILE *out, const char *nick, const char *text, json_t **last)
{
    json_t *body = json_pack("{s:{s:s,s:s}}", "viewer", "nick", nick, "text", text);
    json_t *resp = NULL;
    int st = body ? serve_run(s, SERVE_AGENT, body, &resp) : 400;
    json_decref(body);
    if (st != 200) {
        const char *m = json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
        fprintf(out, "error %d: %s\n", st, m ? m : "the message is not valid UTF-8");
        json_decref(resp);
        return;
    }
    const char *reply = json_string_value(json_object_get(resp, "reply"));
    if (reply) fprintf(out, "host> %s\n", reply);
    else fprintf(out, "(no reply accepted: %s; /trace shows the turns)\n",
                 json_string_value(json_object_get(resp, "finish")) ?: "?");
    json_decref(*last);
    *last = resp;
}

int serve_repl_run(serve *s, FILE *in, FILE *out, const char *history)
{
    rl_instream = in;
    rl_outstream = out;
    using_history();
    if (history) read_history(history);
    char *nick = xstrdup("viewer");
    json_t *last = NULL;
    json_t *h = serve_harness(s);
    fprintf(out, "hat serve: harness %s %s; type a viewer message, /help for commands\n",
            json_string_value(json_object_get(h, "name")) ?: "?", json_string_value(json_object_get(h, "version")) ?: "?");
    json_decref(h);
    char *line;
    while ((line = readline("viewer> "))) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p) add_history(p);
        if (!*p) { free(line); continue; }
        if (!strcmp(p, "/quit") || !strcmp(p, "/exit")) { free(line); break; }
        if (!strcmp(p, "/help"))
            fprintf(out, "/harness [PATH]  /nick NAME  /trace  /reset  /stats  /quit; anything else is a viewer message\n");
        else if (!strncmp(p, "/harness", 8) && (!p[8] || p[8] == ' ')) {
            const char *path = p + 8;
            while (*path == ' ') path++;
            char *err = NULL;
            if (*path && serve_reload_now(s, path, &err)) fprintf(out, "refused: %s\n", err);
            free(err);
            json_t *cur = serve_harness(s);
            fprintf(out, "harness %s %s\n", json_string_value(json_object_get(cur, "name")) ?: "?",
                    json_string_value(json_object_get(cur, "version")) ?: "?");
            json_decref(cur);
        } else if (!strncmp(p, "/nick ", 6) && p[6]) {
            free(nick);
            nick = xstrdup(p + 6);
            fprintf(out, "nick %s\n", nick);
        } else if (!strcmp(p, "/trace")) print_trace(out, last);
        else if (!strcmp(p, "/reset")) {
            json_decref(last);
            last = NULL;
            free(nick);
            nick = xstrdup("viewer");
            fprintf(out, "reset\n");
        } else if (!strcmp(p, "/stats")) print_stats(s, out);
        else if (*p == '/') fprintf(out, "unknown command %s (/help)\n", p);
        else ask(s, out, nick, p, &last);
        fflush(out);
        free(line);
    }
    if (history) write_history(history);
    json_decref(last);
    free(nick);
    return 0;
}
