/* ifeval — score responses with Google's IFEval verifiable instructions.
 * Responses are matched to IFEval prompts (--input input_data.jsonl) by key
 * or prompt text, or carry their own instruction_id_list and kwargs
 * (general-gen records).  Writes one verdict line per scored prompt and
 * the accuracy report (--summary).  The checking is common/ifeval*.c. */
#include "cli.h"
#include "ifeval.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: ifeval [--input input_data.jsonl] [options] [RESPONSES.jsonl...]\n"
    "Score responses against IFEval's verifiable instructions (strict and loose).\n"
    "  -i, --input FILE     IFEval prompts (key, prompt, instruction_id_list, kwargs);\n"
    "                       without it each response record carries its own\n"
    "  -s, --summary FILE   write the accuracy report (JSON) here ('-' = stdout)\n"
    "  -o, --output FILE    verdicts JSONL (default stdout)\n"
    "      --skip-bad       skip bad records and report how many\n"
    "  -h, --help           this help;  --version  the version\n";

static const struct option long_opts[] = {
    { "input",   required_argument, NULL, 'i' },
    { "summary", required_argument, NULL, 's' },
    { 0 },
};

typedef struct {
    json_t *inputs;     /* array of input records */
    json_t *by_key;     /* "key" → index */
    json_t *by_prompt;  /* prompt text → index */
    json_t *responses;  /* per input index: response string or null */
} prompt_set;

static int load_inputs(prompt_set *ps, const char *path)
{
    jsonl_reader *r = jsonl_open(path, 0);
    if (!r) return -1;
    ps->inputs = json_array();
    ps->by_key = json_object();
    ps->by_prompt = json_object();
    json_t *rec;
    int rc, status = 0;
    while ((rc = jsonl_next(r, &rec)) == 1) {
        json_t *key = json_object_get(rec, "key");
        const char *prompt = json_string_value(json_object_get(rec, "prompt"));
        if (!prompt || !json_is_array(json_object_get(rec, "instruction_id_list"))) {
            hat_errat(jsonl_name(r), jsonl_line(r), "an input needs prompt and instruction_id_list");
            json_decref(rec);
            status = -1;
            break;
        }
        size_t idx = json_array_size(ps->inputs);
        if (json_is_integer(key)) {
            char k[32];
            snprintf(k, sizeof k, "%lld", (long long)json_integer_value(key));
            json_object_set_new(ps->by_key, k, json_integer((json_int_t)idx));
        }
        json_object_set_new(ps->by_prompt, prompt, json_integer((json_int_t)idx));
        json_array_append_new(ps->inputs, rec);
    }
    if (rc < 0) status = -1;
    if (jsonl_close(r)) status = -1;
    ps->responses = json_array();
    for (size_t i = 0; i < json_array_size(ps->inputs); i++) json_array_append_new(ps->responses, json_null());
    return status;
}

/* The response text of a record: "response", else the last assistant turn. */
static const char *response_of(json_t *rec)
{
    const char *s = json_string_value(json_object_get(rec, "response"));
    if (s) return s;
    json_t *msgs = json_object_get(rec, "messages");
    for (size_t i = json_array_size(msgs); i-- > 0;) {
        json_t *m = json_array_get(msgs, i);
        if (!strcmp(json_string_value(json_object_get(m, "role")) ?: "", "assistant"))
            return json_string_value(json_object_get(m, "content"));
    }
    return NULL;
}

static json_t *verdict_json(json_t *idv, const char *idname, json_t *ids, const ifeval_verdict *v)
{
    json_t *o = json_object();
    if (idv) json_object_set(o, idname, idv);
    json_object_set(o, "instruction_id_list", ids);
    for (int m = 0; m < 2; m++) {
        const int *f = m ? v->loose : v->strict;
        json_t *list = json_array(), *s = json_object();
        int all = 1;
        for (int i = 0; i < v->n; i++) { json_array_append_new(list, json_boolean(f[i])); all &= f[i] != 0; }
        json_object_set_new(s, "follow_all_instructions", json_boolean(all));
        json_object_set_new(s, "follow_instruction_list", list);
        json_object_set_new(o, m ? "loose" : "strict", s);
    }
    return o;
}

typedef struct {
    prompt_set ps;
    int have_inputs, skip_bad;
    long bad;
    ifeval_report *rep;
    hat_out *out;
} job;

/* Score one self-contained record and write its verdict.  0, 1 bad, -1 fatal. */
static int score_record(job *j, const char *file, long line, json_t *idv, const char *idname,
                        json_t *ids, json_t *kwargs, const char *resp)
{
    ifeval_verdict v;
    char *err = NULL;
    if (ifeval_score(ids, kwargs, resp, &v, &err)) {
        hat_errat(file, line, "%s", err);
        free(err);
        return 1;
    }
    ifeval_report_add(j->rep, ids, &v);
    json_t *o = verdict_json(idv, idname, ids, &v);
    int rc = out_json(j->out, o);
    json_decref(o);
    ifeval_verdict_free(&v);
    return rc ? -1 : 0;
}

static int do_record(job *j, const char *file, long line, json_t *rec)
{
    const char *resp = response_of(rec);
    if (!resp) { hat_errat(file, line, "no \"response\" and no assistant message"); return 1; }
    if (!j->have_inputs) {
        json_t *ids = json_object_get(rec, "instruction_id_list");
        if (!ids) { hat_errat(file, line, "no instruction_id_list (give --input to match IFEval prompts)"); return 1; }
        json_t *idv = json_object_get(rec, "key");
        const char *idname = "key";
        if (!idv) { idv = json_object_get(rec, "id"); idname = "id"; }
        return score_record(j, file, line, idv, idname, ids, json_object_get(rec, "kwargs"), resp);
    }
    json_t *idx = NULL, *key = json_object_get(rec, "key");
    if (json_is_integer(key)) {
        char k[32];
        snprintf(k, sizeof k, "%lld", (long long)json_integer_value(key));
        idx = json_object_get(j->ps.by_key, k);
    }
    const char *prompt = json_string_value(json_object_get(rec, "prompt"));
    if (!idx && prompt) idx = json_object_get(j->ps.by_prompt, prompt);
    if (!idx) { hat_errat(file, line, "no prompt of --input matches this record's key or prompt"); return 1; }
    json_array_set_new(j->ps.responses, (size_t)json_integer_value(idx), json_string(resp));
    return 0;
}

static int read_responses(job *j, const char *path)
{
    jsonl_reader *r = jsonl_open(path, j->skip_bad);
    if (!r) return -1;
    json_t *rec;
    int rc, status = 0;
    while ((rc = jsonl_next(r, &rec)) == 1) {
        int e = json_is_object(rec) ? do_record(j, jsonl_name(r), jsonl_line(r), rec)
                                    : (hat_errat(jsonl_name(r), jsonl_line(r), "not a JSON object"), 1);
        json_decref(rec);
        if (e < 0 || (e > 0 && !j->skip_bad)) { status = -1; break; }
        j->bad += e;
    }
    if (rc < 0) status = -1;
    if (jsonl_close(r)) status = -1;
    return status;
}

/* With --input: score in input order, as evaluation_lib does. */
static int score_inputs(job *j, const char *input_path, long *missing)
{
    for (size_t i = 0; i < json_array_size(j->ps.inputs); i++) {
        const char *resp = json_string_value(json_array_get(j->ps.responses, i));
        if (!resp) { (*missing)++; continue; }
        json_t *in = json_array_get(j->ps.inputs, i);
        int e = score_record(j, input_path, (long)i + 1, json_object_get(in, "key"), "key",
                             json_object_get(in, "instruction_id_list"), json_object_get(in, "kwargs"), resp);
        if (e) return -1;
    }
    return 0;
}

static int write_summary(const char *path, json_t *rep)
{
    hat_out *o = out_open(path);
    if (!o) return -1;
    if (out_json(o, rep)) { out_abort(o); return -1; }
    return out_close(o);
}

static void print_brief(json_t *rep)
{
    json_t *a = json_object_get(rep, "aggregate"), *c = json_object_get(rep, "counts");
    hat_warn("%lld prompts scored: prompt-level strict %.4f loose %.4f; instruction-level strict %.4f loose %.4f",
             (long long)json_integer_value(json_object_get(c, "scored")),
             json_number_value(json_object_get(a, "prompt_level_strict")),
             json_number_value(json_object_get(a, "prompt_level_loose")),
             json_number_value(json_object_get(a, "instruction_level_strict")),
             json_number_value(json_object_get(a, "instruction_level_loose")));
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    cli_spec spec = { usage, "i:s:", long_opts };
    cli_common c = { 0 };
    const char *input = NULL, *summary = NULL;
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        switch (opt) {
        case 'i': input = optarg; break;
        case 's': summary = optarg; break;
        }
    }
    if (summary && is_stdio_path(summary) && is_stdio_path(c.output))
        cli_usage_error(&spec, "--summary - needs -o FILE for the verdicts");
    job j = { .have_inputs = input != NULL, .skip_bad = c.skip_bad };
    char *err = NULL;
    if (ifeval_punkt_load(NULL, &err) || ifeval_lang_load(NULL, &err)) {
        hat_warn("%s", err);
        free(err);
        return EXIT_FAIL;
    }
    if (input && load_inputs(&j.ps, input)) return EXIT_FAIL;
    j.rep = ifeval_report_new();
    j.out = out_open(c.output);
    if (!j.out) return EXIT_FAIL;
    int status = 0;
    for (int i = optind; (i < argc || i == optind) && !status; i++)
        if (read_responses(&j, i < argc ? argv[i] : NULL)) status = 1;
    long missing = 0;
    if (!status && input && score_inputs(&j, input, &missing)) status = 1;
    if (status) out_abort(j.out);
    else if (out_close(j.out)) status = 1;
    if (!status) {
        long inputs = input ? (long)json_array_size(j.ps.inputs) : j.rep ? 0 : 0;
        json_t *rep = ifeval_report_json(j.rep, input ? inputs : -1, input ? missing : 0);
        if (!input) json_object_del(json_object_get(rep, "counts"), "inputs");
        if (summary) { if (write_summary(summary, rep)) status = 1; }
        else print_brief(rep);
        json_decref(rep);
    }
    if (j.bad) hat_warn("skipped %ld bad record%s", j.bad, j.bad == 1 ? "" : "s");
    ifeval_report_free(j.rep);
    json_decref(j.ps.inputs);
    json_decref(j.ps.by_key);
    json_decref(j.ps.by_prompt);
    json_decref(j.ps.responses);
    return status ? EXIT_FAIL : EXIT_OK;
}
