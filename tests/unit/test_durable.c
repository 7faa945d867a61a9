/*
 * test_durable: the binary encoding of state files and spools
 * (engine/wire.c) and crash-safe writing (engine/durable.c): round trips,
 * reads past the end, the CRC, and the atomic replace.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/buf.h"
#include "engine/durable.h"
#include "engine/wire.h"
#include "tests/unit/unit_run.h"

START_TEST(test_wire_round_trip)
{
    struct buf b = BUF_INIT;
    struct wire_reader r;
    const char *p;
    size_t n;

    wire_put32(&b, 0xdeadbeefu);
    wire_put64(&b, 0x0123456789abcdefULL);
    wire_put_bytes(&b, "hello", 5);
    wire_put_bytes(&b, "", 0);
    ck_assert_uint_eq(b.len, 4 + 8 + 4 + 5 + 4);
    /* little-endian on every host */
    ck_assert_int_eq((unsigned char)b.p[0], 0xef);
    ck_assert_int_eq((unsigned char)b.p[3], 0xde);
    wire_reader_init(&r, b.p, b.len);
    ck_assert_uint_eq(wire_get32(&r), 0xdeadbeefu);
    ck_assert(wire_get64(&r) == 0x0123456789abcdefULL);
    p = wire_get_bytes(&r, &n);
    ck_assert_uint_eq(n, 5);
    ck_assert(memcmp(p, "hello", 5) == 0);
    p = wire_get_bytes(&r, &n);
    ck_assert_uint_eq(n, 0);
    ck_assert(!r.bad);
    ck_assert_ptr_eq(r.p, r.end);
    buf_free(&b);
}
END_TEST

START_TEST(test_wire_store_load)
{
    unsigned char four[4];

    wire_store32(four, 0x01020304u);
    ck_assert_int_eq(four[0], 4);
    ck_assert_int_eq(four[3], 1);
    ck_assert_uint_eq(wire_load32(four), 0x01020304u);
}
END_TEST

/* Every cut of a record reads as bad, with zeros and empty strings, never past the end. */
START_TEST(test_wire_short_reads)
{
    struct buf b = BUF_INIT;
    size_t len, n;

    wire_put32(&b, 7);
    wire_put64(&b, 8);
    wire_put_bytes(&b, "abc", 3);
    for (len = 0; len < b.len; len++) {
        struct wire_reader r;
        uint32_t a;
        uint64_t c;
        const char *s;
        wire_reader_init(&r, b.p, len);
        a = wire_get32(&r);
        c = wire_get64(&r);
        s = wire_get_bytes(&r, &n);
        ck_assert_msg(r.bad, "cut at %zu not noticed", len);
        ck_assert(a == 7 || a == 0);
        ck_assert(c == 8 || c == 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_ptr_nonnull(s);
        /* once bad, stays bad */
        ck_assert_uint_eq(wire_get32(&r), 0);
        ck_assert(r.bad);
    }
    buf_free(&b);
}
END_TEST

/* A length prefix larger than what is left is bad, not a read past the end. */
START_TEST(test_wire_huge_length)
{
    struct buf b = BUF_INIT;
    struct wire_reader r;
    size_t n = 99;

    wire_put32(&b, 0xffffffffu);
    buf_append(&b, "xy", 2);
    wire_reader_init(&r, b.p, b.len);
    wire_get_bytes(&r, &n);
    ck_assert(r.bad);
    ck_assert_uint_eq(n, 0);
    buf_free(&b);
}
END_TEST

START_TEST(test_crc32)
{
    /* the standard check value of CRC-32/IEEE */
    ck_assert_uint_eq(durable_crc32(0, "123456789", 9), 0xcbf43926u);
    ck_assert_uint_eq(durable_crc32(0, "", 0), 0);
    /* continuing in pieces gives the same */
    ck_assert_uint_eq(durable_crc32(durable_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
    /* a single flipped bit changes it */
    ck_assert_uint_ne(durable_crc32(0, "123456788", 9), 0xcbf43926u);
    /* eight bytes at a time agrees with one at a time, over every split and length */
    {
        unsigned char data[300];
        uint32_t whole, bytewise;
        size_t len, i, cut;

        for (i = 0; i < sizeof(data); i++) data[i] = (unsigned char)(i * 131 + 7);
        for (len = 0; len <= sizeof(data); len += 37) {
            whole = durable_crc32(0, data, len);
            bytewise = 0;
            for (i = 0; i < len; i++) bytewise = durable_crc32(bytewise, data + i, 1);
            ck_assert_uint_eq(whole, bytewise);
            for (cut = 0; cut <= len; cut += 5)
                ck_assert_uint_eq(durable_crc32(durable_crc32(0, data, cut), data + cut, len - cut),
                                  whole);
        }
        /* a known value over more than eight bytes: CRC-32 of 32 zero bytes */
        memset(data, 0, 32);
        ck_assert_uint_eq(durable_crc32(0, data, 32), 0x190a55adu);
    }
}
END_TEST

static char workdir[256];

static void
setup(void)
{
    char tmpl[] = "/tmp/corral-test-durable-XXXXXX";

    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(workdir, sizeof(workdir), "%s", tmpl);
}

static void
teardown(void)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", workdir);
}

static void
read_all(const char *path, struct buf *b)
{
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t n;

    buf_reset(b);
    ck_assert_ptr_nonnull(f);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(b, chunk, n);
    fclose(f);
}

/* Only the file itself is left in the directory: no temporary files. */
static void
only_file(const char *name)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s')\" = '%s'", workdir, name);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_replace)
{
    char path[512];
    struct buf b = BUF_INIT;
    struct stat st;

    snprintf(path, sizeof(path), "%s/state", workdir);
    ck_assert_int_eq(durable_replace(path, "first", 5), 0);
    read_all(path, &b);
    ck_assert_uint_eq(b.len, 5);
    ck_assert(memcmp(b.p, "first", 5) == 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    /* replaced whole, shorter */
    ck_assert_int_eq(durable_replace(path, "2nd", 3), 0);
    read_all(path, &b);
    ck_assert_uint_eq(b.len, 3);
    ck_assert(memcmp(b.p, "2nd", 3) == 0);
    ck_assert_int_eq(durable_replace(path, "", 0), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    only_file("state");
    buf_free(&b);
}
END_TEST

/* When the new file cannot be written, the old one stays as it was. */
START_TEST(test_replace_fails_keeps_old)
{
    char path[512], dir[600];
    struct buf b = BUF_INIT;

    snprintf(path, sizeof(path), "%s/state", workdir);
    ck_assert_int_eq(durable_replace(path, "old", 3), 0);
    /* the target is a directory: the rename fails */
    snprintf(dir, sizeof(dir), "%s/dir", workdir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    errno = 0;
    ck_assert_int_eq(durable_replace(dir, "new", 3), -1);
    ck_assert_int_ne(errno, 0);
    rmdir(dir);
    /* a directory that does not exist */
    snprintf(dir, sizeof(dir), "%s/missing/state", workdir);
    ck_assert_int_eq(durable_replace(dir, "new", 3), -1);
    ck_assert_int_eq(errno, ENOENT);
    read_all(path, &b);
    ck_assert_uint_eq(b.len, 3);
    ck_assert(memcmp(b.p, "old", 3) == 0);
    only_file("state");
    buf_free(&b);
}
END_TEST

/* A relative path: the directory fsync'ed is ".". */
START_TEST(test_replace_relative)
{
    struct buf b = BUF_INIT;

    ck_assert_int_eq(chdir(workdir), 0);
    ck_assert_int_eq(durable_replace("rel", "x", 1), 0);
    read_all("rel", &b);
    ck_assert_uint_eq(b.len, 1);
    only_file("rel");
    buf_free(&b);
}
END_TEST

START_TEST(test_write_all)
{
    int fds[2];
    char big[200000], back[200000];
    size_t got = 0;
    pid_t pid;

    memset(big, 'z', sizeof(big));
    big[sizeof(big) - 1] = '!';
    ck_assert_int_eq(pipe(fds), 0);
    /* more than a pipe holds: write() returns short, write_all goes on */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        _exit(durable_write_all(fds[1], big, sizeof(big)) == 0 ? 0 : 1);
    }
    close(fds[1]);
    for (;;) {
        ssize_t n = read(fds[0], back + got, sizeof(back) - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fds[0]);
    ck_assert_uint_eq(got, sizeof(big));
    ck_assert(memcmp(big, back, sizeof(big)) == 0);
    /* and an error is returned, not retried */
    ck_assert_int_eq(durable_write_all(-1, "x", 1), -1);
    ck_assert_int_eq(errno, EBADF);
}
END_TEST

/* Pieces written whole, an empty one among them; a fault cuts the first one short, then fails. */
START_TEST(test_writev_all)
{
    char path[512];
    struct buf b = BUF_INIT;
    struct iovec v[4];
    int fd;

    snprintf(path, sizeof(path), "%s/v", workdir);
    fd = durable_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    v[0] = (struct iovec){"ab", 2};
    v[1] = (struct iovec){"", 0};
    v[2] = (struct iovec){"cde", 3};
    v[3] = (struct iovec){"f", 1};
    ck_assert_int_eq(durable_writev_all(fd, v, 4), 0);
    durable_fault_set(DURABLE_OP_WRITE, 1, DURABLE_FAULT_SHORT, ENOSPC);
    v[0] = (struct iovec){"1234", 4};
    v[1] = (struct iovec){"5", 1};
    ck_assert_int_eq(durable_writev_all(fd, v, 2), -1);
    ck_assert_int_eq(errno, ENOSPC);
    durable_fault_clear();
    close(fd);
    read_all(path, &b);
    ck_assert_uint_eq(b.len, 8);
    ck_assert(memcmp(b.p, "abcdef12", 8) == 0);
    buf_free(&b);
}
END_TEST

/* The fault hook: the nth call fails, once or from then on; a short write, then an error. */
START_TEST(test_fault_hook)
{
    char path[512];
    struct buf b = BUF_INIT;
    int fd;

    snprintf(path, sizeof(path), "%s/f", workdir);
    fd = durable_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    durable_fault_set(DURABLE_OP_WRITE, 2, DURABLE_FAULT_ONCE, ENOSPC);
    ck_assert_int_eq(durable_write(fd, "ab", 2), 2);
    ck_assert_int_eq(durable_write(fd, "cd", 2), -1);
    ck_assert_int_eq(errno, ENOSPC);
    ck_assert_int_eq(durable_write(fd, "ef", 2), 2);
    ck_assert_uint_eq(durable_fault_calls(DURABLE_OP_WRITE), 3);
    ck_assert_uint_eq(durable_fault_failed(DURABLE_OP_WRITE), 1);
    durable_fault_set(DURABLE_OP_WRITE, 1, DURABLE_FAULT_PERSIST, EIO);
    ck_assert_int_eq(durable_write(fd, "gh", 2), -1);
    ck_assert_int_eq(durable_write(fd, "gh", 2), -1);
    ck_assert_int_eq(errno, EIO);
    /* half of 5 bytes, rounded up, then the error: write_all stops there */
    durable_fault_set(DURABLE_OP_WRITE, 1, DURABLE_FAULT_SHORT, ENOSPC);
    ck_assert_int_eq(durable_write_all(fd, "12345", 5), -1);
    ck_assert_int_eq(errno, ENOSPC);
    durable_fault_set(DURABLE_OP_WRITE, 0, DURABLE_FAULT_ONCE, 0); /* disarmed */
    ck_assert_int_eq(durable_write(fd, "!", 1), 1);
    durable_fault_set(DURABLE_OP_SYNC, 1, DURABLE_FAULT_ONCE, EIO);
    ck_assert_int_eq(durable_sync(fd, 1), -1);
    ck_assert_int_eq(durable_sync(fd, 0), 0);
    close(fd);
    read_all(path, &b);
    ck_assert_uint_eq(b.len, 8);
    ck_assert(memcmp(b.p, "abef123!", 8) == 0);
    durable_fault_set(DURABLE_OP_OPEN, 1, DURABLE_FAULT_ONCE, EMFILE);
    ck_assert_int_eq(durable_open(path, O_RDONLY, 0), -1);
    ck_assert_int_eq(errno, EMFILE);
    durable_fault_set(DURABLE_OP_RENAME, 1, DURABLE_FAULT_ONCE, EXDEV);
    ck_assert_int_eq(durable_replace(path, "x", 1), -1);
    ck_assert_int_eq(errno, EXDEV);
    durable_fault_clear();
    read_all(path, &b);
    ck_assert_uint_eq(b.len, 8);
    only_file("f");
    buf_free(&b);
}
END_TEST

static void
check_dir_of(const char *path, const char *want)
{
    char *dir = durable_dir_of(path);

    ck_assert_str_eq(dir, want);
    free(dir);
}

START_TEST(test_dir_of)
{
    check_dir_of("/var/lib/corrald/state", "/var/lib/corrald");
    check_dir_of("/state", "/");
    check_dir_of("state", ".");
    check_dir_of("run/state", "run");
    durable_sync_dir("state"); /* the current directory: nothing to see, nothing to crash */
    durable_sync_dir("/nonexistent-dir/state");
}
END_TEST

static Suite *
durable_suite(void)
{
    Suite *s = suite_create("durable");
    TCase *wire = tcase_create("wire"), *file = tcase_create("file");

    tcase_add_test(wire, test_wire_round_trip);
    tcase_add_test(wire, test_wire_store_load);
    tcase_add_test(wire, test_wire_short_reads);
    tcase_add_test(wire, test_wire_huge_length);
    tcase_add_test(wire, test_crc32);
    tcase_add_test(wire, test_dir_of);
    suite_add_tcase(s, wire);
    tcase_add_checked_fixture(file, setup, teardown);
    tcase_add_test(file, test_replace);
    tcase_add_test(file, test_replace_fails_keeps_old);
    tcase_add_test(file, test_replace_relative);
    tcase_add_test(file, test_write_all);
    tcase_add_test(file, test_fault_hook);
    tcase_add_test(file, test_writev_all);
    suite_add_tcase(s, file);
    return s;
}

int
main(void)
{
    return unit_run(durable_suite());
}
