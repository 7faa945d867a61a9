/*
 * Unit tests of the stream framer (agent/net/framer.c): RFC 6587 octet
 * counting, newline framing and auto detection.
 *
 * Every case is fed whole, byte by byte, and cut in two (and, for short
 * inputs, in three) at every position: a socket may return any split of the
 * stream, and the messages must come out the same.  The expectations are
 * written from RFC 6587 (3.4.1 octet counting, 3.4.2 non-transparent
 * framing) plus the rules framing.h states: a CR before LF is dropped, empty
 * messages are skipped, over-long messages are cut at max and their rest
 * skipped, a malformed count is an error, and EOF delivers a last line.
 */
#include "agent/net/framer.h"
#include "tests/unit/unit_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L(s) s, sizeof(s) - 1

/* What a run produced: the messages, joined as "msg|msg|" with a '~' after cut ones. */
struct got {
    char out[65536];
    size_t len;
    int nmsgs;
    int ntrunc;
    size_t maxlen; /* longest message delivered */
};

static void
collect(void *arg, const char *data, size_t len, bool truncated)
{
    struct got *g = arg;

    ck_assert_msg(len > 0, "empty message delivered");
    if (len > g->maxlen) g->maxlen = len;
    g->nmsgs++;
    if (truncated) g->ntrunc++;
    if (g->len + len + 2 < sizeof(g->out)) {
        memcpy(g->out + g->len, data, len);
        g->len += len;
        if (truncated) g->out[g->len++] = '~';
        g->out[g->len++] = '|';
    }
}

/*
 * Feeds in[0..n) cut at the given positions (ascending, within n), then EOF
 * if eof.  Returns -1 if a feed failed (malformed count), -2 if EOF reported
 * an incomplete frame, else 0.  Stops feeding after a failure, as a
 * connection would be closed.
 */
static int
run(enum conf_framing fr, size_t max, const char *in, size_t n, const size_t *cuts, int ncuts,
    bool eof, struct got *g)
{
    struct framer f;
    size_t at = 0;
    int i, rc = 0;

    memset(g, 0, sizeof(*g));
    framer_init(&f, fr, max, collect, g);
    for (i = 0; i <= ncuts && rc == 0; i++) {
        size_t to = i < ncuts ? cuts[i] : n;
        if (framer_feed(&f, in + at, to - at) < 0) rc = -1;
        at = to;
    }
    if (rc == 0 && eof && framer_eof(&f) < 0) rc = -2;
    framer_free(&f);
    g->out[g->len] = '\0';
    return rc;
}

/* Checks one case under every way of cutting it. */
static void
check_case(enum conf_framing fr, size_t max, const char *in, size_t n, bool eof, const char *want,
           int want_rc)
{
    struct got g;
    size_t cuts[3], i, j, k;
    struct framer f;
    int rc;

    rc = run(fr, max, in, n, NULL, 0, eof, &g);
    ck_assert_msg(rc == want_rc, "whole: rc %d, want %d (input \"%.*s\")", rc, want_rc, (int)n, in);
    ck_assert_msg(strcmp(g.out, want) == 0, "whole: got \"%s\", want \"%s\"", g.out, want);

    for (i = 0; i <= n; i++) {
        cuts[0] = i;
        rc = run(fr, max, in, n, cuts, 1, eof, &g);
        ck_assert_msg(rc == want_rc && strcmp(g.out, want) == 0,
                      "cut at %zu: rc %d got \"%s\", want rc %d \"%s\"", i, rc, g.out, want_rc,
                      want);
    }
    if (n <= 80) {
        for (i = 0; i <= n; i++)
            for (j = i; j <= n; j++) {
                cuts[0] = i;
                cuts[1] = j;
                rc = run(fr, max, in, n, cuts, 2, eof, &g);
                ck_assert_msg(rc == want_rc && strcmp(g.out, want) == 0,
                              "cut at %zu,%zu: rc %d got \"%s\", want rc %d \"%s\"", i, j, rc,
                              g.out, want_rc, want);
            }
    }

    /* byte by byte */
    memset(&g, 0, sizeof(g));
    framer_init(&f, fr, max, collect, &g);
    rc = 0;
    for (k = 0; k < n && rc == 0; k++)
        if (framer_feed(&f, in + k, 1) < 0) rc = -1;
    if (rc == 0 && eof && framer_eof(&f) < 0) rc = -2;
    framer_free(&f);
    g.out[g.len] = '\0';
    ck_assert_msg(rc == want_rc && strcmp(g.out, want) == 0,
                  "byte by byte: rc %d got \"%s\", want rc %d \"%s\"", rc, g.out, want_rc, want);
}

#define NL CONF_FRAMING_NEWLINE
#define OC CONF_FRAMING_OCTET_COUNTING
#define AU CONF_FRAMING_AUTO

START_TEST(test_newline)
{
    check_case(NL, 100, L("a\nbb\nccc\n"), false, "a|bb|ccc|", 0);
    check_case(NL, 100, L("<13>Jan  1 00:00:00 host prog: hello\n"), false,
               "<13>Jan  1 00:00:00 host prog: hello|", 0);
    /* without EOF a last unterminated line waits; with EOF it is delivered */
    check_case(NL, 100, L("a\nb"), false, "a|", 0);
    check_case(NL, 100, L("a\nb"), true, "a|b|", 0);
    check_case(NL, 100, L("a\n"), true, "a|", 0);
    check_case(NL, 100, L(""), true, "", 0);
    /* empty lines are not messages */
    check_case(NL, 100, L("\n\na\n\n\nb\n\n"), true, "a|b|", 0);
}
END_TEST

START_TEST(test_crlf)
{
    check_case(NL, 100, L("a\r\nbb\r\n"), false, "a|bb|", 0);
    /* only the CR right before the LF goes; others are data */
    check_case(NL, 100, L("a\rb\r\r\n"), false, "a\rb\r|", 0);
    check_case(NL, 100, L("\r\n\r\nx\r\n"), false, "x|", 0);
    /* EOF after a CR: the CR is dropped like a line end's */
    check_case(NL, 100, L("abc\r"), true, "abc|", 0);
}
END_TEST

START_TEST(test_nul_bytes)
{
    struct got g;
    static const char in[] = "a\0b\n\0\n\xff\xfe garbage \x01\n";

    /* NUL and invalid UTF-8 are data like any other byte */
    ck_assert_int_eq(run(NL, 100, in, sizeof(in) - 1, NULL, 0, false, &g), 0);
    ck_assert_int_eq(g.nmsgs, 3);
    ck_assert_int_eq(g.len, 3 + 1 + 1 + 1 + 12 + 1);
    ck_assert(memcmp(g.out, "a\0b|\0|\xff\xfe garbage \x01|", g.len) == 0);
    ck_assert_int_eq(run(OC, 100,
                         L("3 \0\0\0"
                           "2 a\0"),
                         NULL, 0, false, &g),
                     0);
    ck_assert_int_eq(g.nmsgs, 2);
    ck_assert_int_eq(g.len, 3 + 1 + 2 + 1);
    ck_assert(memcmp(g.out, "\0\0\0|a\0|", g.len) == 0);
    /* NULs in place of digits are a malformed count */
    ck_assert_int_eq(run(OC, 100, L("\0\0"), NULL, 0, false, &g), -1);
}
END_TEST

START_TEST(test_newline_oversize)
{
    /* cut at max, flagged, the rest of the line skipped up to its LF */
    check_case(NL, 8, L("0123456789AB\nshort\n"), false, "01234567~|short|", 0);
    check_case(NL, 8, L("0123456789AB\r\nshort\r\n"), false, "01234567~|short|", 0);
    /* exactly max, and max followed by the CR of a CRLF: not cut */
    check_case(NL, 8, L("01234567\n01234567\r\nx\n"), false, "01234567|01234567|x|", 0);
    /* max + 1 is cut, with or without CR */
    check_case(NL, 8, L("012345678\n012345678\r\n"), false, "01234567~|01234567~|", 0);
    /* an over-long last line at EOF, and one that is still being skipped */
    check_case(NL, 8, L("a\n0123456789"), true, "a|01234567~|", 0);
    check_case(NL, 8, L("0123456789AB"), false, "01234567~|", 0);
    check_case(NL, 8, L("0123456789AB"), true, "01234567~|", 0);
    check_case(NL, 8, L("01234567\r"), true, "01234567|", 0);
    check_case(NL, 8, L("012345678\r"), true, "01234567~|", 0);
}
END_TEST

/* A 10 MB line costs max bytes of memory, and the next line arrives intact. */
START_TEST(test_huge_line)
{
    static char chunk[65536];
    struct got g;
    struct framer f;
    size_t i;

    memset(chunk, 'x', sizeof(chunk));
    memset(&g, 0, sizeof(g));
    framer_init(&f, NL, 1000, collect, &g);
    ck_assert_int_eq(framer_feed(&f, "first\n", 6), 0);
    for (i = 0; i < 160; i++) {
        ck_assert_int_eq(framer_feed(&f, chunk, sizeof(chunk)), 0);
        ck_assert_uint_le(f.cap, 1001);
        ck_assert_uint_eq(framer_pending(&f), 0);
    }
    ck_assert_int_eq(framer_feed(&f, "tail\nnext\n", 10), 0);
    ck_assert_int_eq(g.nmsgs, 3);
    ck_assert_int_eq(g.ntrunc, 1);
    ck_assert_uint_eq(g.maxlen, 1000);
    g.out[g.len] = '\0';
    ck_assert(strncmp(g.out, "first|xxx", 9) == 0);
    ck_assert(strcmp(g.out + g.len - 6, "|next|") == 0);
    framer_free(&f);

    /* the same through octet counting: a 10 MB frame */
    memset(&g, 0, sizeof(g));
    framer_init(&f, OC, 1000, collect, &g);
    ck_assert_int_eq(framer_feed(&f, "10485760 ", 9), 0);
    for (i = 0; i < 160; i++) {
        ck_assert_int_eq(framer_feed(&f, chunk, sizeof(chunk)), 0);
        ck_assert_uint_le(f.cap, 1001);
    }
    ck_assert_int_eq(framer_feed(&f, "4 next", 6), 0);
    ck_assert_int_eq(g.nmsgs, 2);
    ck_assert_int_eq(g.ntrunc, 1);
    g.out[g.len] = '\0';
    ck_assert(strcmp(g.out + g.len - 6, "|next|") == 0);
    framer_free(&f);
}
END_TEST

START_TEST(test_octet)
{
    check_case(OC, 100, L("3 abc5 hello"), false, "abc|hello|", 0);
    check_case(OC, 100, L("11 line1\nline2"), false, "line1\nline2|", 0);
    /* a message's own trailing LF (or CRLF) is dropped */
    check_case(OC, 100, L("4 abc\n5 def\r\n"), false, "abc|def|", 0);
    /* senders that put a newline after each frame too */
    check_case(OC, 100, L("3 abc\n3 def\r\n\n3 ghi"), false, "abc|def|ghi|", 0);
    /* leading zeros are tolerated */
    check_case(OC, 100, L("003 abc"), false, "abc|", 0);
    /* a frame of a lone LF is empty once the LF goes */
    check_case(OC, 100, L("1 \n1 x"), false, "x|", 0);
    check_case(OC, 100, L("3 ab"), false, "", 0);
    /* EOF mid-frame: what came is delivered, and it is an error */
    check_case(OC, 100, L("3 abc3 de"), true, "abc|de|", -2);
    check_case(OC, 100, L("3 abc12"), true, "abc|", -2);
    check_case(OC, 100, L("3 abc\n"), true, "abc|", 0);
}
END_TEST

START_TEST(test_octet_oversize)
{
    check_case(OC, 4,
               L("10 0123456789"
                 "2 ok"),
               false, "0123~|ok|", 0);
    check_case(OC, 4,
               L("4 0123"
                 "5 01234"
                 "4 abcd"),
               false, "0123|0123~|abcd|", 0);
    /* the cut message goes out at once, not when its rest has been skipped */
    check_case(OC, 4, L("10 01234"), false, "0123~|", 0);
    check_case(OC, 4, L("10 01234"), true, "0123~|", 0);
    /* a frame of 999,999,999 bytes is fine to announce (it is skipped) */
    check_case(OC, 4, L("999999999 abcdef"), false, "abcd~|", 0);
}
END_TEST

START_TEST(test_octet_malformed)
{
    check_case(OC, 100, L("abc\n"), false, "", -1);
    check_case(OC, 100, L("<13>hello\n"), false, "", -1);
    check_case(OC, 100, L("3 abc12x 3 def"), false, "abc|", -1);
    check_case(OC, 100, L("3 abc 3 def"), false, "abc|", -1);
    check_case(OC, 100, L("0 3 abc"), false, "", -1);
    check_case(OC, 100, L("1234567890 x"), false, "", -1);
    check_case(OC, 100, L(" 3 abc"), false, "", -1);
    check_case(OC, 100, L("3\tabc"), false, "", -1);
    check_case(OC, 100, L("-3 abc"), false, "", -1);
}
END_TEST

START_TEST(test_auto)
{
    /* digits, a space and the '<' of a priority: octet counting (later frames need no '<') */
    check_case(AU, 100, L("6 <1>abc5 hello"), false, "<1>abc|hello|", 0);
    check_case(AU, 100, L("17 <13>Jan  1 host x"), false, "<13>Jan  1 host x|", 0);
    /* anything else: newline framing */
    check_case(AU, 100, L("<13>a\n<14>b\n"), false, "<13>a|<14>b|", 0);
    check_case(AU, 100, L("\n3 abc\n"), false, "3 abc|", 0);
    /* digits not followed by a space are the start of a line, not a count */
    check_case(AU, 100, L("2024-05-01 host prog: x\nnext\n"), false,
               "2024-05-01 host prog: x|next|", 0);
    check_case(AU, 100, L("123\n45 x\n"), false, "123|45 x|", 0);
    check_case(AU, 100, L("123"), true, "123|", 0);
    check_case(AU, 100, L("123\r"), true, "123|", 0);
    check_case(AU, 100, L("0 zero\n"), false, "0 zero|", 0);
    check_case(AU, 100, L("1234567890 ten digits\n"), false, "1234567890 ten digits|", 0);
    check_case(AU, 100, L("12345\nafter\n"), false, "12345|after|", 0);
    /* digits and a space without a '<' after them: a line that begins with a number */
    check_case(AU, 100, L("30 connections dropped\n4 retries\n"), false,
               "30 connections dropped|4 retries|", 0);
    check_case(AU, 100, L("3 abc"), true, "3 abc|", 0);
    check_case(AU, 100, L("3 "), true, "3 |", 0);
    /* the decision holds for the whole stream: later frames are not re-detected */
    check_case(AU, 100, L("4 <1>a<13>x\n"), false, "<1>a|", -1);
    check_case(AU, 100, L("<13>x\n3 abc\n"), false, "<13>x|3 abc|", 0);
    /* a probe that fails on a short limit */
    check_case(AU, 4, L("123456789x\nab\n"), false, "1234~|ab|", 0);
}
END_TEST

START_TEST(test_reset_and_pending)
{
    struct got g;
    struct framer f;

    memset(&g, 0, sizeof(g));
    framer_init(&f, AU, 100, collect, &g);
    ck_assert_int_eq(framer_feed(&f, "abc", 3), 0);
    ck_assert_uint_eq(framer_pending(&f), 3);
    ck_assert_int_eq(framer_feed(&f, "\nde", 3), 0);
    ck_assert_uint_eq(framer_pending(&f), 2);
    framer_reset(&f);
    ck_assert_uint_eq(framer_pending(&f), 0);
    /* after a reset auto detection starts over: this stream counts octets */
    ck_assert_int_eq(framer_feed(&f, "3 <xy5 ab", 9), 0);
    ck_assert_uint_eq(framer_pending(&f), 4);
    ck_assert_int_eq(framer_eof(&f), -1);
    /* framer_eof resets too */
    ck_assert_int_eq(framer_feed(&f, "z\n", 2), 0);
    g.out[g.len] = '\0';
    ck_assert_str_eq(g.out, "abc|<xy|ab|z|");
    framer_free(&f);
}
END_TEST

/* Random bytes in random pieces: no crash, no message over max, no empty message. */
START_TEST(test_random)
{
    static char in[4096];
    static const char alphabet[] = "0123456789 \n\r<>abc\0";
    unsigned long long rng = 0x9e3779b97f4a7c15ULL;
    struct got g;
    struct framer f;
    int round;
    size_t i, at, step;

    for (round = 0; round < 3000; round++) {
        enum conf_framing fr = (enum conf_framing)(round % 3);
        size_t max = 1 + (size_t)(round % 37);
        for (i = 0; i < sizeof(in); i++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            in[i] = alphabet[rng % (sizeof(alphabet) - 1)];
        }
        memset(&g, 0, sizeof(g));
        framer_init(&f, fr, max, collect, &g);
        for (at = 0; at < sizeof(in); at += step) {
            step = 1 + (size_t)(rng % 300);
            if (step > sizeof(in) - at) step = sizeof(in) - at;
            if (framer_feed(&f, in + at, step) < 0) framer_reset(&f);
            ck_assert_uint_le(f.cap, max + 1 > 256 ? max + 1 : 256);
        }
        framer_eof(&f);
        ck_assert_uint_le(g.maxlen, max);
        framer_free(&f);
    }
}
END_TEST

static Suite *
framing_suite(void)
{
    Suite *s = suite_create("framing");
    TCase *tc = tcase_create("framing");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_newline);
    tcase_add_test(tc, test_crlf);
    tcase_add_test(tc, test_nul_bytes);
    tcase_add_test(tc, test_newline_oversize);
    tcase_add_test(tc, test_huge_line);
    tcase_add_test(tc, test_octet);
    tcase_add_test(tc, test_octet_oversize);
    tcase_add_test(tc, test_octet_malformed);
    tcase_add_test(tc, test_auto);
    tcase_add_test(tc, test_reset_and_pending);
    tcase_add_test(tc, test_random);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return unit_run(framing_suite());
}
