/* harness.h — the agent harness: loading its three forms, looking things up
 * in it, rendering what the model sees, and the hooks that shape tool output.
 *
 * The compiled form (man 5 harness) is a jansson object; there is no C
 * struct mirror of it.  Code works on the json_t through these helpers,
 * which are defensive: a wrong-typed field reads as absent, never crashes.
 *
 *     json_t *h = harness_load("examples/harness");       // dir|tar|json|-
 *     char *sys = harness_system_text(h);                  // system message
 *     json_t *tools = harness_tools(h);                    // for chat_render
 *
 * Files: harness_load.c (reading the forms, front matter), harness.c
 * (lookups, rendering, writing the directory form), harness_hooks.c
 * (envelopes, error formats, hook messages), harness_lint.c, harness_diff.c. */
#ifndef HAT_HARNESS_H
#define HAT_HARNESS_H

#include <jansson.h>

#include "chat.h"

/* Load a directory, a .tar/.tar.gz of one (with or without a single top
 * directory), a compiled .json, or "-" (compiled JSON or an archive on
 * stdin).  Returns a new reference, or NULL after printing every problem
 * as "prog: FILE:LINE: message". */
json_t *harness_load(const char *path);
/* The most bytes a whole harness may hold (man 5 harness, LIMITS): what
 * the loader refuses past, and what harness-pack must not write. */
#define HARNESS_MAX_BYTES (64u << 20)
/* As harness_load; *origins (if not NULL) receives an object mapping JSON
 * paths ("/skills/3", "/system_prompt/blocks/1", "" for the rest) to the
 * source file each came from. */
json_t *harness_load_ex(const char *path, json_t **origins);
/* The loader behind both, for harness-lint: never prints; every problem is
 * appended to `problems` as {file, line?, path, severity, message}.  Returns
 * the harness compiled from whatever could be read (files that failed are
 * left out), or NULL when nothing could be. */
json_t *harness_load_problems(const char *path, json_t **origins, json_t *problems);

/* Write the directory form into dir (created if absent; existing files of
 * the same names are overwritten).  Fails (-1, reported) on a harness that
 * the directory form cannot hold exactly: names unfit as file names, text
 * lines that would read back as items, multi-line rules or items. */
int     harness_unpack(const json_t *h, const char *dir);
/* Canonical key order (man 5 harness) in place; unknown keys keep their
 * order after the known ones.  harness-pack output goes through this. */
void    harness_canonicalize(json_t *h);

/* What the model sees. */
char   *harness_system_text(const json_t *h);  /* blocks with {params} substituted,
                                                  joined by "\n\n", then the skills
                                                  section: preamble + "- name: description" lines */
/* One skill's line of that section: skill_loader.line's template with
 * {name} and {description} filled, or "- name: description" for tmpl NULL
 * (copy-gen's pick lists use it too). */
char   *harness_skill_line(const char *tmpl, const char *name, const char *description);
/* Why tmpl cannot be a skill_loader.line ("must hold {name}": the model
 * finds a skill's name in its line), or NULL when it can. */
const char *harness_skill_line_error(const char *tmpl);
json_t *harness_tools(const json_t *h);        /* [{"type":"function","function":{name,description,
                                                  parameters}}]: tools then the skill loader,
                                                  "x-" keys stripped */
char   *harness_skill_text(const json_t *h, const json_t *skill); /* "# NAME\n- rule\n..." without
                                                                    the final newline */
char   *harness_block_text(const json_t *h, const json_t *block); /* one block, rendered */
/* A conversation under a harness, rendered as Qwen3's chat template does:
 * the system message is harness_system_text (a leading system message in
 * msgs is replaced), the tools harness_tools; o->tools is ignored.  The
 * one path from (harness, messages) to text, for harness-render,
 * tok-encode --chat, the trainers, rollout and serve.  0 or -1 with *err. */
int     harness_render(chat_text *t, const json_t *h, const json_t *msgs,
                       const chat_opts *o, char **err);

/* Lookups (borrowed references, NULL when absent). */
const json_t *harness_skill_by_name(const json_t *h, const char *name);
const json_t *harness_skill_by_function(const json_t *h, const char *function);
const json_t *harness_tool_by_name(const json_t *h, const char *name);
const json_t *harness_tool_by_function(const json_t *h, const char *function);
const char   *harness_param_name_for(const json_t *tool, const char *xfunction);
/* Numeric prompt param by stable name (max_chars, ...): 0 ok, -1 absent. */
int     harness_param(const json_t *h, const char *param, double *value);
const char   *harness_loader_name(const json_t *h);      /* "load_skill" */
const char   *harness_loader_argument(const json_t *h);  /* "skill" */

/* Fill {name} placeholders from an object of values (strings verbatim,
 * numbers as %g-style integers or shortest reals).  Unknown placeholders
 * and braces that are not placeholders stay as written. */
char   *harness_fill(const char *tmpl, const json_t *vars);

/* Hooks that shape tool output (shared by the simulator and HSA). */
char   *harness_format_error(const json_t *h, const char *tool, const char *fault,
                             const char *message); /* error_format with {code} {message} {tool};
                                                      codes from data/functions.json fault_codes */
char   *harness_wrap_result(const json_t *h, const json_t *result); /* success → compact JSON text */
char   *harness_wrap_error(const json_t *h, const char *formatted); /* failure → text */
/* The inverse: 1 = ok (*result set, new ref), 0 = error (*error set,
 * malloc'd), -1 = the text is not this harness's envelope. */
int     harness_unwrap(const json_t *h, const char *text, json_t **result, char **error);
/* A hook's message template filled with vars; field NULL for string-valued
 * hooks (error_format).  NULL when the hook or field is absent. */
char   *harness_hook_message(const json_t *h, const char *hook, const char *field,
                             const json_t *vars);

/* data/functions.json, loaded once (borrowed; NULL + diagnostic if missing). */
const json_t *harness_functions(void);

/* Lint (harness_lint.c): every problem as {file, path, severity, message},
 * severity "error" or "warning".  origins may be NULL. */
json_t *harness_lint(const json_t *h, const json_t *origins);
/* The file an element came from: the longest origin prefix of path. */
const char *harness_origin(const json_t *origins, const char *path);

/* Diff (harness_diff.c): the changes from a to b, by function, as an array
 * of {change, ...} objects; empty when they are the same harness. */
json_t *harness_diff(const json_t *a, const json_t *b);
/* One change as a line of readable text (malloc'd, no newline). */
char   *harness_diff_text(const json_t *change);

#endif
