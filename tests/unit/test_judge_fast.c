/* test_judge_fast.c — the judge's fast paths give what the slow paths
 * give.  json_loadb_fast (yajl building jansson values) returns exactly
 * json_loadb's value, or NULL and leaves the input to json_loadb: on the
 * inputs where the two parsers part ways (white space, surrogates, NUL,
 * number range, UTF-8 strictness), on random JSON and on thousands of
 * random mutations of it; and it is really taken for ordinary lines.
 * Scoring an indexed task's view (judge_score_view, the verdict line from
 * the view) gives judge_score's verdict and line for the task itself, on
 * teacher trajectories, spoiled ones and tasks of odd shapes; the task
 * index finds what it was given; and a task line read straight into its
 * view (task_view_parse) gives the view jansson's value gives, or none, on
 * edited and mutated lines. */
#include "test.h"
#include "harness.h"
#include "jsonl.h"
#include "judge.h"
#include "rng.h"
#include "tasks.h"
#include "teacher.h"
#include "util.h"
#include "world.h"

static long fast_taken, slow_only;

/* text parsed both ways with flags: a fast value must be json_loadb's
 * value, key order and number types included, and with
 * JSON_DISABLE_EOF_CHECK end where json_loadb says the value ended. */
static void agree(const char *text, size_t n, size_t flags)
{
    size_t end = 0;
    json_error_t e;
    json_t *f = json_loadb_fast(text, n, flags, &end);
    json_t *j = json_loadb(text, n, flags, &e);
    if (f) {
        fast_taken++;
        CHECK(j != NULL);
        if (j) {
            char *sf = json_dumps(f, JSON_ENCODE_ANY | HAT_JSON_FLAGS | JSON_REAL_PRECISION(17));
            char *sj = json_dumps(j, JSON_ENCODE_ANY | HAT_JSON_FLAGS | JSON_REAL_PRECISION(17));
            CHECK(json_equal(f, j));
            CHECK_STR(sf, sj);
            if (flags & JSON_DISABLE_EOF_CHECK) CHECK_EQ_INT((long long)end, e.position);
            if (t_failed_here) fprintf(stderr, "  input (%zu bytes, flags %zx): %.*s\n", n, flags, (int)n, text);
            free(sf);
            free(sj);
        } else {
            fprintf(stderr, "  fast took what jansson refuses (%s), flags %zx:", e.text, flags);
            for (size_t i = 0; i < n; i++) fprintf(stderr, " %02x", (unsigned char)text[i]);
            fputc('\n', stderr);
        }
    } else {
        slow_only++;
    }
    json_decref(f);
    json_decref(j);
}

static const size_t flag_sets[] = { 0, JSON_ALLOW_NUL | JSON_DECODE_ANY, JSON_DISABLE_EOF_CHECK,
                                    JSON_DISABLE_EOF_CHECK | JSON_ALLOW_NUL };

static void agree_all(const char *text, size_t n)
{
    for (size_t i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) agree(text, n, flag_sets[i]);
}

/* Where yajl and jansson part ways, and their neighbours. */
static void fast_load_edge_cases(void)
{
    static const char *const cases[] = {
        "{\"a\":1}\f", "\f{\"a\":1}", "{\"a\":\v1}", "{\"a\":\"x\ty\"}", "\xef\xbb\xbf{}",
        "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":1e5}", "{\"a\":.5}", "{}  ", "{} x", "{}{}",
        "{\"a\":[1,]}", "{\"a\":tru}", "{\"a\":\"\\x\"}", "{\"a\":\"\x7f\"}", "{/*c*/}",
        "{\"a\":\"\xc0\xaf\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xf4\x90\x80\x80\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}", "{\"a\":\"\\ud800\\u0041\"}",
        "{\"a\":\"\\ud83d\\ude00\"}", "{\"a\":\"\\u00e9\\u4e2d\"}", "{\"a\":\"\\u0000\"}",
        "{\"a\\u0000b\":1}", "{\"a\":1}\r\n", "{\"a\":-0}", "{\"a\":-0.0}", "{\"a\":1E+2}", "[1 2]",
        "{\"a\" 1}", "{,}", "{\"a\":1,}", "{\"\xff\":1}", "{\"a\":\"\xff\"}", "{\"a\":\"\xc3\"}",
        "{\"a\":nul}", "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":+1}", "{\"a\":0x10}", "{'a':1}",
        "{\"a\":\"\\/\"}", "{\"a\":\"\\U0041\"}", "{\"a\":9223372036854775807}",
        "{\"a\":9223372036854775808}", "{\"a\":-9223372036854775808}", "{\"a\":-9223372036854775809}",
        "{\"a\":1e308}", "{\"a\":1e309}", "{\"a\":-1e309}", "{\"a\":1e-400}", "{\"a\":4.9e-324}",
        "{\"a\":0.1000000000000000055511151231257827}", "{\"a\":1,\"a\":2,\"b\":3}",
        "{\"a\":{\"x\":1},\"a\":[2]}", "{\"\":\"\"}", "[]", "{}", "1", "\"s\"", "null", "", " ",
        "[{\"a\":[{\"b\":[]}]}]", "{\"a\":true,\"b\":false,\"c\":null}", "{\"a\":1} {\"b\":2}",
        "{\"a\":1}]", "{\"a\":\"\\\\ud800\"}", "{\"a\":\"\\\"\\\\\\b\\f\\n\\r\\t\"}",
        "{\"k\":\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"}",
        "{\"a\":1}\n\n", "\n\t {\"a\":1}", "{\"a\":[1,2,3],\"b\":{\"c\":[true,{\"d\":\"e\"}]}}",
        "{\"a\":00}", "{\"a\":1e}", "{\"a\":1e+}", "{\"a\":-01}", "{\"a\":2.5E-3}", "{\"a\":\"\\u12\"}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) agree_all(cases[i], strlen(cases[i]));
    /* NUL bytes in the buffer itself, inside and outside a string */
    agree_all("{\"a\":\"x\0y\"}", 11);
    agree_all("{\"a\":1}\0", 8);
    agree_all("{\"a\":1\0}", 8);
    /* nesting around the fast path's own limit and jansson's */
    for (int depth = 1000; depth <= 2100; depth += 550) {
        sbuf b;
        sbuf_init(&b);
        for (int i = 0; i < depth; i++) sbuf_putc(&b, '[');
        for (int i = 0; i < depth; i++) sbuf_putc(&b, ']');
        agree_all(b.s, b.len);
        sbuf_free(&b);
    }
}

/* ---- random JSON and its mutations ------------------------------------------ */

static const char *const atoms[] = {
    "0", "-0", "7", "-12", "3.25", "-0.5", "1e3", "2E-2", "1.5e+10", "123456789012345678",
    "9223372036854775807", "99999999999999999999", "1e400", "true", "false", "null",
    "\"\"", "\"plain\"", "\"caf\xc3\xa9\"", "\"\xe6\x98\x9f\xe6\x98\x9f\"", "\"\\u00e9\"",
    "\"\\ud83d\\ude00\"", "\"q\\\"uote\\\\\"", "\"tab\\tnl\\n\"", "\"\\u0000\"", "\"\\ud800\"",
    "\"{\\\"ok\\\":true}\"", "\"@nick 199 LIVE20\"",
};
static const char *const keys[] = { "role", "content", "id", "a", "", "k\\u00e9", "harness", "x y", "\\u0041" };
static const char *const spaces[] = { "", "", "", " ", "\n", "\t", "\r\n", "  " };

static void gen(rng_t *r, sbuf *b, int depth)
{
    int kind = depth > 4 ? 2 : (int)rng_below(r, 3);
    if (kind == 2) { sbuf_puts(b, atoms[rng_below(r, sizeof atoms / sizeof atoms[0])]); return; }
    int n = (int)rng_below(r, 5);
    sbuf_putc(b, kind ? '[' : '{');
    for (int i = 0; i < n; i++) {
        if (i) sbuf_putc(b, ',');
        sbuf_puts(b, spaces[rng_below(r, sizeof spaces / sizeof spaces[0])]);
        if (!kind) {
            sbuf_putc(b, '"');
            sbuf_puts(b, keys[rng_below(r, sizeof keys / sizeof keys[0])]);
            sbuf_puts(b, "\":");
        }
        gen(r, b, depth + 1);
    }
    sbuf_putc(b, kind ? ']' : '}');
}

static const char mut_bytes[] = "{}[],:\"\\ \f\v\t\n0123456789.eE+-ntfu\x00\x80\xc3\xa9\xed\xff";

static void mutate(rng_t *r, sbuf *b)
{
    int n = 1 + (int)rng_below(r, 3);
    for (int k = 0; k < n && b->len; k++) {
        size_t at = rng_below(r, b->len);
        char c = mut_bytes[rng_below(r, sizeof mut_bytes - 1)];
        switch (rng_below(r, 3)) {
        case 0: b->s[at] = c; break;                                   /* replace */
        case 1: memmove(b->s + at, b->s + at + 1, b->len - at - 1); b->len--; break;   /* delete */
        default:                                                       /* insert */
            sbuf_putc(b, 0);
            memmove(b->s + at + 1, b->s + at, b->len - at - 1);
            b->s[at] = c;
        }
    }
}

static void fast_load_random_and_mutated(void)
{
    rng_t r;
    rng_seed(&r, 20251130);
    long before = fast_taken;
    for (int i = 0; i < 4000; i++) {
        sbuf b;
        sbuf_init(&b);
        sbuf_putc(&b, '{');
        sbuf_puts(&b, "\"id\":");
        gen(&r, &b, 0);
        sbuf_puts(&b, ",\"messages\":");
        gen(&r, &b, 1);
        sbuf_putc(&b, '}');
        if (rng_chance(&r, 0.3)) sbuf_puts(&b, spaces[rng_below(&r, sizeof spaces / sizeof spaces[0])]);
        agree_all(b.s, b.len);
        for (int m = 0; m < 4; m++) {
            mutate(&r, &b);
            agree_all(b.s, b.len);
        }
        sbuf_free(&b);
    }
    /* the fast path must really be the usual one, not a path never taken */
    CHECK(fast_taken - before > 4000);
}

/* An ordinary trajectory line goes the fast way. */
static void fast_load_takes_ordinary_lines(void)
{
    const char *line = "{\"id\":\"t-1\",\"task_id\":\"t\",\"messages\":[{\"role\":\"user\",\"content\":"
                       "\"\xe6\x98\x9f: which size for 173 cm\"},{\"role\":\"assistant\",\"content\":\"\","
                       "\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"recommend_size\","
                       "\"arguments\":{\"height_cm\":173,\"weight_kg\":69.5}}}]},{\"role\":\"tool\",\"name\":"
                       "\"recommend_size\",\"content\":\"{\\\"ok\\\":true,\\\"data\\\":{\\\"size\\\":\\\"L\\\"}}\"}],"
                       "\"meta\":{\"hsa\":[],\"seed\":1}}";
    size_t end = 0;
    json_t *v = json_loadb_fast(line, strlen(line), 0, &end);
    CHECK(v != NULL);
    json_decref(v);
    v = json_loadb_fast(line, strlen(line), JSON_DISABLE_EOF_CHECK, &end);
    CHECK(v != NULL);
    CHECK_EQ_INT((long long)end, (long long)strlen(line));
    json_decref(v);
    agree_all(line, strlen(line));
    /* flags the fast path does not know always go to jansson */
    CHECK(json_loadb_fast(line, strlen(line), JSON_REJECT_DUPLICATES, NULL) == NULL);
    CHECK(json_loadb_fast(line, strlen(line), JSON_DECODE_INT_AS_REAL, NULL) == NULL);
    /* json_loadb_quick: the value, or jansson's own error */
    json_error_t e;
    v = json_loadb_quick("{\"a\":\f1}", 8, 0, &e);
    CHECK(v == NULL);
    CHECK_EQ_INT(e.position, 6);
    v = json_loadb_quick(line, strlen(line), 0, &e);
    CHECK(json_is_object(v));
    json_decref(v);
}

/* jsonl_text gives the bytes of the line jsonl_next parsed last (the
 * judge keeps task lines, not their parses), and the reader's values are
 * json_loadb's. */
static void reader_keeps_line_text(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/lines.jsonl", test_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"id\":\"a\",\"n\":1}\r\n\n   \n{\"id\":\"b\",\"s\":\"caf\xc3\xa9\",\"x\":[1.5,true,null]}\n{\"id\":\"c\"}", f);
    fclose(f);
    static const char *const want[] = { "{\"id\":\"a\",\"n\":1}", "{\"id\":\"b\",\"s\":\"caf\xc3\xa9\",\"x\":[1.5,true,null]}",
                                        "{\"id\":\"c\"}" };
    jsonl_reader *r = jsonl_open(path, 0);
    CHECK(r != NULL);
    if (!r) return;
    json_t *v;
    int k = 0;
    while (jsonl_next(r, &v) == 1) {
        size_t n;
        const char *t = jsonl_text(r, &n);
        if (k < 3) {
            CHECK_EQ_INT((long long)n, (long long)strlen(want[k]));
            CHECK(n == strlen(want[k]) && !memcmp(t, want[k], n));
            json_t *j = json_loadb(want[k], strlen(want[k]), 0, NULL);
            CHECK(json_equal(v, j));
            json_decref(j);
        }
        k++;
        json_decref(v);
    }
    CHECK_EQ_INT(k, 3);
    jsonl_close(r);
}

/* ---- task views ------------------------------------------------------------ */

/* Tasks of odd shapes that still pass task_check: every field the view
 * reads in a form the generator never writes. */
static void oddify(json_t *t, int k)
{
    json_t *gold = json_object_get(t, "gold"), *calls = json_object_get(gold, "calls");
    json_t *args = json_object_get(json_array_get(calls, 0), "arguments");
    switch (k) {
    case 1: json_object_set_new(gold, "skill", json_pack("[i,O,s,n]", 3, json_object_get(gold, "skill"), "specs")); break;
    case 2: json_object_set_new(json_object_get(gold, "facts"), "odd", json_pack("{s:b}", "x", 1));
            json_object_set_new(json_object_get(gold, "facts"), "price2", json_real(19.5));
            json_object_set_new(json_object_get(gold, "facts"), "flag", json_true()); break;
    case 3: json_array_append_new(json_object_get(gold, "must"), json_integer(1));
            json_array_append_new(json_object_get(gold, "must"), json_string("decline"));
            json_array_insert_new(json_object_get(gold, "must_not"), 0, json_null());
            json_array_append_new(json_object_get(gold, "must_not"), json_string("deal")); break;
    case 4: if (args) {
                json_object_set_new(args, "height_cm", json_real(170));
                json_object_set_new(args, "extra", json_pack("{s:[i,s]}", "a", 1, "b"));
            }
            json_array_append_new(calls, json_pack("{s:s,s:{}}", "function", "promo.list", "arguments"));
            break;
    case 5: json_object_set_new(t, "id", json_stringn("odd\"id\\\n\0tail", 13)); break;
    case 6: json_object_del(json_object_get(t, "context"), "product");
            json_object_set_new(json_object_get(t, "viewer"), "text", json_stringn("hi 42 LIVE20\0 99", 17)); break;
    case 7: json_object_set_new(json_object_get(t, "context"), "product", json_integer(7));
            json_object_set_new(gold, "skill", json_array()); break;
    case 8: if (args) json_object_set_new(args, "order_id", json_pack("[i]", 1));
            if (json_array_size(calls)) json_object_set_new(t, "faults", json_pack("[{s:i,s:s,s:i},{s:i,s:s,s:i}]", "call", 0, "type", "timeout",
                                                       "times", 1, "call", 0, "type", "timeout", "times", 5)); break;
    }
}

/* Strings equal as C strings, both NULL included. */
static int same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* The view reads what the jansson reads it replaced read (tasks.h),
 * field by field, written here the old way. */
static int view_matches(const json_t *t, const task_view *v)
{
    int ok = 1;
    size_t i, k;
    json_t *x;
    const char *key;
    const json_t *gold = json_object_get(t, "gold"), *viewer = json_object_get(t, "viewer");
    ok &= same_str(v->id, json_string_value(json_object_get(t, "id")));
    ok &= same_str(v->nick, json_string_value(json_object_get(viewer, "nick")));
    ok &= same_str(v->text, json_string_value(json_object_get(viewer, "text")));
    ok &= same_str(v->product, json_string_value(json_object_get(json_object_get(t, "context"), "product")));
    json_t *sk = task_gold_skills(t);
    k = 0;
    json_array_foreach(sk, i, x) if (json_is_string(x)) ok &= k < v->nskills && same_str(v->skills[k++], json_string_value(x));
    ok &= k == v->nskills;
    json_decref(sk);
    const char *lists[] = { "must", "must_not" };
    for (int l = 0; l < 2; l++) {
        const char *const *vs = l ? v->must_not : v->must;
        size_t vn = l ? v->nmust_not : v->nmust;
        k = 0;
        json_array_foreach(json_object_get(gold, lists[l]), i, x)
            if (json_is_string(x)) ok &= k < vn && same_str(vs[k++], json_string_value(x));
        ok &= k == vn;
    }
    k = 0;
    json_object_foreach(json_object_get(gold, "facts"), key, x) {
        if (!json_is_string(x) && !json_is_number(x)) continue;
        ok &= k < v->nfacts && same_str(v->facts[k].key, key) && same_str(v->facts[k].str, json_string_value(x))
              && (json_is_string(x) || v->facts[k].num == json_number_value(x));
        k++;
    }
    ok &= k == v->nfacts;
    const json_t *calls = json_object_get(gold, "calls");
    ok &= json_array_size(calls) == v->ncalls;
    json_array_foreach(calls, i, x) {
        if (i >= v->ncalls) break;
        const task_view_call *c = &v->calls[i];
        const json_t *args = json_object_get(x, "arguments");
        ok &= same_str(c->function, json_string_value(json_object_get(x, "function")));
        ok &= c->nargs == json_object_size(args);
        k = 0;
        json_t *a;
        json_object_foreach((json_t *)args, key, a) {
            if (k >= c->nargs) break;
            const task_view_arg *g = &c->args[k++];
            ok &= same_str(g->key, key) && same_str(g->str, json_string_value(a));
            ok &= json_is_string(a) ? g->v == NULL : json_equal(g->v, a);
        }
    }
    const json_t *faults = json_object_get(t, "faults");
    ok &= json_array_size(faults) == v->nfaults;
    json_array_foreach(faults, i, x) {
        if (i >= v->nfaults) break;
        ok &= v->faults[i].call == json_integer_value(json_object_get(x, "call"));
        ok &= v->faults[i].times == json_integer_value(json_object_get(x, "times"));
        ok &= same_str(v->faults[i].type, json_string_value(json_object_get(x, "type")));
    }
    return ok;
}

/* task_view_parse on line against the way it stands for (jansson's
 * value, task_check, task_view_make with COPY): a view it gives must be
 * that one, field by field and in its JSON texts; where it gives none the
 * line goes that way, which stays the answer.  *fast: it gave one. */
static long view_parsed, view_declined;

static int line_view_agrees(const char *line, size_t n, int *fast)
{
    task_arena *a = task_arena_new();
    const task_view *f = task_view_parse(a, line, n, 1);
    json_t *t = json_loadb(line, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    char *err = t ? task_check(t) : xstrdup("not JSON");
    int ok = 1;
    if (f) {
        const task_view *s = err ? NULL : task_view_make(a, t, TASK_VIEW_COPY, line, n);
        ok = s && view_matches(t, f) && f->id_len == s->id_len && same_str(f->id_json, s->id_json)
             && same_str(f->intent_json, s->intent_json) && same_str(f->fault_types_json, s->fault_types_json)
             && f->line_len == n && !memcmp(f->line, line, n);
        if (!ok) fprintf(stderr, "  view of %.*s: %s\n", (int)(n < 300 ? n : 300), line, err ? err : "differs");
    }
    *fast = f != NULL;
    if (f) view_parsed++;
    else view_declined++;
    free(err);
    json_decref(t);
    task_arena_free(a);
    return ok;
}

/* The messages spoiled in way k: as they are, another reply, no calls. */
static json_t *spoil(const json_t *msgs, int k, const char *nick)
{
    json_t *m = json_deep_copy(msgs);
    size_t n = json_array_size(m);
    char reply[160];
    if (k == 1 && n) {
        snprintf(reply, sizeof reply, "@%s it's 999 yuan with code ZZ12, guaranteed best, size XL, in stock, cure", nick);
        json_object_set_new(json_array_get(m, n - 1), "content", json_string(reply));
    } else if (k == 2 && n > 2) {
        json_t *last = json_incref(json_array_get(m, n - 1));
        while (json_array_size(m) > 1) json_array_remove(m, 1);
        json_array_append_new(m, last);
    }
    return m;
}

/* judge_score on task and judge_score_view on its indexed view agree. */
static int same_verdict(judge *j, const json_t *h, const json_t *task, const task_view *tv, const json_t *msgs)
{
    judge_verdict a, b;
    json_t *traj = json_pack("{s:s,s:{s:[s]}}", "id", "x", "meta", "hsa", "tone");
    int ra = judge_score(j, task, h, msgs, &a), rb = judge_score_view(j, tv, h, msgs, &b);
    int same = ra == rb && json_equal(a.reasons, b.reasons) && a.total == b.total && a.pass == b.pass
               && a.mismatch == b.mismatch && a.cot_tokens == b.cot_tokens;
    for (int i = 0; i < JUDGE_NCOMP; i++) same &= a.score[i] == b.score[i];
    sbuf la, lb;
    sbuf_init(&la);
    sbuf_init(&lb);
    if (!ra) judge_verdict_line(&la, &a, traj, task);
    if (!rb) judge_verdict_line_view(&lb, &b, traj, tv);
    same &= la.len == lb.len && !memcmp(la.s, lb.s, la.len);
    if (!same) fprintf(stderr, "  json: %.*s  view: %.*s", (int)la.len, la.s, (int)lb.len, lb.s);
    sbuf_free(&la);
    sbuf_free(&lb);
    judge_verdict_clear(&a);
    judge_verdict_clear(&b);
    json_decref(traj);
    return same;
}

static void view_scores_as_task(void)
{
    json_t *h = harness_load(test_example_harness());
    world *w = world_from_json(world_generate(11, 120), "gen");
    char *err = NULL;
    judge *j = w ? judge_new(w, NULL, &err) : NULL;
    taskgen *g = w ? taskgen_new(w, "train") : NULL;
    teacher *te = teacher_new();
    CHECK(h && w && j && g && te);
    if (!h || !w || !j || !g || !te) return;
    sim *s = sim_new(w);
    sim_set_harness(s, h, NULL);
    teacher_opts o = { 0.3, 0.3 };
    task_index *ix = task_index_new();
    int compared = 0, differ = 0, failing = 0;
    for (int i = 0; i < 600; i++) {
        json_t *task = taskgen_make(g, 5, i, NULL, 0.4);
        rng_t r;
        rng_derive(&r, 6, (uint64_t)i);
        json_t *msgs = teacher_run(te, s, task, &r, &o, NULL, &err);
        if (!msgs) { free(err); err = NULL; json_decref(task); continue; }
        oddify(task, i % 9);
        char *bad = task_check(task);
        CHECK(bad == NULL);
        if (bad) fprintf(stderr, "  odd %d: %s\n", i % 9, bad);
        free(bad);
        /* the line task-gen would write, read straight into a view: every
         * ordinary one is (odd ones may be left to jansson) */
        char *line = json_dumps(task, HAT_JSON_FLAGS);
        int fast = 0;
        CHECK(line_view_agrees(line, strlen(line), &fast));
        if (i % 9 == 0) CHECK(fast);
        free(line);
        /* the view is made from a copy that is freed at once */
        json_t *copy = json_deep_copy(task);
        const task_view *tv = task_index_add(ix, copy, NULL, 0);
        json_decref(copy);
        CHECK(view_matches(task, tv));
        task_arena *ar = task_arena_new();
        CHECK(view_matches(task, task_view_make(ar, task, TASK_VIEW_BORROW, NULL, 0)));
        task_arena_free(ar);
        const char *nick = json_string_value(json_object_get(json_object_get(task, "viewer"), "nick"));
        for (int k = 0; k < 3; k++) {
            json_t *m = spoil(msgs, k, nick);
            judge_verdict v;
            if (!judge_score(j, task, h, m, &v) && !v.pass) failing++;
            judge_verdict_clear(&v);
            compared++;
            if (!same_verdict(j, h, task, tv, m)) {
                differ++;
                fprintf(stderr, "  task %d (odd %d, spoiled %d) differs\n", i, i % 9, k);
            }
            json_decref(m);
        }
        json_decref(msgs);
        json_decref(task);
    }
    CHECK_EQ_INT(differ, 0);
    CHECK(compared > 1500);
    CHECK(failing > 300);          /* the spoiled ones do fail, with reasons to compare */
    task_index_free(ix);
    teacher_free(te);
    sim_free(s);
    taskgen_free(g);
    judge_free(j);
    world_free(w);
    json_decref(h);
}

/* Views of tasks no check would pass read what jansson reads too. */
static void view_of_any_shape(void)
{
    static const char *const odd[] = {
        "{}", "[]", "{\"id\":5,\"viewer\":\"x\",\"gold\":[],\"faults\":{}}",
        "{\"gold\":{\"skill\":7,\"calls\":{\"a\":1},\"facts\":[1,2],\"must\":\"x\",\"must_not\":[1,[\"a\"]]}}",
        "{\"gold\":{\"calls\":[1,null,{\"function\":1,\"arguments\":[1]},{\"arguments\":{\"a\":null,\"b\":\"c\"}}]},"
        "\"faults\":[1,{\"call\":\"0\",\"type\":2,\"times\":1.5},{\"call\":3,\"type\":\"empty\"}]}",
        "{\"gold\":{\"skill\":[\"a\\u0000b\",null,\"c\"],\"facts\":{\"a\":null,\"b\":1e300,\"c\":\"\",\"d\":-0}}}",
        "{\"viewer\":{\"nick\":null,\"text\":[]},\"context\":{\"product\":\"\\u0000\"}}",
    };
    task_arena *ar = task_arena_new();
    for (int copy = 0; copy < 2; copy++)
        for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
            json_t *t = json_loads(odd[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            CHECK(t != NULL);
            CHECK(view_matches(t, task_view_make(ar, t, copy ? TASK_VIEW_COPY : TASK_VIEW_BORROW, NULL, 0)));
            if (t_failed_here) fprintf(stderr, "  case %zu (copy %d): %s\n", i, copy, odd[i]);
            json_decref(t);
        }
    task_arena_reset(ar);
    json_t *t = json_loads(odd[4], 0, NULL);
    const task_view *v = task_view_make(ar, t, TASK_VIEW_COPY, NULL, 0);
    json_decref(t);                    /* a copy holds what it needs */
    CHECK(v->ncalls == 4 && v->calls[3].nargs == 2 && json_is_null(v->calls[3].args[0].v));
    CHECK_STR(v->calls[3].args[1].str, "c");
    CHECK_STR(v->id_json, "null");
    CHECK_STR(v->fault_types_json, "[\"empty\"]");
    task_arena_free(ar);
}

/* The index: by id, the later of two tasks with one id, NULL for others,
 * and the texts a view keeps. */
static void task_index_finds(void)
{
    task_index *ix = task_index_new();
    char id[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(id, sizeof id, "t-%d", i);
        json_t *t = json_pack("{s:s,s:s,s:[{s:i,s:s,s:i}]}", "id", id, "intent", i % 2 ? "price" : "stock",
                              "faults", "call", 0, "type", "timeout", "times", 1);
        task_index_add(ix, t, i == 7 ? "line seven" : NULL, i == 7 ? 10 : 0);
        json_decref(t);
    }
    json_t *t = json_pack("{s:s,s:s}", "id", "t-3", "intent", "coupon");
    task_index_add(ix, t, NULL, 0);
    json_decref(t);
    CHECK_EQ_INT((long long)task_index_size(ix), 5000);
    int found = 0;
    for (int i = 0; i < 5000; i++) {
        snprintf(id, sizeof id, "t-%d", i);
        const task_view *v = task_index_get(ix, id);
        found += v && !strcmp(v->id, id);
    }
    CHECK_EQ_INT(found, 5000);
    CHECK_STR(task_index_get(ix, "t-3")->intent_json, "\"coupon\"");
    CHECK_STR(task_index_get(ix, "t-3")->fault_types_json, "[]");
    CHECK_STR(task_index_get(ix, "t-4")->fault_types_json, "[\"timeout\"]");
    CHECK_STR(task_index_get(ix, "t-7")->id_json, "\"t-7\"");
    CHECK(task_index_get(ix, "t-7")->line_len == 10 && !memcmp(task_index_get(ix, "t-7")->line, "line seven", 10));
    CHECK(task_index_get(ix, "t-8")->line == NULL);
    CHECK(task_index_get(ix, "t-5000") == NULL);
    CHECK(task_index_get(ix, NULL) == NULL);
    task_index_free(ix);
}

/* A non-ASCII byte at any place of a key or string of any length up to
 * 20 bytes is seen (fast_ascii reads the tail of each in two loads that
 * may overlap): bad UTF-8 there is refused as jansson refuses it, good
 * UTF-8 kept as jansson keeps it. */
static void fast_load_every_non_ascii_place(void)
{
    static const char *const odd[] = { "\xff", "\xc3\xa9", "\xe6\x98\x9f", "\x80" };
    for (size_t len = 1; len <= 20; len++)
        for (size_t at = 0; at < len; at++)
            for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
                char s[64], text[160];
                size_t m = strlen(odd[k]), n = 0;
                for (size_t i = 0; i < len; i++) {
                    if (i == at) { memcpy(s + n, odd[k], m); n += m; }
                    else s[n++] = (char)('a' + i % 26);
                }
                s[n] = 0;
                int tn = snprintf(text, sizeof text, "{\"%s\":\"%s\",\"k\":[\"%s\"]}", s, s, s);
                agree_all(text, (size_t)tn);
            }
}

/* Task lines edited where task_view_parse must step aside or read as
 * jansson does: repeated keys at each level it reads, each field in
 * another type, strings with NUL, escapes, good and bad UTF-8 in keys and
 * values, numbers out of range where nothing is read, deep nesting where
 * nothing is read, trailing bytes, other top-level values.  Then random
 * byte mutations of generated tasks. */
static void task_line_edits(void)
{
    static const char base[] =
        "{\"id\":\"t-1\",\"viewer\":{\"nick\":\"mei\",\"text\":\"size for 173 cm?\"},"
        "\"context\":{\"split\":\"train\",\"product\":\"P1\",\"mentions\":{\"height\":173},\"featured\":[\"P2\"]},"
        "\"intent\":\"size\",\"gold\":{\"skill\":\"size\",\"calls\":[{\"function\":\"size.recommend\","
        "\"arguments\":{\"product\":\"P1\",\"height_cm\":173,\"weight_kg\":69.5,\"fit\":null}}],"
        "\"facts\":{\"size\":\"L\",\"price\":199,\"odd\":[1,{\"a\":2}],\"flag\":true},"
        "\"must\":[\"address_viewer\"],\"must_not\":[\"best\",\"cheapest\"]},"
        "\"faults\":[{\"call\":0,\"type\":\"timeout\",\"times\":1},{\"call\":0,\"type\":\"empty\",\"times\":2},"
        "{\"call\":0,\"type\":\"timeout\",\"times\":1}]}";
    /* each: a piece of base and what replaces it */
    static const char *const edit[][3] = {   /* what, its replacement, "1": read as it is */
        { "", "", "1" },                                                      /* as it is */
        { "{\"id\":\"t-1\",", "{\"id\":\"t-0\",\"id\":\"t-1\",", "" },       /* repeated keys */
        { "\"nick\":\"mei\",", "\"nick\":\"x\",\"nick\":\"mei\",", "" },
        { "\"product\":\"P1\",", "\"product\":\"P1\",\"product\":\"P2\",", "" },
        { "\"skill\":\"size\",", "\"skill\":\"size\",\"skill\":[\"a\"],", "" },
        { "\"size\":\"L\",", "\"size\":\"L\",\"size\":\"M\",", "" },
        { "\"size\":\"L\",", "\"size\":\"L\",\"odd\":1,", "" },
        { "\"height_cm\":173,", "\"height_cm\":173,\"height_cm\":174,", "" },
        { "\"call\":0,\"type\":\"timeout\",\"times\":1}]", "\"call\":0,\"call\":0,\"type\":\"timeout\",\"times\":1}]", "" },
        { "\"split\":\"train\",", "\"split\":\"train\",\"split\":\"eval\",", "1" },   /* read nowhere: fine */
        { "\"id\":\"t-1\"", "\"id\":1", "" },                                /* other types */
        { "\"id\":\"t-1\"", "\"id\":\"t\\\"1\"", "" },
        { "\"id\":\"t-1\"", "\"id\":\"t\\u00001\"", "" },
        { "\"nick\":\"mei\"", "\"nick\":[\"mei\"]", "" },
        { "\"viewer\":{", "\"viewer\":null,\"v\":{", "" },
        { "\"context\":{", "\"context\":[],\"c\":{", "" },
        { "\"product\":\"P1\"", "\"product\":7", "" },
        { "\"intent\":\"size\"", "\"intent\":\"sizes\"", "" },
        { "\"intent\":\"size\"", "\"intent\":null", "" },
        { "\"skill\":\"size\"", "\"skill\":{}", "" },
        { "\"skill\":\"size\"", "\"skill\":[\"size\",\"price\"]", "1" },
        { "\"skill\":\"size\"", "\"skill\":[\"size\",1]", "" },
        { "\"calls\":[", "\"calls\":{},\"c\":[", "" },
        { "\"function\":\"size.recommend\"", "\"function\":1", "" },
        { "\"arguments\":{", "\"arguments\":[],\"a\":{", "" },
        { "\"weight_kg\":69.5", "\"weight_kg\":[69]", "" },
        { "\"weight_kg\":69.5", "\"weight_kg\":6.95e1", "1" },
        { "\"weight_kg\":69.5", "\"weight_kg\":-0", "1" },
        { "\"price\":199", "\"price\":1e999", "" },
        { "\"price\":199", "\"price\":99999999999999999999", "" },
        { "\"height\":173", "\"height\":99999999999999999999", "" },
        { "\"height\":173", "\"height\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "" },
        { "\"must\":[\"address_viewer\"]", "\"must\":\"address_viewer\"", "" },
        { "\"must_not\":[\"best\",", "\"must_not\":[null,\"best\",", "" },
        { "\"faults\":[", "\"faults\":{},\"f\":[", "" },
        { "\"call\":0,\"type\":\"empty\"", "\"call\":1,\"type\":\"empty\"", "" },
        { "\"call\":0,\"type\":\"empty\"", "\"call\":-1,\"type\":\"empty\"", "" },
        { "\"call\":0,\"type\":\"empty\"", "\"call\":0.0,\"type\":\"empty\"", "" },
        { "\"type\":\"empty\",\"times\":2", "\"type\":\"empty\",\"times\":0", "" },
        { "\"type\":\"empty\"", "\"type\":\"flaky\"", "" },
        { "\"type\":\"empty\",\"times\":2", "\"type\":\"empty\"", "" },
        { "\"text\":\"size for 173 cm?\"", "\"text\":\"size \\u00e9 \xe6\x98\x9f \"", "1" },
        { "\"text\":\"size for 173 cm?\"", "\"text\":\"bad \xed\xa0\x80 utf-8\"", "" },
        { "\"text\":\"size for 173 cm?\"", "\"text\":\"over \xc0\xaf long\"", "" },
        { "\"text\":\"size for 173 cm?\"", "\"text\":\"nul \\u0000 here\"", "" },
        { "\"split\":\"train\"", "\"split\":\"nul \\u0000 is fine here\"", "1" },
        { "\"split\":\"train\"", "\"sp\\u0000lit\":\"no NUL in a key\"", "" },
        { "\"split\":\"train\"", "\"split\":\"bad \xff byte\"", "" },
        { "\"split\":\"train\"", "\"\xe6\x98\x9f\":\"a key\"", "1" },
        { "\"split\":\"train\"", "\"split\":\"\\ud800\"", "" },
        { "\"split\":\"train\"", "\"split\":\"\\ud83d\\ude00\"", "" },       /* a pair: left to jansson too */
        { "\"split\":\"train\"", "\"split\":\f\"train\"", "" },
        { "\"size\":\"L\"", "\"\xc3\xa9\":\"L\"", "" },
        { "{\"id\"", "[{\"id\"", "" },
    };
    for (size_t k = 0; k < sizeof edit / sizeof edit[0]; k++) {
        sbuf b;
        sbuf_init(&b);
        const char *at = *edit[k][0] ? strstr(base, edit[k][0]) : base;
        CHECK(at != NULL);
        if (!at) continue;
        sbuf_add(&b, base, (size_t)(at - base));
        sbuf_puts(&b, edit[k][1]);
        sbuf_puts(&b, at + strlen(edit[k][0]));
        if (k == sizeof edit / sizeof edit[0] - 1) sbuf_putc(&b, ']');
        int fast = 0;
        CHECK(line_view_agrees(b.s, b.len, &fast));
        if (*edit[k][2] && !fast) {
            CHECK(fast);
            fprintf(stderr, "  edit %zu left to jansson\n", k);
        }
        /* trailing bytes: white space is fine, anything else is not */
        sbuf_puts(&b, k % 2 ? " \t\r\n" : " x");
        CHECK(line_view_agrees(b.s, b.len, &fast));
        sbuf_free(&b);
    }
    /* random byte mutations of generated tasks */
    world *w = world_from_json(world_generate(5, 60), "gen");
    taskgen *g = w ? taskgen_new(w, "train") : NULL;
    CHECK(g != NULL);
    rng_t r;
    rng_seed(&r, 20261207);
    long before = view_parsed;
    for (int i = 0; g && i < 1500; i++) {
        json_t *task = taskgen_make(g, 9, i, NULL, 0.4);
        char *line = json_dumps(task, HAT_JSON_FLAGS);
        sbuf b;
        sbuf_init(&b);
        sbuf_puts(&b, line);
        int fast = 0;
        CHECK(line_view_agrees(b.s, b.len, &fast));
        CHECK(fast);
        for (int m = 0; m < 3; m++) {
            mutate(&r, &b);
            CHECK(line_view_agrees(b.s, b.len, &fast));
        }
        sbuf_free(&b);
        free(line);
        json_decref(task);
    }
    CHECK(view_parsed - before > 1600);   /* some mutations leave a task: they are read too */
    taskgen_free(g);
    world_free(w);
}

/* task_index_add_line: the view is indexed and a declined line adds
 * nothing.  (HAT_SLOW_JSON=1, read once a process, is judge_fast.sh's.) */
static void task_index_takes_lines(void)
{
    task_index *ix = task_index_new();
    const char *good = "{\"id\":\"a\",\"viewer\":{\"nick\":\"n\",\"text\":\"t\"},\"intent\":\"greeting\","
                       "\"gold\":{\"skill\":[]}}";
    const char *bad = "{\"id\":\"b\",\"viewer\":{\"nick\":\"n\",\"text\":\"t\"},\"intent\":\"nope\",\"gold\":{\"skill\":[]}}";
    CHECK(task_index_add_line(ix, good, strlen(good), 0) != NULL);
    CHECK(task_index_add_line(ix, bad, strlen(bad), 0) == NULL);
    CHECK_EQ_INT((long long)task_index_size(ix), 1);
    CHECK(task_index_get(ix, "a") != NULL && task_index_get(ix, "a")->line == NULL);
    CHECK(task_index_get(ix, "b") == NULL);
    CHECK_STR(task_index_get(ix, "a")->intent_json, "\"greeting\"");
    task_index_free(ix);
}

int main(void)
{
    RUN(view_scores_as_task);
    RUN(view_of_any_shape);
    RUN(task_index_finds);
    RUN(fast_load_edge_cases);
    RUN(fast_load_random_and_mutated);
    RUN(fast_load_takes_ordinary_lines);
    RUN(fast_load_every_non_ascii_place);
    RUN(reader_keeps_line_text);
    RUN(task_line_edits);
    RUN(task_index_takes_lines);
    fprintf(stderr, "fast path taken %ld times, jansson alone %ld times\n", fast_taken, slow_only);
    fprintf(stderr, "task lines read into views %ld times, left to jansson %ld times\n", view_parsed, view_declined);
    TEST_MAIN_END();
}
