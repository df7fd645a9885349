/* task_view.c — tasks as the simulator and the judge read them (tasks.h):
 * views made from a jansson value or straight from a line, and the index
 * of views by id that judge --tasks keeps. */
#include "tasks.h"
#include "jsonl.h"
#include "util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

/* ---- task views (see tasks.h) ------------------------------------------------ */

#define ARENA_BLOCK (32 * 1024)

struct task_arena {
    char   **block;
    size_t   nblock, cblock;
    char    *cur, *p;            /* the current block, its free space */
    size_t   left;
    json_t **held;               /* references a COPY view holds */
    size_t   nheld, cheld;
};

task_arena *task_arena_new(void) { return xcalloc(1, sizeof(task_arena)); }

void task_arena_reset(task_arena *a)
{
    /* The current block stays for the next views: the simulator and the
     * judge make one per conversation. */
    for (size_t i = 0; i < a->nblock; i++) if (a->block[i] != a->cur) free(a->block[i]);
    for (size_t i = 0; i < a->nheld; i++) json_decref(a->held[i]);
    a->nblock = a->cur ? 1 : 0;
    if (a->cur) a->block[0] = a->cur;
    a->nheld = 0;
    a->p = a->cur;
    a->left = a->cur ? ARENA_BLOCK : 0;
}

void task_arena_free(task_arena *a)
{
    if (!a) return;
    task_arena_reset(a);
    free(a->cur);
    free(a->block);
    free(a->held);
    free(a);
}

static void *arena_alloc(task_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > a->left) {
        size_t size = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        char *b = xmalloc(size);
        if (a->nblock == a->cblock) {
            a->cblock = a->cblock ? a->cblock * 2 : 16;
            a->block = xrealloc(a->block, a->cblock * sizeof *a->block);
        }
        a->block[a->nblock++] = b;
        if (size != ARENA_BLOCK) return b;   /* a large one has its own block */
        a->cur = a->p = b;
        a->left = size;
    }
    void *r = a->p;
    a->p += n;
    a->left -= n;
    return r;
}

static const char *arena_strn(task_arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* A string value's text: borrowed, or copied with all its bytes. */
static const char *view_str(task_arena *a, const json_t *v, int mode)
{
    if (!json_is_string(v)) return NULL;
    return mode == TASK_VIEW_COPY ? arena_strn(a, json_string_value(v), json_string_length(v)) : json_string_value(v);
}

static const char *view_key(task_arena *a, const char *k, int mode)
{
    return mode == TASK_VIEW_COPY ? arena_strn(a, k, strlen(k)) : k;
}

static const json_t *view_hold(task_arena *a, const json_t *v, int mode)
{
    if (mode != TASK_VIEW_COPY || !v) return v;
    if (a->nheld == a->cheld) {
        a->cheld = a->cheld ? a->cheld * 2 : 64;
        a->held = xrealloc(a->held, a->cheld * sizeof *a->held);
    }
    return a->held[a->nheld++] = json_incref((json_t *)v);
}

/* The strings of list, in order (json_array_foreach + json_string_value). */
static const char **view_strings(task_arena *a, const json_t *list, int mode, size_t *n)
{
    size_t i, k = 0;
    json_t *v;
    const char **out = json_array_size(list) ? arena_alloc(a, json_array_size(list) * sizeof *out) : NULL;
    json_array_foreach(list, i, v) if (json_is_string(v)) out[k++] = view_str(a, v, mode);
    *n = k;
    return out;
}

/* v as compact JSON ("null" for none), as judge_verdict_line writes it. */
static int plain_string(const json_t *v);

static void view_dump(sbuf *b, const json_t *v)
{
    if (plain_string(v)) {
        sbuf_putc(b, '"');
        sbuf_add(b, json_string_value(v), json_string_length(v));
        sbuf_putc(b, '"');
        return;
    }
    char *d = v ? json_dumps(v, JSON_ENCODE_ANY | HAT_JSON_FLAGS) : NULL;
    sbuf_puts(b, d ? d : "null");
    free(d);
}

/* Whether jansson writes the n bytes at s as a string (under
 * HAT_JSON_FLAGS: no ASCII or slash escaping) as they are between
 * quotes: nothing to escape. */
static int plain_bytes(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == '"' || s[i] == '\\') return 0;
    return 1;
}

static int plain_string(const json_t *v)
{
    return json_is_string(v) && plain_bytes(json_string_value(v), json_string_length(v));
}

/* s[0..n) quoted, json_dumps's text without its allocations, when it
 * needs no escape (plain_bytes); else NULL. */
static const char *arena_quoted(task_arena *a, const char *s, size_t n)
{
    if (!plain_bytes(s, n)) return NULL;
    char *d = arena_alloc(a, n + 3);
    d[0] = '"';
    memcpy(d + 1, s, n);
    d[n + 1] = '"';
    d[n + 2] = 0;
    return d;
}

static const char *view_json(task_arena *a, const json_t *v)
{
    const char *q = json_is_string(v) ? arena_quoted(a, json_string_value(v), json_string_length(v)) : NULL;
    if (q) return q;                          /* every id */
    sbuf b;
    sbuf_init(&b);
    view_dump(&b, v);
    const char *s = arena_strn(a, b.s, b.len);
    sbuf_free(&b);
    return s;
}

/* The distinct string "type"s of faults, in order, as a JSON list. */
static const char *view_fault_types(task_arena *a, const json_t *faults)
{
    sbuf b;
    sbuf_init(&b);
    sbuf_putc(&b, '[');
    size_t i, k, n = 0;
    json_t *f;
    json_array_foreach(faults, i, f) {
        const json_t *t = json_object_get(f, "type");
        if (!json_is_string(t)) continue;
        int dup = 0;
        for (k = 0; k < i && !dup; k++) {
            const json_t *e = json_object_get(json_array_get(faults, k), "type");
            dup = json_is_string(e) && !strcmp(json_string_value(e), json_string_value(t));
        }
        if (dup) continue;
        if (n++) sbuf_putc(&b, ',');
        view_dump(&b, t);
    }
    sbuf_putc(&b, ']');
    const char *s = arena_strn(a, b.s, b.len);
    sbuf_free(&b);
    return s;
}

const task_view *task_view_make(task_arena *a, const json_t *task, int mode, const char *line, size_t line_len)
{
    task_view *t = arena_alloc(a, sizeof *t);
    memset(t, 0, sizeof *t);
    const json_t *id = json_object_get(task, "id"), *viewer = json_object_get(task, "viewer");
    const json_t *gold = json_object_get(task, "gold");
    t->id = view_str(a, id, mode);
    t->id_len = t->id ? json_string_length(id) : 0;
    t->nick = view_str(a, json_object_get(viewer, "nick"), mode);
    t->text = view_str(a, json_object_get(viewer, "text"), mode);
    t->product = view_str(a, json_object_get(json_object_get(task, "context"), "product"), mode);
    const json_t *sk = json_object_get(gold, "skill");
    if (json_is_string(sk)) {
        t->skills = arena_alloc(a, sizeof *t->skills);
        t->skills[0] = view_str(a, sk, mode);
        t->nskills = 1;
    } else t->skills = view_strings(a, sk, mode, &t->nskills);
    size_t i;
    json_t *v;
    const json_t *calls = json_object_get(gold, "calls");
    t->calls = json_array_size(calls) ? arena_alloc(a, json_array_size(calls) * sizeof *t->calls) : NULL;
    json_array_foreach(calls, i, v) {
        task_view_call *c = &t->calls[t->ncalls++];
        const json_t *args = json_object_get(v, "arguments");
        c->function = view_str(a, json_object_get(v, "function"), mode);
        c->nargs = 0;
        c->args = json_object_size(args) ? arena_alloc(a, json_object_size(args) * sizeof *c->args) : NULL;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)args, k, x) {
            task_view_arg *g = &c->args[c->nargs++];
            g->key = view_key(a, k, mode);
            g->str = view_str(a, x, mode);
            g->v = g->str ? NULL : view_hold(a, x, mode);
        }
    }
    const json_t *facts = json_object_get(gold, "facts");
    t->facts = json_object_size(facts) ? arena_alloc(a, json_object_size(facts) * sizeof *t->facts) : NULL;
    const char *k;
    json_object_foreach((json_t *)facts, k, v) {
        if (!json_is_string(v) && !json_is_number(v)) continue;
        task_view_fact *f = &t->facts[t->nfacts++];
        f->key = view_key(a, k, mode);
        f->str = view_str(a, v, mode);
        f->num = json_number_value(v);
    }
    t->must = view_strings(a, json_object_get(gold, "must"), mode, &t->nmust);
    t->must_not = view_strings(a, json_object_get(gold, "must_not"), mode, &t->nmust_not);
    const json_t *faults = json_object_get(task, "faults");
    t->faults = json_array_size(faults) ? arena_alloc(a, json_array_size(faults) * sizeof *t->faults) : NULL;
    json_array_foreach(faults, i, v) {
        task_view_fault *f = &t->faults[t->nfaults++];
        f->call = (long)json_integer_value(json_object_get(v, "call"));
        f->times = (long)json_integer_value(json_object_get(v, "times"));
        f->type = view_str(a, json_object_get(v, "type"), mode);
    }
    if (mode == TASK_VIEW_COPY) {
        t->id_json = view_json(a, id);
        t->intent_json = view_json(a, json_object_get(task, "intent"));
        t->fault_types_json = view_fault_types(a, faults);
        if (line) {
            t->line = arena_strn(a, line, line_len);
            t->line_len = line_len;
        }
    }
    return t;
}

/* ---- a view straight from the line --------------------------------------------
 *
 * judge --tasks loads tens of thousands of tasks before it scores a line;
 * parsing each into a jansson tree, checking it and copying the view out
 * was most of that start-up.  task_view_parse follows yajl's events
 * instead and fills the view as it goes.  It gives up (NULL) on anything
 * it is not sure to read as task_check and task_view_make read jansson's
 * value: every field it reads must have the type the check asks for and
 * task-gen writes (a list of strings, an object, ...), no key it reads may
 * repeat (jansson keeps the last), every string is valid UTF-8 by
 * jansson's rule and every number in jansson's range (it refuses the rest
 * of the line otherwise), and the line has none of the bytes where yajl
 * and jansson part ways (json_fast_plain).  The rest of the line is only
 * checked, never kept. */

/* Where a value lies: a container being read, or one skipped. */
enum vp_frame { F_SKIP, F_TOP, F_VIEWER, F_CONTEXT, F_GOLD, F_SKILL, F_CALLS, F_CALL, F_ARGS,
                F_FACTS, F_MUST, F_MUST_NOT, F_FAULTS, F_FAULT };
/* The key a value is under (K_ANY: a key of "arguments" or "facts"). */
enum vp_key { K_OTHER, K_ID, K_VIEWER, K_CONTEXT, K_INTENT, K_GOLD, K_FAULTS, K_NICK, K_TEXT, K_PRODUCT,
              K_SKILL, K_CALLS, K_FACTS, K_MUST, K_MUST_NOT, K_FUNCTION, K_ARGUMENTS, K_CALL, K_TYPE,
              K_TIMES, K_ANY };

#define VP_KEY(f, name, k) { f, name, sizeof name - 1, k }
static const struct { enum vp_frame f; const char *name; size_t n; enum vp_key k; } vp_keys[] = {
    VP_KEY(F_TOP, "id", K_ID), VP_KEY(F_TOP, "viewer", K_VIEWER), VP_KEY(F_TOP, "context", K_CONTEXT),
    VP_KEY(F_TOP, "intent", K_INTENT), VP_KEY(F_TOP, "gold", K_GOLD), VP_KEY(F_TOP, "faults", K_FAULTS),
    VP_KEY(F_VIEWER, "nick", K_NICK), VP_KEY(F_VIEWER, "text", K_TEXT), VP_KEY(F_CONTEXT, "product", K_PRODUCT),
    VP_KEY(F_GOLD, "skill", K_SKILL), VP_KEY(F_GOLD, "calls", K_CALLS), VP_KEY(F_GOLD, "facts", K_FACTS),
    VP_KEY(F_GOLD, "must", K_MUST), VP_KEY(F_GOLD, "must_not", K_MUST_NOT),
    VP_KEY(F_CALL, "function", K_FUNCTION), VP_KEY(F_CALL, "arguments", K_ARGUMENTS),
    VP_KEY(F_FAULT, "call", K_CALL), VP_KEY(F_FAULT, "type", K_TYPE), VP_KEY(F_FAULT, "times", K_TIMES),
};

#define VP_DEPTH 32      /* deeper lines are left to jansson */
#define VP_MAX   64      /* elements of any one list the view keeps */

typedef struct {
    enum vp_frame f;
    enum vp_key   key;           /* of the value that comes next (objects) */
    uint32_t      seen;          /* the keys read so far, 1 << vp_key */
} vp_level;

typedef struct {
    task_arena *a;
    task_view  *t;
    const char *intent;
    const char *anykey;          /* the pending key of "arguments" or "facts" */
    int         depth, done, has_gold, has_skill;
    size_t      nskills, nmust, nmust_not, ncalls, nargs, nfacts, nfaults, nkeys;
    /* the lists, as long as they have been read (not cleared) */
    vp_level    st[VP_DEPTH];
    const char *keys[VP_MAX];    /* every key of the "arguments" or "facts" being read */
    const char *skills[VP_MAX], *must[VP_MAX], *must_not[VP_MAX];
    task_view_call  calls[VP_MAX];
    size_t          call_args[VP_MAX];   /* where each call's args start in args */
    task_view_arg   args[VP_MAX];
    task_view_fact  facts[VP_MAX];
    task_view_fault faults[VP_MAX];
} vparse;

/* Valid UTF-8 as jansson decides it (it refuses overlong forms and
 * surrogates, as yajl does not): json_stringn, where not ASCII. */
static int vp_utf8(const char *s, size_t n)
{
    if (json_ascii(s, n)) return 1;
    json_t *v = json_stringn(s, n);
    json_decref(v);
    return v != NULL;
}

/* A string the view keeps (vp_scalar has checked its UTF-8): copied,
 * NULL for one with a NUL (left to jansson). */
static const char *vp_str(vparse *p, const unsigned char *s, size_t n)
{
    if (memchr(s, 0, n)) return NULL;
    return arena_strn(p->a, (const char *)s, n);
}

static vp_level *vp_top(vparse *p) { return &p->st[p->depth - 1]; }

/* An object or array starts: push the frame it opens (F_SKIP where the
 * view reads nothing of it); 1 goes on, 0 gives up. */
static int vp_open(vparse *p, int is_map)
{
    if (p->done || p->depth == VP_DEPTH) return 0;
    enum vp_frame f = F_SKIP;
    if (p->depth == 0) {
        if (!is_map) return 0;
        f = F_TOP;
    } else {
        vp_level *up = vp_top(p);
        enum vp_key k = up->key;
        switch (up->f) {
        case F_SKIP: break;
        case F_TOP:
            if (k == K_VIEWER || k == K_CONTEXT || k == K_GOLD) {
                if (!is_map) return 0;
                f = k == K_VIEWER ? F_VIEWER : k == K_CONTEXT ? F_CONTEXT : F_GOLD;
                p->has_gold |= k == K_GOLD;
            } else if (k == K_FAULTS) {
                if (is_map) return 0;
                f = F_FAULTS;
            } else if (k != K_OTHER) return 0;
            break;
        case F_VIEWER: case F_CONTEXT: case F_CALL: case F_FAULT:
            if (k == K_ARGUMENTS) {
                if (!is_map) return 0;
                f = F_ARGS;
            } else if (k != K_OTHER) return 0;
            break;
        case F_GOLD:
            if (k == K_FACTS) { if (!is_map) return 0; f = F_FACTS; }
            else if (k == K_SKILL || k == K_CALLS || k == K_MUST || k == K_MUST_NOT) {
                if (is_map) return 0;
                f = k == K_SKILL ? F_SKILL : k == K_CALLS ? F_CALLS : k == K_MUST ? F_MUST : F_MUST_NOT;
                p->has_skill |= k == K_SKILL;
            } else if (k != K_OTHER) return 0;
            break;
        case F_CALLS:
            if (!is_map || p->ncalls == VP_MAX) return 0;
            p->call_args[p->ncalls] = p->nargs;
            p->calls[p->ncalls++] = (task_view_call){ NULL, NULL, 0 };
            f = F_CALL;
            break;
        case F_FAULTS:
            if (!is_map || p->nfaults == VP_MAX) return 0;
            p->faults[p->nfaults++] = (task_view_fault){ -1, 0, NULL };
            f = F_FAULT;
            break;
        case F_FACTS: break;                  /* a fact neither string nor number: not in the view */
        default: return 0;                    /* arguments nested, lists of lists */
        }
    }
    if (f == F_ARGS || f == F_FACTS) p->nkeys = 0;
    p->st[p->depth++] = (vp_level){ f, K_OTHER, 0 };
    return 1;
}

static int vp_map(void *ctx) { return vp_open(ctx, 1); }
static int vp_array(void *ctx) { return vp_open(ctx, 0); }

static int vp_close(void *ctx)
{
    vparse *p = ctx;
    vp_level *l = vp_top(p);
    if (l->f == F_VIEWER && !(p->t->nick && p->t->text)) return 0;
    if (l->f == F_CALL && !(p->calls[p->ncalls - 1].function && (l->seen & 1u << K_ARGUMENTS))) return 0;
    if (l->f == F_FAULT && (l->seen & (1u << K_CALL | 1u << K_TYPE | 1u << K_TIMES))
                           != (1u << K_CALL | 1u << K_TYPE | 1u << K_TIMES)) return 0;
    if (--p->depth == 0) p->done = 1;
    return 1;
}

static int vp_key(void *ctx, const unsigned char *s, size_t n)
{
    vparse *p = ctx;
    vp_level *l = vp_top(p);
    if (memchr(s, 0, n) || !vp_utf8((const char *)s, n)) return 0;   /* jansson's errors */
    l->key = K_OTHER;
    if (l->f == F_ARGS || l->f == F_FACTS) {
        /* a repeated key keeps its first place with its last value: every
         * key counts, also of a fact the view leaves out */
        for (size_t i = 0; i < p->nkeys; i++)
            if (strlen(p->keys[i]) == n && !memcmp(p->keys[i], s, n)) return 0;
        if (p->nkeys == VP_MAX) return 0;
        p->keys[p->nkeys++] = p->anykey = arena_strn(p->a, (const char *)s, n);
        l->key = K_ANY;
        return 1;
    }
    if (l->f == F_SKIP) return 1;
    for (size_t i = 0; i < sizeof vp_keys / sizeof vp_keys[0]; i++)
        if (vp_keys[i].f == l->f && vp_keys[i].n == n && !memcmp(vp_keys[i].name, s, n)) {
            if (l->seen & 1u << vp_keys[i].k) return 0;
            l->seen |= 1u << vp_keys[i].k;
            l->key = vp_keys[i].k;
            break;
        }
    return 1;
}

/* A scalar: a string's n bytes at s, or (s NULL) the value v (a
 * reference, taken).  0 gives up. */
static int vp_scalar(vparse *p, const unsigned char *s, size_t n, json_t *v)
{
    if (p->depth == 0) { json_decref(v); return 0; }
    vp_level *l = vp_top(p);
    task_view *t = p->t;
    const char *str = NULL;
    int ok = 1;
    if (s && !vp_utf8((const char *)s, n)) { json_decref(v); return 0; }
    switch (l->f) {
    case F_SKIP: break;
    case F_TOP: case F_VIEWER: case F_CONTEXT: case F_GOLD: case F_CALL:
        if (l->key == K_OTHER) break;
        if (!s || !(str = vp_str(p, s, n))) { ok = 0; break; }
        switch (l->key) {
        case K_ID: t->id = str; t->id_len = n; break;
        case K_INTENT: ok = (p->intent = task_intent_name(str, n)) != NULL; break;
        case K_NICK: t->nick = str; break;
        case K_TEXT: t->text = str; break;
        case K_PRODUCT: t->product = str; break;
        case K_SKILL: p->skills[p->nskills++] = str; p->has_skill = 1; break;   /* read once: the list is empty */
        case K_FUNCTION: p->calls[p->ncalls - 1].function = str; break;
        default: ok = 0;                       /* an object or list expected */
        }
        break;
    case F_SKILL: case F_MUST: case F_MUST_NOT: {
        size_t *nn = l->f == F_SKILL ? &p->nskills : l->f == F_MUST ? &p->nmust : &p->nmust_not;
        const char **list = l->f == F_SKILL ? p->skills : l->f == F_MUST ? p->must : p->must_not;
        if (!s || *nn == VP_MAX || !(str = vp_str(p, s, n))) { ok = 0; break; }
        list[(*nn)++] = str;
        break;
    }
    case F_ARGS:
        if (p->nargs == VP_MAX) { ok = 0; break; }
        if (s && !(str = vp_str(p, s, n))) { ok = 0; break; }
        p->args[p->nargs++] = (task_view_arg){ p->anykey, str, s ? NULL : view_hold(p->a, v, TASK_VIEW_COPY) };
        break;
    case F_FACTS:
        if (s) {
            if (p->nfacts == VP_MAX || !(str = vp_str(p, s, n))) { ok = 0; break; }
            p->facts[p->nfacts++] = (task_view_fact){ p->anykey, str, 0 };
        } else if (json_is_number(v)) {
            if (p->nfacts == VP_MAX) { ok = 0; break; }
            p->facts[p->nfacts++] = (task_view_fact){ p->anykey, NULL, json_number_value(v) };
        }
        break;
    case F_FAULT: {
        task_view_fault *f = &p->faults[p->nfaults - 1];
        if (l->key == K_TYPE) ok = s && (f->type = task_fault_type_name((const char *)s, n)) != NULL;
        else if (l->key == K_CALL || l->key == K_TIMES) {
            ok = json_is_integer(v);
            long x = ok ? (long)json_integer_value(v) : 0;
            if (l->key == K_CALL) f->call = x;
            else f->times = x;
        }
        break;
    }
    default: ok = 0;                           /* a scalar in a list of objects */
    }
    json_decref(v);
    return ok;
}

static int vp_string(void *ctx, const unsigned char *s, size_t n) { return vp_scalar(ctx, s, n, NULL); }
static int vp_null(void *ctx) { return vp_scalar(ctx, NULL, 0, json_null()); }
static int vp_bool(void *ctx, int b) { return vp_scalar(ctx, NULL, 0, json_boolean(b)); }
static int vp_number(void *ctx, const char *s, size_t n)
{
    json_t *v = json_number_text(s, n);        /* NULL: out of jansson's range, or unsure */
    return v && vp_scalar(ctx, NULL, 0, v);
}

static const yajl_callbacks vp_callbacks = {
    vp_null, vp_bool, NULL, NULL, vp_number, vp_string, vp_map, vp_key, vp_close, vp_array, vp_close
};

/* The arena as it was, to go back to when a parse gives up. */
typedef struct { size_t nblock, nheld, left; char *cur, *p; } arena_mark;

static arena_mark arena_at(const task_arena *a) { return (arena_mark){ a->nblock, a->nheld, a->left, a->cur, a->p }; }

static void arena_rewind(task_arena *a, arena_mark m)
{
    while (a->nblock > m.nblock) free(a->block[--a->nblock]);
    while (a->nheld > m.nheld) json_decref(a->held[--a->nheld]);
    a->cur = m.cur;
    a->p = m.p;
    a->left = m.left;
}

/* n elements of size sz from src into a (NULL for none). */
static void *arena_dup(task_arena *a, const void *src, size_t n, size_t sz)
{
    if (!n) return NULL;
    void *d = arena_alloc(a, n * sz);
    memcpy(d, src, n * sz);
    return d;
}

/* Everything task_check asks, on what was read; then the view's lists. */
static int vp_finish(vparse *p, const char *line, size_t len, int keep_line)
{
    task_view *t = p->t;
    if (!t->id || !t->nick || !p->intent || !p->has_gold || !p->has_skill) return 0;
    if (!(t->id_json = arena_quoted(p->a, t->id, t->id_len))) return 0;
    t->intent_json = arena_quoted(p->a, p->intent, strlen(p->intent));
    sbuf b;
    sbuf_init(&b);
    sbuf_putc(&b, '[');
    for (size_t i = 0; i < p->nfaults; i++) {
        const task_view_fault *f = &p->faults[i];
        if (f->call < 0 || (size_t)f->call >= p->ncalls || f->times < 1) { sbuf_free(&b); return 0; }
        size_t k = 0;
        while (k < i && p->faults[k].type != f->type) k++;   /* the one name task_fault_type_name gives */
        if (k < i) continue;
        if (b.len > 1) sbuf_putc(&b, ',');
        sbuf_printf(&b, "\"%s\"", f->type);
    }
    sbuf_putc(&b, ']');
    t->fault_types_json = arena_strn(p->a, b.s, b.len);
    sbuf_free(&b);
#define VP_LIST(f, nf) (t->f = arena_dup(p->a, p->f, p->nf, sizeof *p->f), t->nf = p->nf)
    VP_LIST(skills, nskills);
    VP_LIST(must, nmust);
    VP_LIST(must_not, nmust_not);
    VP_LIST(facts, nfacts);
    VP_LIST(faults, nfaults);
    VP_LIST(calls, ncalls);
#undef VP_LIST
    for (size_t i = 0; i < p->ncalls; i++) {
        size_t a0 = p->call_args[i], a1 = i + 1 < p->ncalls ? p->call_args[i + 1] : p->nargs;
        t->calls[i].nargs = a1 - a0;
        t->calls[i].args = arena_dup(p->a, p->args + a0, a1 - a0, sizeof *p->args);
    }
    if (keep_line) {
        t->line = arena_strn(p->a, line, len);
        t->line_len = len;
    }
    return 1;
}

const task_view *task_view_parse(task_arena *a, const char *line, size_t len, int keep_line)
{
    if (!json_fast_on() || !json_fast_plain(line, len)) return NULL;
    arena_mark m = arena_at(a);
    vparse ps, *p = &ps;
    memset(p, 0, offsetof(vparse, st));        /* the lists count from 0 */
    p->a = a;
    p->t = arena_alloc(a, sizeof *p->t);
    memset(p->t, 0, sizeof *p->t);
    yajl_handle h = yajl_alloc(&vp_callbacks, NULL, p);
    /* strings are checked by vp_utf8, as strictly as jansson checks them;
     * what follows the value is checked here, as json_loadb_fast does */
    yajl_config(h, yajl_dont_validate_strings, 1);
    yajl_config(h, yajl_allow_trailing_garbage, 1);
    int ok = yajl_parse(h, (const unsigned char *)line, len) == yajl_status_ok && p->done;
    size_t used = yajl_get_bytes_consumed(h);
    yajl_free(h);
    for (size_t i = used; ok && i < len; i++)
        ok = line[i] == ' ' || line[i] == '\t' || line[i] == '\n' || line[i] == '\r';
    ok = ok && vp_finish(p, line, len, keep_line);
    const task_view *t = p->t;
    if (!ok) {
        arena_rewind(a, m);
        return NULL;
    }
    return t;
}

/* ---- the task index ---------------------------------------------------------- */

struct task_index {
    task_arena       *arena;
    const task_view **slot;      /* open addressing by id; NULL = empty */
    size_t            cap, n;
};

static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;          /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

task_index *task_index_new(void)
{
    task_index *ix = xcalloc(1, sizeof *ix);
    ix->arena = task_arena_new();
    ix->cap = 1024;
    ix->slot = xcalloc(ix->cap, sizeof *ix->slot);
    return ix;
}

void task_index_free(task_index *ix)
{
    if (!ix) return;
    task_arena_free(ix->arena);
    free(ix->slot);
    free(ix);
}

/* The slot of id: where it is, or the empty one it would go to. */
static size_t index_find(const task_index *ix, const char *id)
{
    size_t i = id_hash(id) & (ix->cap - 1);
    while (ix->slot[i] && strcmp(ix->slot[i]->id, id)) i = (i + 1) & (ix->cap - 1);
    return i;
}

/* Index view t by its id (a later one replaces an earlier). */
static const task_view *index_put(task_index *ix, const task_view *t)
{
    if (!t->id) return t;                      /* not a checked task: never found */
    if (2 * (ix->n + 1) > ix->cap) {
        const task_view **old = ix->slot;
        size_t oc = ix->cap;
        ix->cap *= 2;
        ix->slot = xcalloc(ix->cap, sizeof *ix->slot);
        for (size_t i = 0; i < oc; i++) if (old[i]) ix->slot[index_find(ix, old[i]->id)] = old[i];
        free(old);
    }
    size_t i = index_find(ix, t->id);
    if (!ix->slot[i]) ix->n++;
    ix->slot[i] = t;
    return t;
}

const task_view *task_index_add(task_index *ix, const json_t *task, const char *line, size_t line_len)
{
    return index_put(ix, task_view_make(ix->arena, task, TASK_VIEW_COPY, line, line_len));
}

const task_view *task_index_add_line(task_index *ix, const char *line, size_t len, int keep_line)
{
    const task_view *t = task_view_parse(ix->arena, line, len, keep_line);
    return t ? index_put(ix, t) : NULL;
}

const task_view *task_index_get(const task_index *ix, const char *id)
{
    if (!id) return NULL;
    return ix->slot[index_find(ix, id)];
}

size_t task_index_size(const task_index *ix) { return ix->n; }
