/* judge_annotate.c — the interactive labeller of `judge annotate`: one
 * case at a time (viewer message, calls and tool results, hook notes, the
 * reply, the judge's verdict), labels read through GNU readline with
 * history, each label appended to the labels JSONL with one write and an
 * fsync, and ids already labelled skipped so a session resumes where the
 * last one stopped. */
#include "judge.h"
#include "jsonl.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *sget(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* Long tool results are cut so a case fits a terminal. */
static void put_cut(sbuf *b, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max) { sbuf_puts(b, s); return; }
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80) max--;   /* not inside a UTF-8 character */
    sbuf_add(b, s, max);
    sbuf_puts(b, "...");
}

char *judge_case_text(const json_t *traj, const json_t *verdict)
{
    sbuf b;
    sbuf_init(&b);
    const json_t *msgs = json_object_get(traj, "messages");
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *role = sget(m, "role"), *content = sget(m, "content"), *hook = sget(m, "hook");
        if (!role) continue;
        if (!strcmp(role, "user") && i == 0) sbuf_printf(&b, "viewer:  %s\n", content ? content : "");
        else if (!strcmp(role, "user")) sbuf_printf(&b, "hook:    [%s] %s\n", hook ? hook : "?", content ? content : "");
        else if (!strcmp(role, "tool")) {
            sbuf_printf(&b, "result:  %s%s%s ", sget(m, "name") ? sget(m, "name") : "", hook ? " " : "", hook ? hook : "");
            put_cut(&b, content ? content : "", 240);
            sbuf_putc(&b, '\n');
        } else if (!strcmp(role, "assistant")) {
            const json_t *calls = json_object_get(m, "tool_calls");
            if (sget(m, "reasoning_content")) sbuf_printf(&b, "think:   %s\n", sget(m, "reasoning_content"));
            size_t k;
            json_t *c;
            json_array_foreach(calls, k, c) {
                const json_t *fn = json_object_get(c, "function");
                if (!fn) fn = c;
                char *a = json_compact(json_object_get(fn, "arguments"));
                sbuf_printf(&b, "call:    %s %s\n", sget(fn, "name") ? sget(fn, "name") : "", a ? a : "");
                free(a);
            }
            if (!json_array_size(calls)) sbuf_printf(&b, "reply:   %s\n", content ? content : "");
        }
    }
    if (verdict) {
        const json_t *s = json_object_get(verdict, "scores");
        sbuf_printf(&b, "judge:   accuracy %g  effectiveness %g  tools %g  skills %g  cot %g  total %.3g  %s\n",
                    json_number_value(json_object_get(s, "accuracy")), json_number_value(json_object_get(s, "effectiveness")),
                    json_number_value(json_object_get(s, "tool_rationality")), json_number_value(json_object_get(s, "skill_selection")),
                    json_number_value(json_object_get(s, "cot_penalty")), json_number_value(json_object_get(verdict, "total")),
                    json_is_true(json_object_get(verdict, "pass")) ? "PASS" : "FAIL");
        json_array_foreach(json_object_get(verdict, "reasons"), i, m)
            sbuf_printf(&b, "         - %s (%s): %s\n", sget(m, "code"), sget(m, "component"), sget(m, "detail"));
    }
    return sbuf_detach(&b);
}

/* Ids already in the labels file (a missing file is an empty one). */
static json_t *labelled_ids(const char *path)
{
    json_t *ids = json_object();
    if (access(path, F_OK)) return ids;
    jsonl_reader *r = jsonl_open(path, 1);
    if (!r) return ids;
    json_t *v;
    while (jsonl_next(r, &v) == 1) {
        const char *id = sget(v, "id");
        if (id) json_object_set_new(ids, id, json_true());
        json_decref(v);
    }
    jsonl_close(r);
    return ids;
}

/* One line, written whole with O_APPEND and made durable before the next
 * case is shown: an interrupted session loses at most the case on screen. */
static int append_label(const char *path, const json_t *label)
{
    char *text = json_compact(label);
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, text);
    sbuf_putc(&b, '\n');
    free(text);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644), rc = -1;
    if (fd >= 0) {
        ssize_t w = write(fd, b.s, b.len);
        rc = w == (ssize_t)b.len && fsync(fd) == 0 ? 0 : -1;
        if (close(fd)) rc = -1;
    }
    if (rc) hat_errat(path, 0, "cannot append a label: %s", strerror(errno));
    sbuf_free(&b);
    return rc;
}

/* Read one line; NULL at end of input.  Non-empty comments go to the
 * history (the label answers are one keystroke and would bury them). */
static char *ask(const char *prompt, const judge_annotate_opts *o, int remember)
{
    char *line = readline(prompt);
    if (!line) return NULL;
    char *p = line, *e;
    while (*p == ' ' || *p == '\t') p++;
    e = p + strlen(p);
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
    if (*p && remember) {
        add_history(p);
        if (o->history) append_history(1, o->history);
    }
    char *out = xstrdup(p);
    free(line);
    return out;
}

enum { ANS_OK, ANS_SKIP, ANS_QUIT };

/* A value from the allowed set ("0 1", "0 0.5 1", "1 2 3 4 5"), asking
 * again on anything else. */
static int ask_value(const char *prompt, const char *const *allowed, int nallowed, double *v,
                     const judge_annotate_opts *o, FILE *out)
{
    for (;;) {
        char *a = ask(prompt, o, 0);
        if (!a || !strcmp(a, "q")) { free(a); return ANS_QUIT; }
        if (!strcmp(a, "s")) { free(a); return ANS_SKIP; }
        for (int i = 0; i < nallowed; i++)
            if (!strcmp(a, allowed[i])) { *v = strtod(a, NULL); free(a); return ANS_OK; }
        fprintf(out, "  answer one of:");
        for (int i = 0; i < nallowed; i++) fprintf(out, " %s", allowed[i]);
        fprintf(out, "  (s = skip, q = quit)\n");
        fflush(out);
        free(a);
    }
}

long judge_annotate(const judge_item *items, size_t n, const judge_annotate_opts *o, FILE *in, FILE *out)
{
    static const char *const acc[] = { "0", "1" }, *const eff[] = { "0", "0.5", "1" },
                             *const ovr[] = { "1", "2", "3", "4", "5" };
    json_t *done = labelled_ids(o->labels);
    rl_instream = in;
    rl_outstream = out;
    using_history();
    if (o->history) {
        if (read_history(o->history) && write_history(o->history))
            hat_warn("%s: cannot write the history file", o->history);
    }
    size_t todo = 0;
    for (size_t i = 0; i < n; i++) todo += !json_object_get(done, sget(items[i].traj, "id") ? sget(items[i].traj, "id") : "");
    fprintf(out, "%zu cases, %zu to label (%zu already in %s). Answer s to skip, q to quit.\n",
            n, todo, n - todo, o->labels);
    long labelled = 0;
    size_t shown = 0;
    int quit = 0;
    for (size_t i = 0; i < n && !quit; i++) {
        const char *id = sget(items[i].traj, "id");
        if (!id || json_object_get(done, id)) continue;
        char *text = judge_case_text(items[i].traj, items[i].verdict);
        fprintf(out, "\n== case %zu/%zu  %s  (%s) ==\n%s", ++shown, todo, id,
                sget(items[i].verdict, "intent") ? sget(items[i].verdict, "intent") : "?", text);
        fflush(out);
        free(text);
        json_t *label = json_pack("{s:s}", "id", id);
        double a, e;
        int r;
        if (o->overall) {
            r = ask_value("overall 1-5> ", ovr, 5, &a, o, out);
            if (r == ANS_OK) json_object_set_new(label, "overall", json_integer((json_int_t)a));
        } else {
            r = ask_value("accuracy 0/1> ", acc, 2, &a, o, out);
            if (r == ANS_OK) {
                json_object_set_new(label, "accuracy", json_integer((json_int_t)a));
                r = ask_value("effectiveness 0/0.5/1> ", eff, 3, &e, o, out);
                if (r == ANS_OK) json_object_set_new(label, "effectiveness", e == 0.5 ? json_real(0.5) : json_integer((json_int_t)e));
            }
        }
        if (r == ANS_OK) {
            char *c = ask("comment> ", o, 1);
            if (c && *c) json_object_set_new(label, "comment", json_string(c));
            if (!c) quit = 1;               /* end of input after the label: keep it, then stop */
            free(c);
            if (append_label(o->labels, label)) { json_decref(label); json_decref(done); return -1; }
            json_object_set_new(done, id, json_true());
            labelled++;
        } else if (r == ANS_QUIT) quit = 1;
        json_decref(label);
    }
    fprintf(out, "\n%ld labelled this session; labels in %s\n", labelled, o->labels);
    fflush(out);
    json_decref(done);
    return labelled;
}
