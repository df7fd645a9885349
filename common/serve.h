/* serve.h — the serving runtime behind serve(1): request parsing and
 * validation, routing and error bodies (pure functions, reachable from
 * tests and the fuzzer without a network), the scheduler that owns the
 * decoding engines, harness hot reload, and the front ends (HTTP through
 * libmicrohttpd, JSONL on stdin/stdout, a readline REPL).
 *
 * Threads.  ONE scheduler thread owns the model's engines: a gen_engine
 * for /v1/chat/completions and a rollout (the agent loop, over its own
 * gen_engine) for /v1/agent.  Each turn of its loop admits queued jobs
 * while sequences are free, runs one gen_step and one rollout_step over
 * everything in flight (continuous batching: requests join and leave the
 * running batch at any step), and hands out finished work.  Front-end
 * threads parse a request, encode its prompt (the tokenizer is thread
 * safe), submit a job and wait on the job's condition variable; a full
 * queue answers 429 at once, a draining server 503.
 *
 * Memory.  Each engine holds --slots sequences of --max-context tokens of
 * KV cache, allocated up front; serve_kv_bytes says how much.  A request
 * waits in the queue until a sequence is free, so the budget is never
 * exceeded, whatever the load.
 *
 * Harness.  The current harness is a jansson object swapped under a
 * mutex.  A job takes a reference when it starts; rollout keeps it until
 * the conversation ends.  A reload (SIGHUP, a change to the files under
 * the harness path seen by polling, or serve_reload) loads and lints the
 * new one in a reload thread of its own (never the scheduler's): on lint errors the old one is kept and
 * a line is logged; otherwise new jobs get the new one while jobs in
 * flight finish on the old (jansson's reference count frees it after). */
#ifndef HAT_SERVE_H
#define HAT_SERVE_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"
#include "model.h"
#include "rollout.h"
#include "tokenizer.h"
#include "util.h"
#include "world.h"

/* ---- requests (serve.c) ------------------------------------------------------ */

typedef struct {
    size_t max_body;       /* bytes of a request body */
    int    max_messages;   /* messages in a chat request */
    int    max_tokens;     /* ceiling of max_tokens (and the default) */
    int    max_tools;      /* tools in a chat request */
    int    max_stop;       /* stop strings */
    int    max_text;       /* bytes of one viewer message */
} serve_limits;

#define SERVE_LIMITS_INIT { 1u << 20, 256, 1024, 64, 4, 4096 }

enum { SERVE_CHAT = 1, SERVE_AGENT, SERVE_HEALTH, SERVE_METRICS };
enum { SERVE_TC_AUTO, SERVE_TC_NONE, SERVE_TC_REQUIRED, SERVE_TC_NAMED };

typedef struct {
    int      kind;            /* SERVE_CHAT | SERVE_AGENT */
    /* chat */
    json_t  *messages;        /* validated OpenAI messages (tool_calls arguments as objects) */
    json_t  *tools;           /* template tools (chat_tools_from_schemas) or NULL */
    int      tool_choice;     /* SERVE_TC_* */
    char    *tool_name;       /* SERVE_TC_NAMED */
    int      stream;
    json_t  *stop;            /* array of non-empty strings, or NULL */
    /* agent */
    json_t  *task;            /* a task (tasks.jsonl) built from the viewer message, or given */
    int      max_turns;       /* 0 = the harness's */
    /* both */
    int      max_tokens;      /* per turn */
    float    temperature, top_p;
    int      top_k;
    uint64_t seed;
    int      seed_set;
    int      enable_thinking; /* CHAT_THINK_* */
    char    *id;              /* the client's "id" (stdio) or NULL */
} serve_request;

/* Parse and validate a request body of kind SERVE_CHAT or SERVE_AGENT.
 * Returns 0 and fills *r, or an HTTP status (400 malformed JSON or a
 * wrong type, 413 over a limit, 422 a value out of range) with *err
 * (malloc'd) saying which field and why.  Never keeps pointers into body. */
int   serve_parse(int kind, const char *body, size_t len, const serve_limits *L,
                  serve_request *r, char **err);
/* The same from an already parsed object (stdio lines). */
int   serve_parse_json(int kind, const json_t *body, const serve_limits *L, serve_request *r,
                       char **err);
void  serve_request_clear(serve_request *r);

/* The route of method + path: SERVE_* or, negated, the HTTP status to
 * answer (-404 unknown path, -405 wrong method).  A query string is
 * ignored. */
int   serve_route(const char *method, const char *path);
/* {"error":{"message","type","code"}} as compact text (malloc'd). */
char *serve_error_body(int status, const char *message);
/* 1 when the Authorization header value carries "Bearer TOKEN" (constant
 * time in the token's length); always 1 when token is NULL or empty. */
int   serve_auth_ok(const char *header, const char *token);

/* The text of the assistant turn to prepend for tool_choice: "" (auto,
 * none), "<tool_call>\n" (required) or "<tool_call>\n{\"name\": \"NAME\",
 * \"arguments\": " (named).  malloc'd. */
char *serve_forced_prefix(const serve_request *r);
/* The chat prompt: rendered messages + tools + generation prompt, and the
 * forced prefix.  malloc'd, or NULL with *err. */
char *serve_chat_prompt(const serve_request *r, char **err);
/* Its ids, appended to *ids: user and tool contents never yield control
 * tokens (chat_text_encode), the template's structure does.  0, or 400
 * with *err. */
int   serve_chat_encode(const serve_request *r, const tokenizer *t, tok_ids *ids, char **err);

/* Streaming: of the generated text so far, which bytes can be sent as
 * content now.  Content starts after a closed <think> block and leading
 * newlines (*start); it ends before a <tool_call>, before a trailing part
 * that might still become "<tool_call>", a stop string or a UTF-8
 * character, and before trailing newlines (they may precede a tool call).
 * With final set only <tool_call> and newlines before it cut.  Returns
 * the end offset (>= *start). */
size_t serve_stream_ready(const char *text, size_t len, const json_t *stop, int final,
                          size_t *start);
/* The earliest occurrence of a stop string in text[0..len), or len. */
size_t serve_find_stop(const char *text, size_t len, const json_t *stop);

/* OpenAI response objects.  msg is chat_parse_output's message; tool
 * calls become {"id":"call_K","type":"function","function":{"name",
 * "arguments": JSON text}}. */
json_t *serve_openai_message(const json_t *msg, int with_reasoning);
json_t *serve_chat_response(const char *id, long created, const char *model, const json_t *msg,
                            const char *finish, int prompt_tokens, int completion_tokens);

/* ---- the server (serve_sched.c) ---------------------------------------------- */

typedef struct {
    const model     *m;            /* NULL only with a policy */
    const tokenizer *t;
    const world     *w;
    const char      *harness_path; /* watched and reloaded */
    const char      *model_name;
    int      slots;                /* sequences per engine */
    int      max_context;          /* tokens per sequence */
    int      queue_max;            /* waiting jobs before 429 */
    int      poll_ms;              /* harness file polling period; 0 = off */
    uint64_t seed;
    serve_limits limits;
    int      mtp;                  /* speculative draft length; 0 = off */
    gen_device dev;                /* where both engines decode (gen_open's rules; the
                                      zero value is the CPU in fp32); dev.mtp is
                                      taken from mtp */
    const char *policy;            /* test-only scripted policy ("teacher") or NULL */
    FILE    *log;                  /* log lines (stderr) */
} serve_config;

typedef struct serve serve;

/* A job: one request from submission to its answer. */
enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE };
typedef struct serve_job {
    serve_request   req;
    int             *prompt, n_prompt;  /* chat: encoded prompt */
    char            *prefix;            /* chat: forced start of the turn */
    pthread_mutex_t  mu;
    pthread_cond_t   cv;
    int              state;
    int              status;            /* HTTP status of the answer */
    json_t          *result;            /* the response body */
    sbuf             text;              /* chat: generated text so far (stream) */
    int              n_gen, refs, cancelled;
    double           t_submit, t_start, t_first, t_done;
    /* scheduler-private */
    int              slot;              /* engine slot (chat), stream (agent) */
    json_t          *script;            /* --policy teacher: the turns to replay */
    struct serve_job *next;
} serve_job;

/* Start the scheduler thread with harness h (a reference is taken).
 * NULL with *err when the engines cannot be built (c->dev asks for cuda
 * and there is no usable GPU: *err starts "--device cuda: ").  The
 * engines live as long as the server: a harness reload swaps the harness
 * only, so they stay on the device they were built on. */
serve  *serve_new(const serve_config *c, json_t *h, char **err);
/* Stop accepting (503), finish every job in flight and queued, stop the
 * scheduler and free everything. */
void    serve_free(serve *s);
void    serve_drain(serve *s);           /* stop accepting; wait until idle */
/* The same, waiting at most seconds (< 0: for ever); then every job still
 * queued or running is ended with 503.  Returns 1 when it had to. */
int     serve_drain_for(serve *s, double seconds);
int     serve_draining(const serve *s);
metrics *serve_metrics(serve *s);
const serve_config *serve_get_config(const serve *s);

/* A job for a parsed request (takes over r's contents): for chat, renders
 * and encodes the prompt.  Returns NULL with *status and *err when the
 * request cannot be served (no model, a prompt longer than the context). */
serve_job *serve_job_new(serve *s, serve_request *r, int *status, char **err);
/* Queue it.  0, or 429 (queue full) / 503 (draining). */
int     serve_submit(serve *s, serve_job *j);
/* Wait until done; returns j->status. */
int     serve_wait(serve_job *j);
/* Wait at most seconds: 1 when done, 0 when not yet. */
int     serve_wait_for(serve_job *j, double seconds);
/* The client went away: the scheduler stops generating for it. */
void    serve_cancel(serve_job *j);
void    serve_job_unref(serve_job *j);

/* Count an answered request in the metrics (seconds < 0: no latency). */
void    serve_observe(serve *s, int kind, int status, double seconds);
/* Run one request to completion (parse errors included): the status and
 * the response body (new ref).  What stdio and the REPL use. */
int     serve_run(serve *s, int kind, const json_t *body, json_t **response);

/* Ask for a harness reload at the scheduler's next turn (async-signal
 * safe).  serve_reload_now loads path (NULL = the configured one) and
 * swaps it in unless it fails to load or lint: 0, or -1 with *err. */
void    serve_request_reload(serve *s);
int     serve_reload_now(serve *s, const char *path, char **err);
/* The current harness (new ref). */
json_t *serve_harness(serve *s);
/* {"queue","running","slots","context","requests","harness":{name,version},
 *  "reloads","reload_failures","kv_cache_bytes","draining","mtp",
 *  "device","precision"}: device "cpu" or "cuda" (where the engines
 *  decode; "cpu" without a model), precision "fp32" or "bf16". */
json_t *serve_stats(serve *s);
/* Bytes of KV cache one engine holds for c (on the CPU: fp32). */
size_t  serve_kv_bytes(const serve_config *c);

/* ---- front ends ----------------------------------------------------------------- */

/* HTTP (serve_http.c): listen on host:port until *stop becomes nonzero,
 * then drain.  token: bearer token or NULL.  0 or -1 after a message. */
typedef struct {
    const char *host;
    int         port;
    const char *token;
    int         threads_max;        /* ordinary connection slots (0: 64) */
    int         timeout_s;          /* idle connection timeout (0: 30) */
    const char *port_file;          /* write the bound port here (port 0 = any) */
    int         per_ip;             /* ordinary slots one client address may hold (0: 64) */
    int         reserve;            /* extra slots for /health and /metrics only */
    int         header_timeout_s;   /* a request's headers must be in by then (0: 10) */
    int         request_timeout_s;  /* its body too (0: 60) */
    double      drain_timeout_s;    /* SIGTERM: finish jobs for this long (< 0: 30) */
} serve_http_opts;
int     serve_http_run(serve *s, const serve_http_opts *o, volatile int *stop);

/* JSONL (serve_stdio.c): each line {"path"?, "id"?, ...body} →
 * {"id","status","response"} in input order, up to `window` in flight. */
int     serve_stdio_run(serve *s, FILE *in, FILE *out, int window);

/* REPL (serve_repl.c) on GNU readline over in/out. */
int     serve_repl_run(serve *s, FILE *in, FILE *out, const char *history);

#endif
