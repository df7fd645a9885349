/* traj_write.c — traj.jsonl lines without re-serialising what has not
 * changed (see traj_write.h).
 *
 * Layout as jansson 2.14 dumps with HAT_JSON_FLAGS: JSON_COMPACT gives ","
 * and ":" without spaces; objects list their keys in insertion order (the
 * order json_object_foreach walks); strings are escaped by jansson's
 * dump_string.  A string is copied verbatim between quotes only when every
 * byte is printable ASCII other than '"' and '\\', which dump_string writes
 * unchanged; anything else (escapes, UTF-8, numbers, literals) is jansson's
 * own output.  An older jansson walked objects in hash order: there the
 * writer hands whole values to jansson. */
#include "traj_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TW_SLOTS   4096          /* cached strings: slots, emptied when half full */
#define TW_MIN_LEN 48            /* shorter strings are written, not cached */
#define TW_OWN_LAYOUT (JANSSON_VERSION_HEX >= 0x020e00)

typedef struct {
    json_t *v;                   /* the string (a reference), NULL = empty slot */
    char   *text;                /* its JSON text, quotes included */
    size_t  len;
} cached;

struct traj_writer {
    cached *slot;
    size_t  nslot;
    /* The compact text of the last two harnesses (a run's --harness and
     * the inline one of its current lines), as cached strings are. */
    cached  h[2];
    int     next;
    sbuf    line;
};

traj_writer *traj_writer_new(void)
{
    traj_writer *w = xcalloc(1, sizeof *w);
    w->slot = xcalloc(TW_SLOTS, sizeof *w->slot);
    sbuf_init(&w->line);
    return w;
}

static void forget_strings(traj_writer *w)
{
    for (size_t i = 0; i < TW_SLOTS; i++) {
        json_decref(w->slot[i].v);
        free(w->slot[i].text);
    }
    memset(w->slot, 0, TW_SLOTS * sizeof *w->slot);
    w->nslot = 0;
}

void traj_writer_free(traj_writer *w)
{
    if (!w) return;
    forget_strings(w);
    free(w->slot);
    for (int i = 0; i < 2; i++) {
        json_decref(w->h[i].v);
        free(w->h[i].text);
    }
    sbuf_free(&w->line);
    free(w);
}

static int dump_to(const char *buf, size_t n, void *arg)
{
    sbuf *b = arg;
    if (b->len + n < b->cap) {              /* the common case, without a call */
        memcpy(b->s + b->len, buf, n);
        b->len += n;
        b->s[b->len] = 0;
    } else sbuf_add(b, buf, n);
    return 0;
}

/* v exactly as jansson writes it. */
static void put_jansson(sbuf *b, const json_t *v)
{
    if (json_dump_callback(v, dump_to, b, JSON_ENCODE_ANY | HAT_JSON_FLAGS) < 0)
        hat_die("cannot serialise JSON value");
}

/* Bytes dump_string writes unchanged: printable ASCII but '"' and '\\'.
 * Eight bytes at a time (most of a line is such text): a word holds a
 * byte outside the set when some byte is < 0x20, >= 0x7f, '"' or '\\'. */
#define TW_ONES  0x0101010101010101ULL
#define TW_HIGHS 0x8080808080808080ULL
static int plain(const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t lo = (x - TW_ONES * 0x20) & ~x;          /* a byte < 0x20 (or >= 0x80) */
        uint64_t del = (x + TW_ONES * 0x01) & TW_HIGHS;   /* a byte >= 0x7f */
        uint64_t q = x ^ (TW_ONES * '"'), b = x ^ (TW_ONES * '\\');
        uint64_t eq = ((q - TW_ONES) & ~q) | ((b - TW_ONES) & ~b);
        if ((lo | del | eq | x) & TW_HIGHS) return 0;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return 0;
    }
    return 1;
}

static void put_plain(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 3 > b->cap) {
        sbuf_putc(b, '"');
        sbuf_add(b, s, n);
        sbuf_putc(b, '"');
        return;
    }
    b->s[b->len++] = '"';
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len++] = '"';
    b->s[b->len] = 0;
}

static void put_string(traj_writer *w, sbuf *b, const json_t *v)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n < TW_MIN_LEN || v->refcount < 2) {     /* short, or not shared: no use caching */
        if (plain(s, n)) put_plain(b, s, n);
        else put_jansson(b, v);
        return;
    }
    uintptr_t p = (uintptr_t)v;
    size_t i = (size_t)((p >> 4) * 0x9e3779b97f4a7c15ULL >> 52) & (TW_SLOTS - 1);
    for (; w->slot[i].v; i = (i + 1) & (TW_SLOTS - 1))
        if (w->slot[i].v == v) { sbuf_add(b, w->slot[i].text, w->slot[i].len); return; }
    size_t at = b->len;
    put_jansson(b, v);
    if (w->nslot >= TW_SLOTS / 2) {
        forget_strings(w);
        i = (size_t)((p >> 4) * 0x9e3779b97f4a7c15ULL >> 52) & (TW_SLOTS - 1);
    }
    cached *c = &w->slot[i];
    c->v = json_incref((json_t *)v);
    c->len = b->len - at;
    c->text = xmalloc(c->len);
    memcpy(c->text, b->s + at, c->len);
    w->nslot++;
}

/* One byte of layout, without a call while the buffer has room. */
static inline void put_byte(sbuf *b, char c)
{
    if (b->len + 1 < b->cap) {
        b->s[b->len++] = c;
        b->s[b->len] = 0;
    } else sbuf_putc(b, c);
}

void traj_writer_json(traj_writer *w, sbuf *b, const json_t *v)
{
    if (!TW_OWN_LAYOUT) { put_jansson(b, v); return; }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        int first = 1;
        put_byte(b, '{');
        json_object_foreach((json_t *)v, k, x) {
            if (!first) put_byte(b, ',');
            first = 0;
            size_t kn = strlen(k);
            if (plain(k, kn)) put_plain(b, k, kn);
            else {
                json_t *ks = json_stringn_nocheck(k, kn);
                put_jansson(b, ks);
                json_decref(ks);
            }
            put_byte(b, ':');
            traj_writer_json(w, b, x);
        }
        put_byte(b, '}');
        return;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        put_byte(b, '[');
        json_array_foreach(v, i, x) {
            if (i) put_byte(b, ',');
            traj_writer_json(w, b, x);
        }
        put_byte(b, ']');
        return;
    }
    case JSON_STRING:
        put_string(w, b, v);
        return;
    default:
        put_jansson(b, v);
    }
}

/* The compact text of harness h, made once per distinct h among the last two. */
static const char *harness_text(traj_writer *w, const json_t *h, size_t *len)
{
    for (int i = 0; i < 2; i++)
        if (w->h[i].v == h && w->h[i].text) { *len = w->h[i].len; return w->h[i].text; }
    cached *c = &w->h[w->next];
    w->next ^= 1;
    char *t = json_compact(h);
    json_decref(c->v);
    free(c->text);
    c->v = json_incref((json_t *)h);
    c->text = t;
    c->len = strlen(t);
    *len = c->len;
    return t;
}

int traj_write(traj_writer *w, hat_out *o, const json_t *task, const json_t *harness,
               const json_t *msgs, const json_t *meta)
{
    size_t hlen;
    const char *htext = harness_text(w, harness, &hlen);
    sbuf *b = &w->line;
    sbuf_reset(b);
    json_t *id = json_sprintf("%s.t", json_string_value(json_object_get(task, "id")));
    sbuf_puts(b, "{\"id\":");
    put_jansson(b, id);
    json_decref(id);
    sbuf_puts(b, ",\"task_id\":");
    put_jansson(b, json_object_get(task, "id"));
    sbuf_puts(b, ",\"harness\":");
    size_t head = b->len;
    /* The harness text goes out as it is, between the two halves. */
    sbuf_puts(b, ",\"messages\":");
    traj_writer_json(w, b, msgs);
    sbuf_puts(b, ",\"meta\":");
    traj_writer_json(w, b, meta);
    sbuf_puts(b, "}\n");
    if (out_write(o, b->s, head) || out_write(o, htext, hlen)) return -1;
    return out_write(o, b->s + head, b->len - head);
}
