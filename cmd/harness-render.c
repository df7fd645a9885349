/* harness-render — a harness plus OpenAI-style conversations → the exact
 * text Qwen3's chat template renders: the system message is the harness's
 * system text, the tools its tool list (man 5 chat). */
#include "chat.h"
#include "cli.h"
#include "harness.h"
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

/* 0 written, -1 bad line (reported). */
static int render_one(hat_out *o, const json_t *line, const json_t *deflt, const char *file,
                      long lineno, const chat_opts *base, int raw)
{
    const json_t *h = json_object_get(line, "harness");
    if (!h) h = deflt;
    json_t *msgs = json_object_get(line, "messages");
    if (!h) { hat_errat(file, lineno, "no inline harness and no --harness"); return -1; }
    if (!json_is_array(msgs)) { hat_errat(file, lineno, "no \"messages\" array"); return -1; }
    chat_text t;
    char *err = NULL;
    int rc = harness_render(&t, h, msgs, base, &err);
    if (rc) {
        hat_errat(file, lineno, "%s", err);
        free(err);
        return -1;
    }
    if (raw) out_write(o, t.text, t.len);
    else {
        json_t *id = json_object_get(line, "id");
        json_t *r = json_object();
        json_object_set(r, "id", id ? id : json_null());
        json_object_set_new(r, "text", json_stringn(t.text, t.len));
        out_json(o, r);
        json_decref(r);
    }
    chat_text_free(&t);
    return 0;
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
    int raw = 0, opt;
    chat_opts base = CHAT_OPTS_INIT;
    while ((opt = cli_next(argc, argv, &spec, &c)) != -1) {
        if (opt == OPT_HARNESS) hpath = optarg;
        else if (opt == OPT_RAW) raw = 1;
        else if (opt == OPT_GEN) base.add_generation_prompt = 1;
        else if (opt == OPT_NOTHINK) base.enable_thinking = CHAT_THINK_OFF;
    }
    json_t *h = NULL;
    if (hpath && !(h = harness_load(hpath))) return EXIT_FAIL;
    hat_out *o = out_open(c.output);
    if (!o) { json_decref(h); return EXIT_FAIL; }
    int rc = EXIT_OK;
    long skipped = 0;
    for (int i = optind; rc == EXIT_OK && (i < argc || i == optind); i++) {
        jsonl_reader *r = jsonl_open(i < argc ? argv[i] : "-", c.skip_bad);
        if (!r) { rc = EXIT_FAIL; break; }
        json_t *line;
        int got;
        while ((got = jsonl_next(r, &line)) == 1) {
            int bad = render_one(o, line, h, jsonl_name(r), jsonl_line(r), &base, raw);
            json_decref(line);
            if (bad && !c.skip_bad) { rc = EXIT_FAIL; break; }
            skipped += bad != 0;
        }
        if (got < 0) rc = EXIT_FAIL;
        if (jsonl_close(r)) rc = EXIT_FAIL;
    }
    if (skipped) hat_warn("skipped %ld bad trajectories", skipped);
    if (rc == EXIT_OK) { if (out_close(o)) rc = EXIT_FAIL; }
    else out_abort(o);
    json_decref(h);
    return rc;
}
