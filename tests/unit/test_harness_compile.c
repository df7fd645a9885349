/* test_harness_compile.c — the compiled harness: the one reply measure
 * (emoji as grapheme clusters, invalid UTF-8), every stage measuring
 * through it (the simulator's reply_format hook, HSA's relabeller, the
 * judge), the content hash (same content, same hash, whatever the key
 * order or object), lint as a gate, resolved limits, and the simulator's
 * caches surviving a content-equal copy of its harness. */
#include "test.h"
#include "harness.h"
#include "harness_compile.h"
#include "hsa.h"
#include "sim.h"
#include "util.h"
#include "world.h"

#include <string.h>

static json_t *H;
static world *W;

/* text, code points, emoji, invalid bytes */
static const struct { const char *s; long chars, emoji, invalid; } cases[] = {
    { "", 0, 0, 0 },
    { "plain", 5, 0, 0 },
    { "h\xc3\xa9llo \xe4\xbd\xa0\xe5\xa5\xbd", 8, 0, 0 },                     /* héllo 你好 */
    { "\xe2\xad\x90", 1, 1, 0 },                                                /* ⭐ U+2B50 */
    { "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbb", 2, 1, 0 },                            /* 👍🏻 with a skin tone */
    { "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", 5, 1, 0 }, /* 👨‍👩‍👧 */
    { "\xf0\x9f\x87\xaf\xf0\x9f\x87\xb5", 2, 1, 0 },                            /* 🇯🇵 a flag */
    { "1\xef\xb8\x8f\xe2\x83\xa3", 3, 1, 0 },                                   /* 1️⃣ a keycap */
    { "\xe2\x9d\xa4\xef\xb8\x8f ok", 5, 1, 0 },                                 /* ❤️ */
    { "\xe2\x9c\xa8\xe2\x9c\xa8", 2, 2, 0 },                                    /* ✨✨ two clusters */
    { "\xc2\xa9 \xe2\x84\xa2 \xc2\xa5" "199", 8, 0, 0 },                        /* © ™ ¥199: text */
    { "\xc2\xa9\xef\xb8\x8f", 2, 1, 0 },                                        /* ©️ emoji form */
    { "\xf0\x9f\x8f\xbb skin", 6, 0, 0 },                                       /* a lone modifier */
    { "bad \xff tail \xf0\x9f\x98\x80", 12, 1, 1 },                             /* counted past the bad byte */
    { "\xf0\x9f\x98", 3, 0, 3 },                                                /* a cut-off emoji */
    { "a \xf0\x9f\x91\x8d b \xe2\x9d\xa4\xef\xb8\x8f c", 10, 2, 0 },
};
#define NCASES (sizeof cases / sizeof cases[0])

static void setup(void)
{
    H = harness_load(test_example_harness());
    W = world_from_json(world_generate(5, 40), "gen");
    if (!H || !W) { fprintf(stderr, "setup failed\n"); exit(1); }
}

static void measure_cases(void)
{
    for (size_t i = 0; i < NCASES; i++) {
        harness_measure m;
        harness_measure_text(cases[i].s, &m);
        if (m.chars != cases[i].chars || m.emoji != cases[i].emoji || m.invalid != cases[i].invalid)
            fprintf(stderr, "  case %zu: %ld %ld %ld\n", i, m.chars, m.emoji, m.invalid);
        CHECK_EQ_INT(m.chars, cases[i].chars);
        CHECK_EQ_INT(m.emoji, cases[i].emoji);
        CHECK_EQ_INT(m.invalid, cases[i].invalid);
    }
    harness_measure m;
    harness_measure_text(NULL, &m);
    CHECK_EQ_INT(m.chars + m.emoji + m.invalid, 0);
}

/* Set prompt param name to v wherever a block defines it. */
static void set_param(json_t *h, const char *name, double v)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(json_object_get(h, "system_prompt"), "blocks"), i, b) {
        json_t *p = json_object_get(json_object_get(b, "params"), name);
        if (p) json_object_set_new(p, "value", json_integer((json_int_t)v));
    }
}

/* A harness whose only reply hook is reply_format, with these limits. */
static json_t *limited(long max_chars, long max_emoji)
{
    json_t *h = json_deep_copy(H), *hooks = json_object_get(h, "hooks");
    json_object_del(hooks, "skill_required");
    json_object_del(hooks, "factual_risk");
    json_object_del(hooks, "reply_filter");
    set_param(h, "max_chars", max_chars);
    set_param(h, "max_emoji", max_emoji);
    return h;
}

/* The simulator's hook, HSA's relabeller and the limits check agree with
 * the measure on every case, at the limit and one below it. */
static void every_stage_measures_alike(void)
{
    for (size_t i = 0; i < NCASES; i++) {
        if (cases[i].invalid) continue;             /* JSON strings are UTF-8 */
        harness_measure m;
        harness_measure_text(cases[i].s, &m);
        for (int below = 0; below <= 1; below++) {
            if (below && !m.emoji) continue;
            json_t *h = limited(200, m.emoji - below);
            sim *s = sim_new(W);
            char *err = NULL;
            CHECK_EQ_INT(sim_set_harness(s, h, &err), 0);
            if (err) { fprintf(stderr, "  %s\n", err); free(err); sim_free(s); json_decref(h); continue; }
            const char *hk = sim_reply_check(s, cases[i].s);
            CHECK(below ? hk && !strcmp(hk, "reply_format") : hk == NULL);
            char *broken = harness_limits_broken(harness_compiled_limits(sim_compiled(s)), cases[i].s);
            CHECK((broken != NULL) == below);
            free(broken);
            json_t *rec = json_pack("{s:[{s:s,s:s},{s:s,s:s}]}", "messages", "role", "user", "content", "x: hi",
                                    "role", "assistant", "content", cases[i].s);
            hsa_needs n;
            const char *why = NULL;
            CHECK_EQ_INT(hsa_needs_scan(&n, rec, h, &why), 0);
            CHECK_EQ_INT(n.reply_emoji, m.emoji);
            CHECK_EQ_INT(n.reply_chars, m.chars);
            CHECK_EQ_INT(n.final_over, below);
            hsa_needs_free(&n);
            json_decref(rec);
            sim_free(s);
            json_decref(h);
        }
    }
    /* characters too, at the limit and one over */
    const char *t = "@momo88 \xe2\xad\x90 the blue one is in stock in every size, "
                    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 approved";
    harness_measure m;
    harness_measure_text(t, &m);
    for (int below = 0; below <= 1; below++) {
        json_t *h = limited(m.chars - below, 3);
        sim *s = sim_new(W);
        CHECK_EQ_INT(sim_set_harness(s, h, NULL), 0);
        const char *hk = sim_reply_check(s, t);
        CHECK(below ? hk && !strcmp(hk, "reply_format") : hk == NULL);
        sim_free(s);
        json_decref(h);
    }
}

/* The same content hashes the same, whatever its key order; a change
 * changes it. */
static void hash_is_of_content(void)
{
    char *err = NULL;
    harness_compiled *a = harness_compile(H, NULL, &err);
    CHECK(a != NULL);
    /* the same harness with its top-level keys in reverse order */
    json_t *r = json_object();
    const char *keys[64];
    size_t nk = 0;
    const char *k;
    json_t *v;
    json_object_foreach(H, k, v) if (nk < 64) keys[nk++] = k;
    while (nk--) json_object_set(r, keys[nk], json_object_get(H, keys[nk]));
    harness_compiled *b = harness_compile(r, NULL, &err);
    CHECK(b && harness_compiled_hash(a) == harness_compiled_hash(b) && harness_compiled_same(a, b));
    json_t *c2 = json_deep_copy(H);
    json_object_set_new(c2, "version", json_string("other"));
    harness_compiled *c = harness_compile(c2, NULL, &err);
    CHECK(c && harness_compiled_hash(a) != harness_compiled_hash(c) && !harness_compiled_same(a, c));
    harness_compiled_free(a);
    harness_compiled_free(b);
    harness_compiled_free(c);
    json_decref(r);
    json_decref(c2);
}

/* Lint errors stop the compile, naming the path; warnings are handed back. */
static void lint_is_the_gate(void)
{
    json_t *h = json_deep_copy(H);
    json_object_set_new(json_array_get(json_object_get(h, "skills"), 0), "function", json_string("no.such.function"));
    char *err = NULL;
    json_t *warnings = NULL;
    CHECK(harness_compile(h, &warnings, &err) == NULL);
    CHECK(err && strstr(err, "/skills/0"));
    free(err);
    json_decref(h);
    h = json_deep_copy(H);
    json_object_set_new(json_object_get(h, "hooks"), "no_such_hook", json_object());
    err = NULL;
    harness_compiled *c = harness_compile(h, &warnings, &err);
    CHECK(c != NULL && err == NULL);
    CHECK(json_array_size(warnings) == 1);
    harness_compiled_free(c);
    json_decref(warnings);
    json_decref(h);
}

/* Limits come from the params reply_format names, and bind even without
 * the hook (format_hook says whether the simulator enforces them). */
static void limits_resolved_once(void)
{
    harness_limits L;
    harness_resolve_limits(H, &L);
    double mc, me;
    CHECK_EQ_INT(harness_param(H, "max_chars", &mc), 0);
    CHECK_EQ_INT(harness_param(H, "max_emoji", &me), 0);
    CHECK_EQ_INT(L.max_chars, (long)mc);
    CHECK_EQ_INT(L.max_emoji, (long)me);
    CHECK_EQ_INT(L.format_hook, 1);
    json_t *h = json_deep_copy(H);
    json_object_set_new(json_object_get(json_object_get(h, "hooks"), "reply_format"), "max_chars_param",
                        json_string("max_emoji"));
    harness_resolve_limits(h, &L);
    CHECK_EQ_INT(L.max_chars, (long)me);
    json_object_del(json_object_get(h, "hooks"), "reply_format");
    harness_resolve_limits(h, &L);
    CHECK_EQ_INT(L.format_hook, 0);
    CHECK_EQ_INT(L.max_chars, (long)mc);
    json_decref(h);
}

/* A content-equal copy keeps the simulator's view (and the caches on it). */
static void sim_keys_on_content(void)
{
    sim *s = sim_new(W);
    CHECK_EQ_INT(sim_set_harness(s, H, NULL), 0);
    const harness_compiled *c = sim_compiled(s);
    uint64_t hash = harness_compiled_hash(c);
    json_t *copy = json_deep_copy(H);
    CHECK_EQ_INT(sim_set_harness(s, copy, NULL), 0);
    CHECK(sim_compiled(s) == c && sim_harness(s) == H);
    json_t *other = json_deep_copy(H);
    json_object_set_new(other, "version", json_string("other"));
    CHECK_EQ_INT(sim_set_harness(s, other, NULL), 0);
    CHECK(harness_compiled_hash(sim_compiled(s)) != hash && sim_harness(s) == other);
    sim_free(s);
    json_decref(copy);
    json_decref(other);
}

int main(void)
{
    setup();
    RUN(measure_cases);
    RUN(every_stage_measures_alike);
    RUN(hash_is_of_content);
    RUN(lint_is_the_gate);
    RUN(limits_resolved_once);
    RUN(sim_keys_on_content);
    world_free(W);
    json_decref(H);
    TEST_MAIN_END();
}
