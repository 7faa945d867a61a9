/*
 * relit: the required literal of a regular expression, a prefilter for it
 * (see relit.h).  A conservative reading: whatever it does not understand
 * gives no literal, never a wrong one.
 */
#include "engine/relit.h"

#include <stdbool.h>
#include <string.h>

/* Escapes of one character with no argument that match something other than themselves. */
static const char class_escapes[] = "dDwWsShHvVRbBAzZGKntrfea";

static unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/*
 * Inside a class, the ']' that closes a POSIX class opening at re[i] ("[:",
 * "[." or "[="), or 0 when PCRE2 does not read one there and the '[' is a
 * member.  As PCRE2 reads it: the first ":]" (of the same kind) closes it,
 * unless a ']' or another "[:" comes first; "\]" and "\\" are skipped.
 */
static size_t
posix_end(const char *re, size_t n, size_t i)
{
    char kind = re[i + 1];
    size_t j;

    for (j = i + 2; j + 1 < n; j++) {
        if (re[j] == '\\' && (re[j + 1] == ']' || re[j + 1] == '\\'))
            j++;
        else if ((re[j] == '[' && re[j + 1] == kind) || re[j] == ']')
            return 0;
        else if (re[j] == kind && re[j + 1] == ']')
            return j + 1;
    }
    return 0;
}

/* The end of the class opening at re[i] ('['), past its ']'; 0 when it has none. */
static size_t
skip_class(const char *re, size_t n, size_t i)
{
    size_t e;

    i++;
    if (i < n && re[i] == '^') i++;
    if (i < n && re[i] == ']') i++; /* a ']' first is a member */
    while (i < n && re[i] != ']') {
        if (re[i] == '\\') {
            if (i + 1 < n && (re[i + 1] == 'Q' || re[i + 1] == 'E')) return 0;
            i++;
        } else if (re[i] == '[' && i + 1 < n &&
                   (re[i + 1] == ':' || re[i + 1] == '.' || re[i + 1] == '=')) {
            /* [:alpha:] (and [.x.], [=x=]) */
            if ((e = posix_end(re, n, i))) i = e;
        }
        i++;
    }
    return i < n ? i + 1 : 0;
}

/* The end of the group opening at re[i] ('('), past its ')'; 0 when unbalanced or quoting. */
static size_t
skip_group(const char *re, size_t n, size_t i)
{
    size_t depth = 0;

    while (i < n) {
        if (re[i] == '\\') {
            if (i + 1 < n && (re[i + 1] == 'Q' || re[i + 1] == 'E')) return 0;
            i += 2;
        } else if (re[i] == '[') {
            if (!(i = skip_class(re, n, i))) return 0;
        } else {
            if (re[i] == '(') depth++;
            if (re[i] == ')' && --depth == 0) return i + 1;
            i++;
        }
    }
    return 0;
}

/* Whether re[i] ('{') starts a quantifier {n}, {n,} or {n,m}; its minimum in *min, its end in *end.
 */
static bool
brace_quantifier(const char *re, size_t n, size_t i, unsigned long *min, size_t *end)
{
    size_t j = i + 1;
    unsigned long v = 0;
    bool digits = false;

    while (j < n && re[j] >= '0' && re[j] <= '9') {
        if (v < 100000) v = v * 10 + (unsigned long)(re[j] - '0');
        digits = true;
        j++;
    }
    if (!digits) return false;
    if (j < n && re[j] == ',') {
        j++;
        while (j < n && re[j] >= '0' && re[j] <= '9') j++;
    }
    if (j >= n || re[j] != '}') return false;
    *min = v;
    *end = j + 1;
    return true;
}

size_t
relit_required(const char *re, size_t n, char *out, size_t cap)
{
    char cur[256];
    size_t i = 0, run = 0, best = 0;

    if (cap > sizeof(cur)) cap = sizeof(cur);
#define END_RUN()                                                                                  \
    do {                                                                                           \
        if (run > best) {                                                                          \
            memcpy(out, cur, run);                                                                 \
            best = run;                                                                            \
        }                                                                                          \
        run = 0;                                                                                   \
    } while (0)
    while (i < n) {
        unsigned char c = (unsigned char)re[i];
        unsigned long min;
        size_t end;
        switch (c) {
        case '\\':
            if (i + 1 >= n) return 0;
            c = (unsigned char)re[i + 1];
            if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                /* \d, \b ... end a run; escapes with arguments or back-references: no literal */
                if (!strchr(class_escapes, c)) return 0;
                END_RUN();
                i += 2;
                continue;
            }
            i += 2;
            if (c >= 0x80) { /* part of a character: see below */
                END_RUN();
                continue;
            }
            break;          /* an escaped punctuation character is itself */
        case '|': return 0; /* at the top level: none of the branches is required */
        case '(':
            if (i + 2 < n && re[i + 1] == '?') { /* inline options: x changes what follows */
                size_t j;
                for (j = i + 2; j < n && re[j] != ')' && re[j] != ':'; j++)
                    if (re[j] == 'x') return 0;
            }
            END_RUN();
            if (!(i = skip_group(re, n, i))) return 0;
            continue;
        case ')': return 0;
        case '[':
            END_RUN();
            if (!(i = skip_class(re, n, i))) return 0;
            continue;
        case '.':
        case '^':
        case '$':
            END_RUN();
            i++;
            continue;
        case '*':
        case '?':
            if (run) run--; /* the character before may be absent */
            END_RUN();
            i++;
            continue;
        case '+':
            END_RUN();
            i++;
            continue;
        case '{':
            if (brace_quantifier(re, n, i, &min, &end)) {
                if (!min && run) run--;
                END_RUN();
                i = end;
            } else {
                /* "{,3}" or "{ 2 }": a literal in some PCRE2 versions, a quantifier in others
                 * (10.43): the character before may be absent, and what the braces hold is no
                 * literal */
                if (run) run--;
                END_RUN();
                for (i++; i < n && strchr("0123456789, ", re[i]); i++) continue;
                if (i < n && re[i] == '}') i++;
            }
            continue;
        default:
            i++;
            /* a byte of a multi-byte character: with (*UTF) a quantifier after it applies to
             * the whole character, so it is not taken */
            if (c >= 0x80) {
                END_RUN();
                continue;
            }
            break;
        }
        if (run < cap) cur[run++] = (char)lower(c);
        /* a run at its cap keeps its prefix, which is required too; a quantifier that follows
         * then applies to a character not in it */
        else {
            END_RUN();
            while (i < n && re[i] != '\\' && !strchr("|()[.^$*?+{", re[i])) i++;
        }
    }
    END_RUN();
#undef END_RUN
    return best;
}
