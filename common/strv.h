/* strv.h — string views for the chat template code: a pointer and a
 * length, so content with NUL bytes behaves like a Python str and slicing
 * never copies.  Shared by chat.c (rendering) and chat_parse.c (parsing),
 * which must strip and search exactly alike for render(parse(x)) to hold. */
#ifndef HAT_STRV_H
#define HAT_STRV_H

#include <stddef.h>
#include <string.h>

typedef struct { const char *s; size_t n; } strv;

static inline strv sv(const char *s, size_t n) { strv v = { s, n }; return v; }
static inline strv sv_drop(strv v, size_t k) { return sv(v.s + k, v.n - k); }

static inline strv lstrip_nl(strv v)
{
    while (v.n && v.s[0] == '\n') v = sv_drop(v, 1);
    return v;
}

static inline strv rstrip_nl(strv v)
{
    while (v.n && v.s[v.n - 1] == '\n') v.n--;
    return v;
}

static inline int is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static inline strv lstrip_ws(strv v)
{
    while (v.n && is_ws(v.s[0])) v = sv_drop(v, 1);
    return v;
}

/* Offset of the first / last occurrence of needle, or -1. */
static inline long find_first(strv v, const char *needle)
{
    const char *p = memmem(v.s, v.n, needle, strlen(needle));
    return p ? p - v.s : -1;
}

static inline long find_last(strv v, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = v.n >= m ? v.n - m + 1 : 0; i-- > 0;)
        if (!memcmp(v.s + i, needle, m)) return (long)i;
    return -1;
}

static inline int starts_with(strv v, const char *p)
{
    size_t m = strlen(p);
    return v.n >= m && !memcmp(v.s, p, m);
}

static inline int ends_with(strv v, const char *p)
{
    size_t m = strlen(p);
    return v.n >= m && !memcmp(v.s + v.n - m, p, m);
}

#endif
