/* test_pty.h — driving a readline program on a pseudo-terminal in unit
 * tests (judge annotate, the serve REPL): read until a string appears,
 * type a line. */
#ifndef HAT_TEST_PTY_H
#define HAT_TEST_PTY_H

#include "util.h"

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Read from fd until want appears in what was read (or 5 s pass). */
static inline int expect(int fd, sbuf *seen, const char *want)
{
    for (int waited = 0; waited < 5000;) {
        if (seen->s && strstr(seen->s, want)) return 1;
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 100) <= 0) { waited += 100; continue; }
        char buf[4096];
        ssize_t k = read(fd, buf, sizeof buf);
        if (k <= 0) break;
        sbuf_add(seen, buf, (size_t)k);
    }
    return seen->s && strstr(seen->s, want);
}

static inline void type(int fd, const char *s) { if (write(fd, s, strlen(s)) < 0) perror("write"); }

#endif
