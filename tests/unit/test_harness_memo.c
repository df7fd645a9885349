/* test_harness_memo.c — the inline-harness memo: every line parses to what
 * json_loadb gives (same values, same key order, same error and column),
 * whether the harness was reused (hit), remembered anew (fresh) or the
 * line parsed in full; the reused harness is the same object; the spans
 * that only look like the harness (nested, inside a key, duplicate keys,
 * the sentinel's own digits in the line) are never mistaken for it; shared
 * messages and keys likewise; jsonl_next through a memo. */
#include "test.h"
#include "harness_memo.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

#include <unistd.h>

static const char *H1 = "{\"name\":\"shop\",\"skills\":[{\"name\":\"a\",\"rules\":[\"x\",\"y\"]}],\"n\":1.5}";
static const char *H2 = "{\"name\":\"shop\",\"skills\":[{\"name\":\"a\",\"rules\":[\"x\",\"z\"]}],\"n\":1.5}";

/* Parses text through m and through json_loadb; both must agree in value,
 * key order and (for bad input) error position and text.  Returns the
 * memo's value (new ref) or NULL. */
static json_t *same_as_loadb(harness_memo *m, const char *text, size_t flags)
{
    json_error_t e1, e2;
    size_t n = strlen(text);
    json_t *a = harness_memo_parse(m, text, n, flags, &e1);
    json_t *b = json_loadb(text, n, flags, &e2);
    if (!a || !b) {
        CHECK(!a && !b);
        if (!a && !b) {
            CHECK_EQ_INT(e1.line, e2.line);
            CHECK_EQ_INT(e1.column, e2.column);
            CHECK_EQ_INT(e1.position, e2.position);
            CHECK_STR(e1.text, e2.text);
        }
        json_decref(b);
        if (a) json_decref(a);
        return NULL;
    }
    char *sa = json_dumps(a, JSON_ENCODE_ANY | HAT_JSON_FLAGS), *sb = json_dumps(b, JSON_ENCODE_ANY | HAT_JSON_FLAGS);
    CHECK(json_equal(a, b));
    CHECK_STR(sa, sb);
    if (strcmp(sa, sb)) fprintf(stderr, "  line: %s\n", text);
    free(sa);
    free(sb);
    json_decref(b);
    return a;
}

static char *line(const char *fmt, const char *h) { return xasprintf(fmt, h, h); }

static void hit_shares_the_harness(void)
{
    harness_memo *m = harness_memo_new();
    char *l1 = line("{\"id\":\"a\",\"harness\":%s,\"messages\":[1]}", H1);
    char *l2 = line("{\"id\":\"b\",\"harness\":%s,\"messages\":[2],\"meta\":{}}", H1);
    json_t *a = same_as_loadb(m, l1, 0), *b = same_as_loadb(m, l2, 0);
    CHECK(a && b);
    CHECK(json_object_get(a, "harness") == json_object_get(b, "harness"));
    harness_memo_stats s = harness_memo_counts(m);
    CHECK_EQ_INT(s.fresh, 1);
    CHECK_EQ_INT(s.hits, 1);
    CHECK_EQ_INT(s.full, 0);
    /* The key keeps its place among the others. */
    const char *k0 = json_object_iter_key(json_object_iter(b));
    CHECK_STR(k0, "id");
    CHECK_STR(json_object_iter_key(json_object_iter_next(b, json_object_iter(b))), "harness");
    json_decref(a);
    json_decref(b);
    free(l1);
    free(l2);
    harness_memo_free(m);
}

static void changed_harness_is_parsed_again(void)
{
    harness_memo *m = harness_memo_new();
    const char *hs[] = { H1, H2, H2, H1, H1, H2 };
    json_t *prev = NULL;
    for (int i = 0; i < 6; i++) {
        char *l = line("{\"harness\":%s,\"k\":0}", hs[i]);
        json_t *v = same_as_loadb(m, l, 0);
        CHECK(v != NULL);
        if (i > 0) CHECK((json_object_get(v, "harness") == json_object_get(prev, "harness")) == (hs[i] == hs[i - 1]));
        json_decref(prev);
        prev = v;
        free(l);
    }
    json_decref(prev);
    harness_memo_stats s = harness_memo_counts(m);
    CHECK_EQ_INT(s.fresh, 4);
    CHECK_EQ_INT(s.hits, 2);
    harness_memo_free(m);
}

/* Spans that repeat the remembered bytes but are not the top-level value. */
static void look_alikes_are_not_the_harness(void)
{
    const char *fmts[] = {
        "{\"meta\":{\"harness\":%s},\"harness\":null}",            /* nested first, top-level null */
        "{\"meta\":{\"harness\":%s},\"harness\":%s}",              /* nested and top-level, same bytes */
        "{\"meta\":[{\"harness\":%s}]}",                            /* nested only */
        "{\"x\\\"harness\":%s,\"harness\":null}",                   /* inside a key with an escaped quote */
        "{\"harness\":%s,\"harness\":null}",                        /* duplicate key: the last wins */
        "{\"harness\":%s,\"harness\":5}",
        "{\"harness\":7,\"harness\":%s}",
        "{\"harness\" :\n %s ,\"a\":1}",                            /* white space around the colon */
        "",                                                         /* i == 8: H1 inside a string, below */
        "[{\"harness\":%s}]",                                       /* not an object at the top */
        "{\"harness\":%s}",
    };
    harness_memo *m = harness_memo_new();
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        /* Prime the memo with H1, then the look-alike, then H1 again. */
        char *p = line("{\"harness\":%s}", H1);
        json_decref(same_as_loadb(m, p, JSON_DECODE_ANY));
        if (i == 8) {
            /* H1 quoted inside a string: escape its quotes first. */
            json_t *s = json_string(H1);
            char *q = json_dumps(s, JSON_ENCODE_ANY);
            char *l = xasprintf("{\"s\":%s,\"h\":\"\\\"harness\\\":\",\"harness\":{}}", q);
            json_decref(same_as_loadb(m, l, 0));
            free(l);
            free(q);
            json_decref(s);
        } else {
            char *l = line(fmts[i], H1);
            json_decref(same_as_loadb(m, l, JSON_DECODE_ANY));
            free(l);
        }
        json_decref(same_as_loadb(m, p, JSON_DECODE_ANY));
        free(p);
    }
    harness_memo_free(m);
}

/* The sentinels' prefix digits in the line force another prefix, or a full parse. */
static void sentinel_digits_in_the_line(void)
{
    harness_memo *m = harness_memo_new();
    char *p = line("{\"harness\":%s}", H1);
    json_decref(same_as_loadb(m, p, 0));
    const char *nums[] = { "7394061528300000000", "8162093745000000000", "6029384756100000000", "5918273645000000000" };
    sbuf extra;
    sbuf_init(&extra);
    for (int i = 0; i < 4; i++) {
        sbuf_printf(&extra, ",\"n%d\":%s", i, nums[i]);
        char *l = xasprintf("{\"harness\":%s%s}", H1, extra.s);
        harness_memo_stats before = harness_memo_counts(m);
        json_t *v = same_as_loadb(m, l, 0);
        CHECK(v != NULL);
        harness_memo_stats after = harness_memo_counts(m);
        if (i < 3) CHECK_EQ_INT(after.hits, before.hits + 1);
        else CHECK_EQ_INT(after.full, before.full + 1);      /* no prefix left */
        json_decref(v);
        free(l);
    }
    /* The digits of a sentinel itself, and inside the harness: no obstacle. */
    char *h3 = xasprintf("{\"v\":%s}", nums[0]);
    char *l3 = line("{\"harness\":%s,\"a\":7394061528300000000}", h3);
    json_decref(same_as_loadb(m, l3, 0));
    json_t *v = same_as_loadb(m, l3, 0);
    CHECK(json_integer_value(json_object_get(json_object_get(v, "harness"), "v")) == 7394061528300000000LL);
    CHECK(json_integer_value(json_object_get(v, "a")) == 7394061528300000000LL);
    json_decref(v);
    CHECK_EQ_INT(harness_memo_counts(m).full, 1);
    free(h3);
    free(l3);
    sbuf_free(&extra);
    free(p);
    harness_memo_free(m);
}

/* Repeated messages are shared; look-alikes are not taken for them. */
static void messages_are_shared(void)
{
    const char *M1 = "{\"role\":\"tool\",\"name\":\"load_skill\",\"content\":\"# a\\n- x\"}";
    const char *M2 = "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{\"p\":1}}}]}";
    harness_memo *m = harness_memo_new();
    harness_memo_share_messages(m, 1);
    char *l1 = xasprintf("{\"id\":1,\"harness\":%s,\"messages\":[{\"role\":\"user\",\"content\":\"a\"},%s,%s,{\"role\":\"assistant\",\"content\":\"@a 1\"}],\"meta\":{}}", H1, M2, M1);
    char *l2 = xasprintf("{\"id\":2,\"harness\":%s,\"messages\":[{\"role\":\"user\",\"content\":\"b\"},%s,%s,{\"role\":\"assistant\",\"content\":\"@b 2\"}],\"meta\":{}}", H1, M2, M1);
    char *l4 = xasprintf("{\"id\":4,\"harness\":%s,\"messages\":[{\"role\":\"user\",\"content\":\"c\"},%s,%s,{\"role\":\"assistant\",\"content\":\"@c 3\"}],\"meta\":{}}", H1, M2, M1);
    /* Cached the second time they are seen, shared from then on. */
    json_t *a = same_as_loadb(m, l1, 0), *b = same_as_loadb(m, l2, 0), *d = same_as_loadb(m, l4, 0);
    CHECK(a && b && d);
    json_t *ma = json_object_get(a, "messages"), *mb = json_object_get(b, "messages"), *md = json_object_get(d, "messages");
    CHECK(json_array_get(mb, 1) == json_array_get(md, 1));      /* shared */
    CHECK(json_array_get(mb, 2) == json_array_get(md, 2));
    CHECK(json_array_get(ma, 1) != json_array_get(mb, 1));      /* seen once: not yet kept */
    CHECK(json_array_get(mb, 0) != json_array_get(md, 0));      /* different bytes */
    harness_memo_stats s = harness_memo_counts(m);
    CHECK_EQ_INT(s.msg_fresh, 7);                                /* 3 + 3 + the viewer's of line 3 */
    CHECK_EQ_INT(s.msg_hits, 2);
    CHECK_EQ_INT(s.hits, 2);
    json_decref(a);
    json_decref(b);
    json_decref(d);
    free(l4);
    /* Look-alikes: the separator inside a message, a nested "messages",
     * a top-level "messages" that is not the array walked, bad JSON. */
    const char *fmts[] = {
        "{\"harness\":%s,\"messages\":[%s,{\"role\":\"tool\",\"x\":[{\"a\":1},{\"role\":\"y\"}]},%s,{}]}",
        "{\"harness\":%s,\"meta\":{\"messages\":[%s,%s,{}]},\"messages\":[1]}",
        "{\"harness\":%s,\"messages\":[%s,%s,{}],\"messages\":null}",
        "{\"harness\":%s,\"messages\":[%s,%s,{}],\"x\":[7394061528300000000]}",
        "{\"harness\":%s,\"messages\":[%s,%s,{]}",
        "{\"harness\":%s,\"messages\":[%s,%s,{}]",
        "{\"messages\":[%s,%s,{}],\"harness\":%s}",
        "[{\"harness\":%s,\"messages\":[%s,%s,{}]}]",
    };
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        char *l = i == 6 ? xasprintf(fmts[i], M1, M2, H1) : xasprintf(fmts[i], H1, M1, M2);
        json_decref(same_as_loadb(m, l, JSON_DECODE_ANY));
        json_decref(same_as_loadb(m, l1, JSON_DECODE_ANY));
        free(l);
    }
    /* Without a harness, messages alone. */
    char *l3 = xasprintf("{\"messages\":[%s,%s,{}]}", M1, M2);
    json_decref(same_as_loadb(m, l3, JSON_DECODE_ANY));
    json_t *c = same_as_loadb(m, l3, JSON_DECODE_ANY);
    CHECK(c != NULL);
    json_decref(c);
    free(l3);
    free(l1);
    free(l2);
    harness_memo_free(m);
}

/* Shared keys (tasks.jsonl's "gold"): repeated values are shared, and
 * only a key's own top-level value is taken for it. */
static void keys_are_shared(void)
{
    const char *G1 = "{\"skill\":\"size\",\"calls\":[{\"function\":\"size.recommend\",\"arguments\":{\"product\":\"P1\"}}],\"must\":[\"}\",\"]\"]}";
    const char *G2 = "{\"skill\":\"size\",\"calls\":[{\"function\":\"size.recommend\",\"arguments\":{\"product\":\"P1\"}}],\"must\":[\"}\",\"]\"],\"x\":1}";
    const char *A1 = "[\"best\",\"cheapest\",\"No.1\",\"number one\",\"lowest price ever\",\"guaranteed\"]";
    harness_memo *m = harness_memo_new();
    harness_memo_share_key(m, "gold");
    harness_memo_share_key(m, "list");
    json_t *prev = NULL;
    for (int i = 0; i < 4; i++) {
        char *l = xasprintf("{\"id\":\"t%d\",\"gold\":%s,\"list\":%s,\"faults\":[]}", i, G1, A1);
        json_t *v = same_as_loadb(m, l, 0);
        CHECK(v != NULL);
        if (i >= 2) {
            CHECK(json_object_get(v, "gold") == json_object_get(prev, "gold"));
            CHECK(json_object_get(v, "list") == json_object_get(prev, "list"));
        }
        json_decref(prev);
        prev = v;
        free(l);
    }
    json_decref(prev);
    harness_memo_stats st = harness_memo_counts(m);
    CHECK_EQ_INT(st.key_hits, 4);                 /* lines 3 and 4, two keys each */
    CHECK_EQ_INT(st.key_fresh, 4);
    /* A cached value that is a prefix of the bytes there; nested, duplicate,
     * unterminated, inside the harness. */
    const char *fmts[] = {
        "{\"gold\":%s}",
        "{\"gold\":%.*s}",
        "{\"a\":{\"gold\":%s},\"gold\":null}",
        "{\"gold\":%s,\"gold\":[]}",
        "{\"gold\":%s,\"list\":%s",
        "{\"harness\":{\"gold\":%s},\"gold\":1}",
        "{\"gold\":%s,\"list\":[\"best\"]}",
    };
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        char *l = i == 1 ? xasprintf(fmts[i], (int)strlen(G2), G2) : i == 4 ? xasprintf(fmts[i], G1, A1) : xasprintf(fmts[i], G1);
        json_decref(same_as_loadb(m, l, 0));
        free(l);
        l = xasprintf("{\"gold\":%s}", G2);             /* G1's bytes and more */
        json_decref(same_as_loadb(m, l, 0));
        json_decref(same_as_loadb(m, l, 0));
        free(l);
    }
    harness_memo_free(m);
}

/* Bad JSON after a remembered harness: the same error, line and column. */
static void bad_lines_report_like_loadb(void)
{
    harness_memo *m = harness_memo_new();
    char *good = line("{\"id\":1,\"harness\":%s,\"m\":[]}", H1);
    json_decref(same_as_loadb(m, good, 0));
    const char *bad[] = {
        "{\"id\":1,\"harness\":%s,\"m\":[}",          /* after the harness */
        "{\"id\":,\"harness\":%s,\"m\":[]}",          /* before it */
        "{\"id\":1,\"harness\":%s \"m\":[]}",         /* a missing comma right after it */
        "{\"id\":1,\"harness\":%s1,\"m\":[]}",        /* a digit glued to it */
        "{\"id\":1,\"harness\":%s.5}",
        "{\"id\":1,\"harness\":%s",                   /* truncated */
        "{\"id\":1,\"harness\":%s,\"m\":[]} x",       /* trailing garbage */
        "{\"id\":1,\"harness\":{\"name\":\"sh",       /* inside the harness */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *l = line(bad[i], H1);
        json_t *v = same_as_loadb(m, l, 0);
        CHECK(v == NULL);
        free(l);
        json_decref(same_as_loadb(m, good, 0));    /* and the memo still works */
    }
    CHECK(harness_memo_counts(m).hits >= (long)(sizeof bad / sizeof bad[0]));
    /* A NUL inside a string, with JSON_ALLOW_NUL and without. */
    char *z = line("{\"harness\":%s,\"s\":\"a\\u0000b\"}", H1);
    json_decref(same_as_loadb(m, z, JSON_ALLOW_NUL));
    json_decref(same_as_loadb(m, z, 0));
    free(z);
    free(good);
    harness_memo_free(m);
}

/* Random lines built from the pieces above, against json_loadb. */
static void random_lines_agree(void)
{
    const char *hs[] = { H1, H2, "{}", "{\"a\":{\"harness\":{\"b\":1}}}", "[1]", "null", "\"harness\"" };
    const char *pre[] = { "", "\"id\":\"x\",", "\"meta\":{\"harness\":%H},", "\"harness\":1,", "\"x\\\"harness\":%H," };
    const char *post[] = { "", ",\"m\":[1,2]", ",\"harness\":null", ",\"meta\":{\"harness\":%H}", ",\"n\":7394061528300000001", ",", "]",
                           ",\"messages\":[{\"role\":\"u\"},{\"role\":\"t\",\"c\":%H},{\"role\":\"a\"}]",
                           ",\"messages\":[{\"role\":\"u\"},{\"role\":\"t\",\"c\":[{\"a\":1},{\"role\":\"x\"}]},{}]",
                           ",\"messages\":[{\"role\":\"u\"},{\"role\":\"t\"},{\"role\":2},{\"role\":\"a\"}],\"messages\":[]" };
    rng_t r;
    rng_seed(&r, 7);
    harness_memo *m = harness_memo_new();
    harness_memo_share_messages(m, 1);
    harness_memo_share_key(m, "meta");
    harness_memo_share_key(m, "m");
    for (int i = 0; i < 3000; i++) {
        const char *h = hs[rng_below(&r, sizeof hs / sizeof hs[0])];
        const char *a = pre[rng_below(&r, sizeof pre / sizeof pre[0])];
        const char *b = post[rng_below(&r, sizeof post / sizeof post[0])];
        const char *h2 = hs[rng_below(&r, 2)];
        sbuf s;
        sbuf_init(&s);
        sbuf_putc(&s, '{');
        for (int part = 0; part < 3; part++) {
            const char *t = part == 0 ? a : part == 1 ? "\"harness\":%H" : b;
            for (const char *q = t; *q; q++) {
                if (q[0] == '%' && q[1] == 'H') { sbuf_puts(&s, part == 1 ? h : h2); q++; }
                else sbuf_putc(&s, *q);
            }
        }
        sbuf_putc(&s, '}');
        json_decref(same_as_loadb(m, s.s, i < 1500 ? 0 : JSON_DECODE_ANY));   /* a change of flags empties the memo */
        sbuf_free(&s);
    }
    harness_memo_stats st = harness_memo_counts(m);
    if (!(st.hits > 100 && st.fresh > 100 && st.full > 100 && st.msg_hits > 100 && st.key_hits > 100))
        fprintf(stderr, "  hits %ld fresh %ld full %ld msg_hits %ld msg_fresh %ld key_hits %ld\n", st.hits, st.fresh, st.full, st.msg_hits, st.msg_fresh, st.key_hits);
    CHECK(st.hits > 100 && st.fresh > 100 && st.full > 100 && st.msg_hits > 100 && st.key_hits > 100);
    harness_memo_free(m);
}

static void jsonl_reads_through_a_memo(void)
{
    char *p = xasprintf("%s/memo.jsonl", test_tmpdir());
    FILE *f = fopen(p, "wb");
    fprintf(f, "{\"harness\":%s,\"i\":1}\n\n{\"harness\":%s,\"i\":2}\n{\"harness\":%s,\"i\":3}\n{\"harness\":%s,\"i\":}\n",
            H1, H1, H2, H2);
    fclose(f);
    harness_memo *m = harness_memo_new();
    jsonl_reader *r = jsonl_open(p, 1);
    jsonl_set_memo(r, m);
    json_t *v[3];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(jsonl_next(r, &v[i]), 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(v[i], "i")), i + 1);
    }
    CHECK_EQ_INT(jsonl_line(r), 4);
    json_t *x;
    CHECK_EQ_INT(jsonl_next(r, &x), 0);                    /* the bad line is skipped, counted */
    CHECK_EQ_INT(jsonl_skipped(r), 1);
    CHECK(json_object_get(v[0], "harness") == json_object_get(v[1], "harness"));
    CHECK(json_object_get(v[1], "harness") != json_object_get(v[2], "harness"));
    json_t *h2 = json_loads(H2, 0, NULL);
    CHECK(json_equal(json_object_get(v[2], "harness"), h2));
    json_decref(h2);
    for (int i = 0; i < 3; i++) json_decref(v[i]);
    jsonl_close(r);
    harness_memo_stats s = harness_memo_counts(m);
    CHECK_EQ_INT(s.hits, 1);
    CHECK_EQ_INT(s.fresh, 2);
    CHECK_EQ_INT(s.full, 1);                               /* the bad line, for its error */
    harness_memo_free(m);
    unlink(p);
    free(p);
}

int main(void)
{
    RUN(hit_shares_the_harness);
    RUN(changed_harness_is_parsed_again);
    RUN(look_alikes_are_not_the_harness);
    RUN(sentinel_digits_in_the_line);
    RUN(messages_are_shared);
    RUN(keys_are_shared);
    RUN(bad_lines_report_like_loadb);
    RUN(random_lines_agree);
    RUN(jsonl_reads_through_a_memo);
    TEST_MAIN_END();
}
