/* test_judge_fast.c — the judge's fast paths give what the slow paths
 * give.  json_loadb_fast (yajl building jansson values) returns exactly
 * json_loadb's value, or NULL and leaves the input to json_loadb: on the
 * inputs where the two parsers part ways (white space, surrogates, NUL,
 * number range, UTF-8 strictness), on random JSON and on thousands of
 * random mutations of it; and it is really taken for ordinary lines. */
#include "test.h"
#include "jsonl.h"
#include "rng.h"
#include "util.h"

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

int main(void)
{
    RUN(fast_load_edge_cases);
    RUN(fast_load_random_and_mutated);
    RUN(fast_load_takes_ordinary_lines);
    RUN(reader_keeps_line_text);
    fprintf(stderr, "fast path taken %ld times, jansson alone %ld times\n", fast_taken, slow_only);
    TEST_MAIN_END();
}
