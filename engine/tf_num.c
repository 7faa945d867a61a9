/*
 * tf_num: numbers in templates: the arithmetic $(+ A B) ... $(% A B),
 * $(round), $(ceil), $(floor) and the list aggregates $(sum), $(min),
 * $(max), $(average), printed as syslog-ng 3.38 prints them.
 */
#include "engine/tfunc_int.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strtoll over the whole string (leading blanks and a sign allowed), as 3.38's parse_dec_number. */
bool
tf_num_parse_int(const char *s, int base, int64_t *v)
{
    char *end;
    long long x;

    errno = 0;
    x = strtoll(s, &end, base);
    if (errno == ERANGE || errno == EINVAL || end == s || *end) return false;
    *v = x;
    return true;
}

static bool
parse_double(const char *s, double *v)
{
    char *end;
    double x;

    errno = 0;
    x = strtod(s, &end);
    /* 3.38 refuses overflow and underflow alike */
    if (errno == ERANGE || end == s || *end) return false;
    *v = x;
    return true;
}

/* An integer when the text is a decimal integer, a double otherwise. */
struct number {
    bool is_float;
    int64_t i;
    double d;
};

static bool
parse_number(const char *s, struct number *n)
{
    n->is_float = false;
    if (tf_num_parse_int(s, 10, &n->i)) return true;
    n->is_float = true;
    return parse_double(s, &n->d);
}

static double
number_d(const struct number *n)
{
    return n->is_float ? n->d : (double)n->i;
}

/*
 * Converts like x86-64's cvttsd2si, which is what 3.38 prints: out of range and NaN give
 * INT64_MIN.
 */
static int64_t
double_to_int64(double d)
{
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)d;
}

enum arith { A_ADD, A_SUB, A_MUL, A_DIV, A_MOD };

/*
 * Two numbers: integer arithmetic (wrapping on overflow) when both are
 * decimal integers, double arithmetic printed with 20 decimals otherwise;
 * "NaN" for a non-number, a wrong argument count or a zero divisor.
 */
static void
arith(const struct tfunc_call *call, const struct template_env *env, struct buf *out, enum arith op)
{
    struct number a, b;
    struct buf *x, *y;
    bool ok;

    if (call->argc != 2) {
        buf_puts(out, "NaN");
        return;
    }
    x = tfunc_arg_get(call, 0, env);
    y = tfunc_arg_get(call, 1, env);
    ok = parse_number(buf_str(x), &a) && parse_number(buf_str(y), &b);
    template_scratch_put(x);
    template_scratch_put(y);
    if (ok && (op == A_DIV || op == A_MOD)) ok = b.is_float ? fabs(b.d) >= DBL_EPSILON : b.i != 0;
    if (!ok) {
        buf_puts(out, "NaN");
        return;
    }
    if (!a.is_float && !b.is_float) {
        uint64_t u = (uint64_t)a.i, v = (uint64_t)b.i, r = 0;
        switch (op) {
        case A_ADD: r = u + v; break;
        case A_SUB: r = u - v; break;
        case A_MUL: r = u * v; break;
        /* deviation: INT64_MIN / -1 kills 3.38 with SIGFPE; here it wraps */
        case A_DIV: r = b.i == -1 ? 0 - u : (uint64_t)(a.i / b.i); break;
        case A_MOD: r = b.i == -1 ? 0 : (uint64_t)(a.i % b.i); break;
        }
        buf_printf(out, "%" PRId64, (int64_t)r);
    } else {
        double u = number_d(&a), v = number_d(&b), r = 0;
        switch (op) {
        case A_ADD: r = u + v; break;
        case A_SUB: r = u - v; break;
        case A_MUL: r = u * v; break;
        case A_DIV: r = u / v; break;
        case A_MOD: r = fmod(u, v); break;
        }
        buf_printf(out, "%.20f", r);
    }
}

static void
tf_add(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    arith(call, env, out, A_ADD);
}

static void
tf_sub(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    arith(call, env, out, A_SUB);
}

static void
tf_mul(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    arith(call, env, out, A_MUL);
}

static void
tf_div(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    arith(call, env, out, A_DIV);
}

static void
tf_mod(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    arith(call, env, out, A_MOD);
}

/* The one argument as a number, or false (and "NaN" written) for round/ceil/floor. */
static bool
unary_number(const struct tfunc_call *call, const struct template_env *env, struct buf *out,
             int maxargs, double *d)
{
    struct number n;
    struct buf *b;
    bool ok;

    if (call->argc < 1 || call->argc > maxargs) {
        buf_puts(out, "NaN");
        return false;
    }
    b = tfunc_arg_get(call, 0, env);
    ok = parse_number(buf_str(b), &n);
    template_scratch_put(b);
    if (!ok) buf_puts(out, "NaN");
    *d = number_d(&n);
    return ok;
}

/* $(round X [DIGITS]): half away from zero, DIGITS 0..20, printed with exactly DIGITS decimals. */
static void
tf_round(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    int64_t prec = 0;
    double d, m;

    if (call->argc == 2) {
        struct buf *b = tfunc_arg_get(call, 1, env);
        bool ok = tf_num_parse_int(buf_str(b), 10, &prec) && prec >= 0 && prec <= 20;
        template_scratch_put(b);
        if (!ok) {
            buf_puts(out, "NaN");
            return;
        }
    }
    if (!unary_number(call, env, out, 2, &d)) return;
    m = pow(10, (double)prec);
    buf_printf(out, "%.*f", (int)prec, round(d * m) / m);
}

static void
tf_ceil(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    double d;

    if (unary_number(call, env, out, 1, &d)) buf_printf(out, "%" PRId64, double_to_int64(ceil(d)));
}

static void
tf_floor(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    double d;

    if (unary_number(call, env, out, 1, &d)) buf_printf(out, "%" PRId64, double_to_int64(floor(d)));
}

enum aggr { AG_SUM, AG_MIN, AG_MAX, AG_AVG };

/*
 * $(sum T), $(min T), $(max T), $(average T): T is evaluated on every
 * message of the set alone; values that are not decimal integers are
 * skipped; nothing at all when none is.  Integer arithmetic throughout.
 */
static void
aggregate(const struct tfunc_call *call, const struct template_env *env, struct buf *out,
          enum aggr op)
{
    struct buf *b = template_scratch_get();
    int64_t acc = 0, v;
    uint64_t count = 0;
    size_t i;

    for (i = 0; i < env->nmsgs; i++) {
        struct template_env one;
        tfunc_env_one(&one, env, i);
        buf_reset(b);
        tfunc_arg(call, 0, &one, b);
        if (!tf_num_parse_int(buf_str(b), 10, &v)) continue;
        if (count++ == 0)
            acc = v;
        else if (op == AG_SUM || op == AG_AVG)
            acc = (int64_t)((uint64_t)acc + (uint64_t)v);
        else if ((op == AG_MIN && v < acc) || (op == AG_MAX && v > acc))
            acc = v;
    }
    template_scratch_put(b);
    if (!count) return;
    if (op == AG_AVG) acc /= (int64_t)count;
    buf_printf(out, "%" PRId64, acc);
}

static void
tf_sum(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_SUM);
}

static void
tf_min(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_MIN);
}

static void
tf_max(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_MAX);
}

static void
tf_average(const struct tfunc_call *call, const struct template_env *env, struct buf *out)
{
    aggregate(call, env, out, AG_AVG);
}

const struct tfunc tf_num_funcs[] = {
    {"+", 0, -1, NULL, tf_add, NULL, NULL},
    {"-", 0, -1, NULL, tf_sub, NULL, NULL},
    {"*", 0, -1, NULL, tf_mul, NULL, NULL},
    {"/", 0, -1, NULL, tf_div, NULL, NULL},
    {"%", 0, -1, NULL, tf_mod, NULL, NULL},
    {"sum", 1, 1, NULL, tf_sum, NULL, NULL},
    {"min", 1, 1, NULL, tf_min, NULL, NULL},
    {"max", 1, 1, NULL, tf_max, NULL, NULL},
    {"average", 1, 1, NULL, tf_average, NULL, NULL},
    {"round", 0, -1, NULL, tf_round, NULL, NULL},
    {"ceil", 0, -1, NULL, tf_ceil, NULL, NULL},
    {"floor", 0, -1, NULL, tf_floor, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL},
};
