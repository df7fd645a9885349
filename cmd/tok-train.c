/* tok-train — learn a byte-level BPE tokenizer from JSONL text and write a
 * Hugging Face tokenizer.json (Qwen3-style pipeline and chat special tokens
 * from data/tokenizer/template.json).  With --chat, records are
 * conversations rendered through the Qwen3 chat template (common/chat.h),
 * so the tokenizer learns the text the model will actually see.  The
 * training itself is common/tok_train.c. */
#include "chat.h"
#include "chat_encode.h"
#include "cli.h"
#include "jsonl.h"
#include "tokenizer.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: tok-train --vocab-size N [options] [FILE...]\n"
    "Train a byte-level BPE tokenizer on JSONL text; write tokenizer.json.\n"
    "  -n, --vocab-size N      total ids, added tokens included (required)\n"
    "      --field NAME        text field to read (default text)\n"
    "      --chat              records are conversations: render \"messages\"\n"
    "                          (and \"tools\") with the Qwen3 chat template\n"
    "      --min-frequency N   stop when no pair occurs N times (default 2)\n"
    "      --template FILE     normalizer, pre-tokenizer and added tokens\n"
    "                          (default: hat's data/tokenizer/template.json)\n"
    "  -o, --output FILE       write here instead of stdout\n"
    "      --skip-bad          skip bad records and report how many\n"
    "  -h, --help              this help;  --version  the version\n";

enum { OPT_FIELD = 1, OPT_CHAT, OPT_MINF, OPT_TEMPLATE };

static const struct option long_opts[] = {
    { "vocab-size",    required_argument, NULL, 'n' },
    { "field",         required_argument, NULL, OPT_FIELD },
    { "chat",          no_argument,       NULL, OPT_CHAT },
    { "min-frequency", required_argument, NULL, OPT_MINF },
    { "template",      required_argument, NULL, OPT_TEMPLATE },
    { 0 },
};

typedef struct {
    tok_trainer *tr;
    const char  *field;
    int          chat;
} job;

/* Feed one record.  0, or 1 after a diagnostic. */
static int add_record(job *j, const char *file, long line, const json_t *rec)
{
    if (j->chat) {
        chat_text t;
        char *err;
        if (record_render(&t, rec, NULL, 0, &err)) {
            hat_errat(file, line, "%s", err);
            free(err);
            return 1;
        }
        tok_trainer_add(j->tr, t.text, t.len);   /* JSON strings are valid UTF-8 */
        chat_text_free(&t);
        return 0;
    }
    const json_t *s = json_object_get(rec, j->field);
    if (!json_is_string(s)) { hat_errat(file, line, "no string field \"%s\"", j->field); return 1; }
    tok_trainer_add(j->tr, json_string_value(s), json_string_length(s));
    return 0;
}

static int read_input(job *j, const char *path, int skip_bad, long *nrec, long *bad)
{
    jsonl_reader *r = jsonl_open(path, skip_bad);
    if (!r) return -1;
    json_t *rec;
    int rc, status = 0;
    while ((rc = jsonl_next(r, &rec)) == 1) {
        int e = add_record(j, jsonl_name(r), jsonl_line(r), rec);
        json_decref(rec);
        if (e && !skip_bad) { status = -1; break; }
        *bad += e;
        ++*nrec;   /* progress on a terminal: the reader's (progress.h) */
    }
    if (rc < 0) status = -1;
    if (jsonl_close(r)) status = -1;
    return status;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "n:", long_opts };
    cli_common c = { 0 };
    job j = { .field = "text" };
    tok_train_opts o = { .min_frequency = 2 };
    const char *tmpl_path = NULL;
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 'n': o.vocab_size = (int)cli_long(&spec, "--vocab-size", optarg, 1, 1 << 24); break;
        case OPT_FIELD: j.field = optarg; break;
        case OPT_CHAT: j.chat = 1; break;
        case OPT_MINF: o.min_frequency = cli_long(&spec, "--min-frequency", optarg, 1, 1L << 40); break;
        case OPT_TEMPLATE: tmpl_path = optarg; break;
        }
    }
    if (!o.vocab_size) cli_usage_error(&spec, "--vocab-size N is required");
    char *found = NULL;
    if (!tmpl_path) {
        tmpl_path = found = hat_data_path("tokenizer/template.json");
        if (!tmpl_path) hat_die("cannot find tokenizer/template.json in hat's data directory (set HAT_DATA)");
    }
    json_t *tmpl = json_load_path(tmpl_path);
    if (!tmpl) return EXIT_FAIL;
    char *err;
    j.tr = tok_trainer_new(tmpl, &err);
    json_decref(tmpl);
    if (!j.tr) { hat_errat(tmpl_path, 0, "%s", err); free(err); free(found); return EXIT_FAIL; }
    o.progress = isatty(2);
    long nrec = 0, bad = 0;
    int status = 0;
    for (int i = optind; (i < argc || i == optind) && !status; i++)
        if (read_input(&j, i < argc ? argv[i] : NULL, c.skip_bad, &nrec, &bad)) status = 1;
    if (bad) hat_warn("skipped %ld bad record%s", bad, bad == 1 ? "" : "s");
    json_t *out = NULL;
    if (!status) {
        out = tok_trainer_finish(j.tr, &o, &err);
        if (!out) { hat_warn("%s", err); free(err); status = 1; }
    }
    if (out) {
        hat_out *f = out_open(c.output);
        if (!f || out_json(f, out)) { if (f) out_abort(f); status = 1; }
        else if (out_close(f)) status = 1;
        json_decref(out);
    }
    tok_trainer_free(j.tr);
    free(found);
    return status ? EXIT_FAIL : EXIT_OK;
}
