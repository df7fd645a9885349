/* harness-render — a harness plus OpenAI-style conversations → the exact
 * text Qwen3's chat template renders: the system message is the harness's
 * system text, the tools its tool list (man 5 chat). */
#include "chat.h"
#include "cli.h"
#include "harness.h"
#include "harness_compile.h"
#include "jsonl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: harness-render [--harness H] [--raw] [--generation-prompt]\n"
    "                      [--no-thinking] [--skip-bad] [-o FILE] [TRAJ.jsonl...]\n"
    "Render each trajectory ({\"messages\": [...], \"harness\"?: {...}}) under\n"
    "its inline harness or --harness as Qwen3's chat template does.\n"
    "      --harness H          harness for lines without an inline one\n"
    "      --raw                the bare text instead of {\"id\",\"text\"} lines\n"
    "      --generation-prompt  end with the assistant header\n"
    "      --no-thinking        enable_thinking=false (empty think block)\n"
    "      --skip-bad           skip bad lines, report the count\n"
    "  -o FILE                  write to FILE instead of stdout\n"
    "  -h, --help               this text;  --version  the version\n";

enum { OPT_HARNESS = 1, OPT_RAW, OPT_GEN, OPT_NOTHINK };

typedef struct {
    hat_out *out;
    const json_t *harness;     /* --harness, for lines without an inline one */
    chat_opts opts;
    int raw;
} job;

/* One trajectory: 0 written, 1 bad line (reported), -1 write error. */
static int render_one(void *ctx, json_t *line, const char *file, long lineno)
{
    job *j = ctx;
    const json_t *h = json_object_get(line, "harness");
    if (!h) h = j->harness;
    json_t *msgs = json_object_get(line, "messages");
    if (!h) { hat_errat(file, lineno, "no inline harness and no --harness"); return 1; }
    if (!json_is_array(msgs)) { hat_errat(file, lineno, "no \"messages\" array"); return 1; }
    chat_text t;
    char *err = NULL;
    if (harness_render(&t, h, msgs, &j->opts, &err)) {
        hat_errat(file, lineno, "%s", err);
        free(err);
        return 1;
    }
    int rc;
    if (j->raw) rc = out_write(j->out, t.text, t.len);
    else {
        json_t *id = json_object_get(line, "id");
        json_t *r = json_object();
        json_object_set(r, "id", id ? id : json_null());
        json_object_set_new(r, "text", json_stringn(t.text, t.len));
        rc = out_json(j->out, r);
        json_decref(r);
    }
    chat_text_free(&t);
    return rc;
}

int main(int argc, char **argv)
{
    cli_init(argc, argv);
    static const struct option longs[] = {
        { "harness", required_argument, NULL, OPT_HARNESS }, { "raw", no_argument, NULL, OPT_RAW },
        { "generation-prompt", no_argument, NULL, OPT_GEN },
        { "no-thinking", no_argument, NULL, OPT_NOTHINK }, { 0 }
    };
    cli_spec spec = { usage, "", longs };
    cli_common c = { 0 };
    const char *hpath = NULL;
    job j = { .opts = CHAT_OPTS_INIT };
    int opt;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (opt == OPT_HARNESS) hpath = optarg;
        else if (opt == OPT_RAW) j.raw = 1;
        else if (opt == OPT_GEN) j.opts.add_generation_prompt = 1;
        else if (opt == OPT_NOTHINK) j.opts.enable_thinking = CHAT_THINK_OFF;
    }
    json_t *h = NULL;
    if (hpath && !(h = harness_load_checked(hpath))) return EXIT_FAIL;
    j.harness = h;
    if (!(j.out = out_open(c.output))) { json_decref(h); return EXIT_FAIL; }
    int rc = jsonl_foreach(argv + optind, argc - optind, c.skip_bad, render_one, &j);
    rc = out_finish(j.out, rc);
    json_decref(h);
    return rc ? EXIT_FAIL : EXIT_OK;
}
