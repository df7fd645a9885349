/* test_traj_write.c — the traj.jsonl writer: any value comes out byte for
 * byte as json_compact writes it (escapes, UTF-8, control characters,
 * numbers, key order after deletions, nesting), whether its strings are
 * written, handed to jansson or taken from the cache of shared strings;
 * a whole line equals json_compact of the record, with the harness text
 * made once per harness. */
#include "test.h"
#include "jsonl.h"
#include "rng.h"
#include "traj_write.h"
#include "util.h"

#include <unistd.h>

/* json_compact(v) and the writer's text of v must be the same bytes. */
static void same_text(traj_writer *w, const json_t *v)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_puts(&b, "x");                          /* appends, after what is there */
    traj_writer_json(w, &b, v);
    char *want = json_dumps(v, JSON_ENCODE_ANY | HAT_JSON_FLAGS);
    CHECK(want != NULL);
    CHECK(b.len == strlen(want) + 1 && !strcmp(b.s + 1, want));
    if (!want || b.len != strlen(want) + 1 || strcmp(b.s + 1, want))
        fprintf(stderr, "  writer: %s\n  jansson: %s\n", b.s + 1, want ? want : "(null)");
    free(want);
    sbuf_free(&b);
}

static const char *pieces[] = {
    "plain", "", "with \"quotes\"", "back\\slash", "new\nline\ttab", "\x01\x1f ctl", "del \x7f",
    "slash /", "caf\xc3\xa9", "\xe4\xbd\xa0\xe5\xa5\xbd", "emoji \xf0\x9f\x98\x80", "\xe2\x80\xa8 line sep",
    "{\"ok\":true,\"data\":{\"id\":\"P1\",\"price\":199}}",
};

static json_t *random_value(rng_t *r, int depth, json_t *shared)
{
    int k = (int)rng_below(r, depth > 3 ? 6 : 9);
    switch (k) {
    case 0: return json_string(pieces[rng_below(r, sizeof pieces / sizeof pieces[0])]);
    case 1: return json_integer((json_int_t)rng_u64(r) >> (rng_below(r, 64)));
    case 2: return json_real((rng_uniform(r) - 0.5) * (double)(1ULL << rng_below(r, 60)));
    case 3: return rng_below(r, 2) ? json_true() : rng_below(r, 2) ? json_false() : json_null();
    case 4: return json_incref(json_array_get(shared, rng_below(r, json_array_size(shared))));
    case 5: {
        sbuf s;
        sbuf_init(&s);
        int n = (int)rng_below(r, 5);
        for (int i = 0; i < n; i++) sbuf_puts(&s, pieces[rng_below(r, sizeof pieces / sizeof pieces[0])]);
        json_t *v = json_string(s.s ? s.s : "");
        sbuf_free(&s);
        return v;
    }
    case 6: case 7: {
        json_t *o = json_object();
        int n = (int)rng_below(r, 6);
        for (int i = 0; i < n; i++) {
            const char *key = pieces[rng_below(r, sizeof pieces / sizeof pieces[0])];
            json_object_set_new(o, key, random_value(r, depth + 1, shared));
        }
        /* Delete and add back: insertion order, not hash order. */
        if (n && rng_below(r, 2)) {
            const char *first = json_object_iter_key(json_object_iter(o));
            char *kc = xstrdup(first);
            json_object_del(o, kc);
            json_object_set_new(o, kc, json_integer(n));
            free(kc);
        }
        return o;
    }
    default: {
        json_t *a = json_array();
        int n = (int)rng_below(r, 6);
        for (int i = 0; i < n; i++) json_array_append_new(a, random_value(r, depth + 1, shared));
        return a;
    }
    }
}

static void values_match_jansson(void)
{
    traj_writer *w = traj_writer_new();
    rng_t r;
    rng_seed(&r, 3);
    /* Long strings shared between values: the cache's case. */
    json_t *shared = json_array();
    for (int i = 0; i < 6; i++) {
        char *t = xasprintf("# skill %d\n- %s rule \"quoted\" and plain text long enough to be cached, %s", i,
                            pieces[i % 13], i % 2 ? "caf\xc3\xa9" : "ascii");
        json_array_append_new(shared, json_string(t));
        free(t);
    }
    json_array_append_new(shared, json_string("a plain shared string that is long enough to be cached by the writer"));
    for (int i = 0; i < 4000; i++) {
        json_t *v = random_value(&r, 0, shared);
        same_text(w, v);
        same_text(w, v);                          /* again: cached strings */
        json_decref(v);
    }
    json_decref(shared);
    traj_writer_free(w);
}

/* A string freed after it was cached, and a new one at the same address:
 * the cache holds a reference, so the address cannot come back. */
static void cached_strings_stay_alive(void)
{
    traj_writer *w = traj_writer_new();
    for (int i = 0; i < 3000; i++) {              /* past the cache's size: it is emptied */
        char *t = xasprintf("a shared string number %d, long enough to be kept in the cache", i);
        json_t *s = json_string(t), *a = json_pack("[O,O]", s, s);
        same_text(w, a);
        json_decref(a);
        json_decref(s);
        free(t);
    }
    traj_writer_free(w);
}

static void lines_match_json_compact(void)
{
    char *path = xasprintf("%s/lines.jsonl", test_tmpdir());
    hat_out *o = out_open(path);
    traj_writer *w = traj_writer_new();
    json_t *h1 = json_loads("{\"name\":\"a\",\"tools\":[{\"name\":\"t\",\"description\":\"caf\\u00e9 \\\"x\\\"\"}],\"n\":0.1}", 0, NULL);
    json_t *h2 = json_loads("{\"name\":\"b\"}", 0, NULL);
    json_t *skill = json_string("# price\n- Quote the live price and the list price from the price tool.");
    sbuf want;
    sbuf_init(&want);
    const json_t *hs[] = { h1, h1, h2, h1, h2, h2 };
    for (int i = 0; i < 6; i++) {
        json_t *task = json_pack("{s:s}", "id", i % 2 ? "t-\"1\"" : "t-2");
        json_t *msgs = json_pack("[{s:s,s:s},{s:s,s:s,s:O}]", "role", "user", "content", "momo: hi \xf0\x9f\x98\x80",
                                 "role", "tool", "name", "load_skill", "content", skill);
        json_t *meta = json_pack("{s:[],s:i,s:f}", "hsa", "seed", i, "x", 0.25);
        CHECK_EQ_INT(traj_write(w, o, task, hs[i], msgs, meta), 0);
        json_t *id = json_sprintf("%s.t", json_string_value(json_object_get(task, "id")));
        json_t *rec = json_pack("{s:o,s:O,s:O,s:O,s:O}", "id", id, "task_id", json_object_get(task, "id"),
                                "harness", hs[i], "messages", msgs, "meta", meta);
        char *t = json_compact(rec);
        sbuf_puts(&want, t);
        sbuf_putc(&want, '\n');
        free(t);
        json_decref(rec);
        json_decref(task);
        json_decref(msgs);
        json_decref(meta);
    }
    CHECK_EQ_INT(out_close(o), 0);
    size_t n;
    char *got = read_file(path, &n);
    CHECK(got && n == want.len && !memcmp(got, want.s, n));
    free(got);
    sbuf_free(&want);
    json_decref(skill);
    json_decref(h1);
    json_decref(h2);
    traj_writer_free(w);
    unlink(path);
    free(path);
}

int main(void)
{
    RUN(values_match_jansson);
    RUN(cached_strings_stay_alive);
    RUN(lines_match_json_compact);
    TEST_MAIN_END();
}
