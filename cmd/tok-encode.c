/* tok-encode — JSONL text to token ids with a Hugging Face tokenizer.json.
 * Each record's text field is replaced by an array of ids; other fields
 * are kept in place.  With --lines the input is plain text, one record per
 * line.  The encoding itself is common/tokenizer.c. */
#include "chat_encode.h"
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "tokenizer.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tok-encode --tokenizer FILE [options] [FILE...]\n"
    "Replace the text field of each JSONL record by its token ids.\n"
    "  -t, --tokenizer FILE  tokenizer.json to use (required)\n"
    "      --field NAME      text field to read (default text)\n"
    "      --ids-field NAME  field to write the ids to (default ids)\n"
    "      --keep-text       keep the text field as well\n"
    "      --lines           input is plain UTF-8 text, one record per line\n"
    "      --chat            training records ({\"text\"} or {\"messages\"}, with an\n"
    "                        inline or --harness harness) to {\"id\",\"ids\",\"mask\"}:\n"
    "                        mask 1 exactly on tokens the assistant wrote\n"
    "      --harness H       harness for conversations without an inline one\n"
    "  -o, --output FILE     write here instead of stdout\n"
    "      --skip-bad        skip bad records and report how many\n"
    "  -h, --help            this help;  --version  the version\n";

enum { OPT_FIELD = 1, OPT_IDS_FIELD, OPT_KEEP, OPT_LINES, OPT_CHAT, OPT_HARNESS };

static const struct option long_opts[] = {
    { "tokenizer", required_argument, NULL, 't' },
    { "field",     required_argument, NULL, OPT_FIELD },
    { "ids-field", required_argument, NULL, OPT_IDS_FIELD },
    { "keep-text", no_argument,       NULL, OPT_KEEP },
    { "lines",     no_argument,       NULL, OPT_LINES },
    { "chat",      no_argument,       NULL, OPT_CHAT },
    { "harness",   required_argument, NULL, OPT_HARNESS },
    { 0 },
};

typedef struct {
    const tokenizer *tok;
    const char *field, *ids_field;
    const json_t *harness;
    int keep, skip_bad, chat;
    long bad;
    hat_out *out;
} job;

static json_t *ids_json(const tok_ids *ids)
{
    json_t *a = json_array();
    for (size_t i = 0; i < ids->n; i++) json_array_append_new(a, json_integer(ids->v[i]));
    return a;
}

/* Encode text; on invalid UTF-8 report where.  0 or -1. */
static int encode(job *j, const char *file, long line, const char *s, size_t n, json_t **out)
{
    tok_ids ids = { 0 };
    if (tok_encode(j->tok, s, n, &ids) < 0) {
        hat_errat(file, line, "invalid UTF-8 at byte %ld of the text", tok_utf8_check(s, n));
        return -1;
    }
    *out = ids_json(&ids);
    tok_ids_free(&ids);
    return 0;
}

/* The record with the text field replaced (or followed) by the ids. */
static json_t *rebuild(const job *j, json_t *rec, json_t *ids)
{
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(rec, k, v) {
        if (!strcmp(k, j->ids_field) && strcmp(k, j->field)) continue;
        if (strcmp(k, j->field)) { json_object_set(o, k, v); continue; }
        if (j->keep) json_object_set(o, k, v);
        json_object_set(o, j->ids_field, ids);
    }
    return o;
}

/* --chat: {"id"?, "ids", "mask"} through the one chat encoder. */
static int do_chat(job *j, const char *file, long line, json_t *rec)
{
    tok_ids ids = { 0 }, mask = { 0 };
    char *err = NULL;
    if (record_encode(j->tok, rec, j->harness, &ids, &mask, &err)) {
        hat_errat(file, line, "%s", err);
        free(err);
        return 1;
    }
    json_t *o = json_object(), *id = json_object_get(rec, "id");
    if (id) json_object_set(o, "id", id);
    json_object_set_new(o, "ids", ids_json(&ids));
    json_object_set_new(o, "mask", ids_json(&mask));
    int rc = out_json(j->out, o);
    json_decref(o);
    tok_ids_free(&ids);
    tok_ids_free(&mask);
    return rc ? -1 : 0;
}

/* 0 = done, 1 = bad record (counted or fatal by the caller). */
static int do_record(job *j, const char *file, long line, json_t *rec)
{
    if (j->chat) return do_chat(j, file, line, rec);
    json_t *text = json_object_get(rec, j->field);
    if (!json_is_string(text)) {
        hat_errat(file, line, "no string field \"%s\"", j->field);
        return 1;
    }
    json_t *ids;
    if (encode(j, file, line, json_string_value(text), json_string_length(text), &ids)) return 1;
    json_t *o = rebuild(j, rec, ids);
    int rc = out_json(j->out, o);
    json_decref(o);
    json_decref(ids);
    return rc ? -1 : 0;
}

static int each(void *ctx, json_t *rec, const char *file, long line)
{
    return do_record(ctx, file, line, rec);
}

static int do_lines(job *j, const char *path)
{
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) return -1;
    const char *name = is_stdio_path(path) ? "<stdin>" : path;
    long line = 0;
    int status = 0;
    for (size_t at = 0; at < len && !status;) {
        char *nl = memchr(buf + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - buf) : len;
        line++;
        json_t *ids;
        if (encode(j, name, line, buf + at, end - at, &ids)) {
            if (!j->skip_bad) status = -1;
            j->bad++;
        } else {
            json_t *o = json_object();
            json_object_set_new(o, j->ids_field, ids);
            if (out_json(j->out, o)) status = -1;
            json_decref(o);
        }
        at = end + 1;
    }
    free(buf);
    return status;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "t:", long_opts };
    cli_common c = { 0 };
    const char *tok_path = NULL, *hpath = NULL;
    job j = { .field = "text", .ids_field = "ids" };
    int lines = 0, opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 't': tok_path = optarg; break;
        case OPT_FIELD: j.field = optarg; break;
        case OPT_IDS_FIELD: j.ids_field = optarg; break;
        case OPT_KEEP: j.keep = 1; break;
        case OPT_LINES: lines = 1; break;
        case OPT_CHAT: j.chat = 1; break;
        case OPT_HARNESS: hpath = optarg; break;
        }
    }
    if (!tok_path) cli_usage_error(&spec, "--tokenizer FILE is required");
    if (j.keep && !strcmp(j.field, j.ids_field))
        cli_usage_error(&spec, "--keep-text needs --field and --ids-field to differ");
    if (lines && j.chat) cli_usage_error(&spec, "--lines and --chat exclude each other");
    json_t *h = NULL;
    if (hpath && !(h = harness_load_checked(hpath))) return EXIT_FAIL;
    j.harness = h;
    char *err;
    tokenizer *tok = tok_load(tok_path, &err);
    if (!tok) { hat_errat(tok_path, 0, "%s", err); free(err); return EXIT_FAIL; }
    j.tok = tok;
    j.skip_bad = c.skip_bad;
    j.out = out_open(c.output);
    if (!j.out) { tok_free(tok); return EXIT_FAIL; }
    int status = 0;
    if (!lines) status = jsonl_foreach(argv + optind, argc - optind, c.skip_bad, each, &j);
    for (int i = optind; lines && !status && (i < argc || i == optind); i++)
        status = do_lines(&j, i < argc ? argv[i] : NULL);
    status = out_finish(j.out, status);
    if (j.bad) hat_warn("skipped %ld bad record%s", j.bad, j.bad == 1 ? "" : "s");
    tok_free(tok);
    json_decref(h);
    return status ? EXIT_FAIL : EXIT_OK;
}
