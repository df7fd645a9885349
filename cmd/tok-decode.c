/* tok-decode — JSONL token ids back to text with a Hugging Face
 * tokenizer.json.  Each record's ids field is replaced by the decoded text;
 * other fields are kept in place.  Decoding is common/tokenizer.c. */
#include "cli.h"
#include "jsonl.h"
#include "tokenizer.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tok-decode --tokenizer FILE [options] [FILE...]\n"
    "Replace the ids field of each JSONL record by the text it decodes to.\n"
    "  -t, --tokenizer FILE   tokenizer.json to use (required)\n"
    "      --field NAME       ids field to read (default ids)\n"
    "      --text-field NAME  field to write the text to (default text)\n"
    "      --keep-ids         keep the ids field as well\n"
    "      --skip-special     leave out added tokens marked special\n"
    "  -o, --output FILE      write here instead of stdout\n"
    "      --skip-bad         skip bad records and report how many\n"
    "  -h, --help             this help;  --version  the version\n";

enum { OPT_FIELD = 1, OPT_TEXT_FIELD, OPT_KEEP, OPT_SKIP_SPECIAL };

static const struct option long_opts[] = {
    { "tokenizer",    required_argument, NULL, 't' },
    { "field",        required_argument, NULL, OPT_FIELD },
    { "text-field",   required_argument, NULL, OPT_TEXT_FIELD },
    { "keep-ids",     no_argument,       NULL, OPT_KEEP },
    { "skip-special", no_argument,       NULL, OPT_SKIP_SPECIAL },
    { 0 },
};

typedef struct {
    const tokenizer *tok;
    const char *field, *text_field;
    int keep, flags;
    hat_out *out;
} job;

/* The ids of a record as ints, checked against the vocabulary.  Returns a
 * malloc'd array (n elements) or NULL after a diagnostic. */
static int *read_ids(const job *j, const char *file, long line, const json_t *a, size_t *n)
{
    if (!json_is_array(a)) { hat_errat(file, line, "no array field \"%s\"", j->field); return NULL; }
    *n = json_array_size(a);
    int *v = xmalloc((*n ? *n : 1) * sizeof *v);
    int vs = tok_vocab_size(j->tok);
    for (size_t i = 0; i < *n; i++) {
        const json_t *e = json_array_get(a, i);
        json_int_t id = json_integer_value(e);
        if (!json_is_integer(e) || id < 0 || id >= vs || !tok_token_str(j->tok, (int)id)) {
            char *s = json_dumps(e, JSON_ENCODE_ANY);
            hat_errat(file, line, "%s[%zu]: %s is not a token id (vocabulary size %d)", j->field, i, s, vs);
            free(s);
            free(v);
            return NULL;
        }
        v[i] = (int)id;
    }
    return v;
}

static json_t *decode_record(const job *j, const char *file, long line, json_t *rec)
{
    size_t n, len;
    int *ids = read_ids(j, file, line, json_object_get(rec, j->field), &n);
    if (!ids) return NULL;
    char *text = tok_decode(j->tok, ids, n, j->flags, &len);
    free(ids);
    json_t *t = json_stringn(text, len), *o = json_object();
    free(text);
    const char *k;
    json_t *v;
    json_object_foreach(rec, k, v) {
        if (!strcmp(k, j->text_field) && strcmp(k, j->field)) continue;
        if (strcmp(k, j->field)) { json_object_set(o, k, v); continue; }
        if (j->keep) json_object_set(o, k, v);
        json_object_set(o, j->text_field, t);
    }
    json_decref(t);
    return o;
}

static int each(void *ctx, json_t *rec, const char *file, long line)
{
    job *j = ctx;
    json_t *o = decode_record(j, file, line, rec);
    if (!o) return 1;
    int rc = out_json(j->out, o);
    json_decref(o);
    return rc;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "t:", long_opts };
    cli_common c = { 0 };
    const char *tok_path = NULL;
    job j = { .field = "ids", .text_field = "text" };
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 't': tok_path = optarg; break;
        case OPT_FIELD: j.field = optarg; break;
        case OPT_TEXT_FIELD: j.text_field = optarg; break;
        case OPT_KEEP: j.keep = 1; break;
        case OPT_SKIP_SPECIAL: j.flags |= TOK_SKIP_SPECIAL; break;
        }
    }
    if (!tok_path) cli_usage_error(&spec, "--tokenizer FILE is required");
    if (j.keep && !strcmp(j.field, j.text_field))
        cli_usage_error(&spec, "--keep-ids needs --field and --text-field to differ");
    char *err;
    tokenizer *tok = tok_load(tok_path, &err);
    if (!tok) { hat_errat(tok_path, 0, "%s", err); free(err); return EXIT_FAIL; }
    j.tok = tok;
    hat_out *out = out_open(c.output);
    if (!out) { tok_free(tok); return EXIT_FAIL; }
    j.out = out;
    int status = jsonl_foreach(argv + optind, argc - optind, c.skip_bad, each, &j);
    status = out_finish(out, status);
    tok_free(tok);
    return status ? EXIT_FAIL : EXIT_OK;
}
