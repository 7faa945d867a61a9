/*
 * Unit tests: the hash functions and the intrusive hash table (engine/hash).
 * The table is checked against a model: every entry added is found under its
 * hash and only there, removals while walking the table lose nothing else,
 * and the table grows without losing entries.  The keyed hash: SipHash-1-3
 * reference values, keys made to share a bucket under an unkeyed hash
 * (FNV-1a) spread over the table, other keys give other values, every
 * thread and forked child uses the process's key and another process draws
 * its own.  A correlation key (corrkey) hashes as the bytes of its parts in
 * a fixed layout, short or long.  Also the FNV-1a reference values, and
 * durable_read_file, which refuses what is not a regular file and what is
 * over its bound.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "engine/corrkey.h"
#include "engine/durable.h"
#include "engine/hash.h"
#include "tests/unit/unit_run.h"

struct item {
    int id;
    struct hash_node node;
    bool in;
};

#define N 5000

/* few distinct hashes, so that chains hold several entries of one hash */
static uint64_t
item_hash(int id)
{
    return hash_string(&(int){id % 1237}, sizeof(int));
}

START_TEST(test_fnv1a_reference)
{
    /* published FNV-1a 64 test vectors */
    ck_assert_uint_eq(hash_fnv1a(HASH_FNV1A_BASIS, "", 0), 0xcbf29ce484222325ULL);
    ck_assert_uint_eq(hash_fnv1a(HASH_FNV1A_BASIS, "a", 1), 0xaf63dc4c8601ec8cULL);
    ck_assert_uint_eq(hash_fnv1a(HASH_FNV1A_BASIS, "foobar", 6), 0x85944171f73967e8ULL);
    ck_assert_uint_eq(hash_fnv1a(hash_fnv1a(HASH_FNV1A_BASIS, "foo", 3), "bar", 3),
                      hash_fnv1a(HASH_FNV1A_BASIS, "foobar", 6));
}
END_TEST

/* key 00 01 .. 0f, as in the SipHash paper's vectors */
static const struct hash_key ref_key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

START_TEST(test_siphash13_reference)
{
    /* SipHash-1-3 of the bytes 00 01 .. n-1 under ref_key: from an implementation of the paper's
     * algorithm that gives its SipHash-2-4 vector with 2 and 4 rounds, and CPython 3.11's
     * siphash13 (PYTHONHASHSEED=0: the zero key) with 1 and 3 */
    static const struct {
        size_t n;
        uint64_t h;
    } v[] = {{0, 0xabac0158050fc4dcULL},  {1, 0xc9f49bf37d57ca93ULL}, {7, 0xd3927d989bb11140ULL},
             {8, 0x369095118d299a8eULL},  {9, 0x25a48eb36c063de4ULL}, {15, 0xd320d86d2a519956ULL},
             {16, 0xcc4fdd1a7d908b66ULL}, {63, 0x9d199062b7bbb3a8ULL}};
    unsigned char msg[64];
    size_t i;

    for (i = 0; i < sizeof(msg); i++) msg[i] = (unsigned char)i;
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ck_assert_uint_eq(hash_keyed_string(&ref_key, msg, v[i].n), v[i].h);
    /* a chain link hashes its 8 bytes of h (little-endian) before the data */
    ck_assert_uint_eq(hash_keyed_bytes(&ref_key, 0x0102030405060708ULL, "abc", 3),
                      0x264840c4a62de100ULL);
    /* and an empty part changes nothing (corrkey_hash: an id left out and an empty one) */
    ck_assert_uint_eq(hash_keyed_bytes(&ref_key, 12345, "", 0), 12345);
    ck_assert_uint_eq(hash_bytes(hash_bytes(HASH_START, "ab", 2), "", 0),
                      hash_bytes(HASH_START, "ab", 2));
}
END_TEST

/* Parts hashed with hash_add hash as their concatenation does, however they are cut. */
START_TEST(test_parts_as_concatenation)
{
    unsigned char msg[64];
    struct hash_state st;
    size_t n, a, b;

    for (n = 0; n < sizeof(msg); n++) msg[n] = (unsigned char)(n * 7 + 1);
    for (n = 0; n <= sizeof(msg); n++)
        for (a = 0; a <= n; a++)
            for (b = a; b <= n; b += 3) {
                hash_keyed_begin(&st, &ref_key);
                hash_add(&st, msg, a);
                hash_add(&st, msg + a, 0);
                hash_add(&st, msg + a, b - a);
                hash_add(&st, msg + b, n - b);
                ck_assert_uint_eq(hash_end(&st), hash_keyed_string(&ref_key, msg, n));
            }
    hash_begin(&st);
    hash_add(&st, "web1", 4);
    ck_assert_uint_eq(hash_end(&st), hash_string("web1", 4));
}
END_TEST

/*
 * A correlation key hashes as its layout: the scope, the four lengths (32
 * bits each), then host, program, pid and id; processes that share a hash
 * key (a cluster's partitions) rely on it.  Keys of every length around the
 * size hashed from one buffer, and past it, to check both ways.
 */
START_TEST(test_corrkey_layout)
{
    static char text[600];
    static unsigned char want[700];
    size_t hostlen, idlen, i;
    struct corrkey k;

    for (i = 0; i < sizeof(text); i++) text[i] = (char)('a' + i % 26);
    for (hostlen = 0; hostlen <= 9; hostlen += 3)
        for (idlen = 0; idlen <= 300; idlen++) {
            uint32_t lens[4] = {(uint32_t)hostlen, 4, 5, (uint32_t)idlen};
            size_t n = 0;
            memset(&k, 0, sizeof(k));
            k.scope = PDB_SCOPE_PROCESS;
            k.host = text + 100;
            k.hostlen = hostlen;
            k.prog = "sshd";
            k.proglen = 4;
            k.pid = "41981";
            k.pidlen = 5;
            k.id = idlen ? text + 200 : NULL;
            k.idlen = idlen;
            memcpy(want + n, &k.scope, sizeof(k.scope));
            n += sizeof(k.scope);
            memcpy(want + n, lens, sizeof(lens));
            n += sizeof(lens);
            memcpy(want + n, k.host, hostlen);
            n += hostlen;
            memcpy(want + n, "sshd41981", 9);
            n += 9;
            memcpy(want + n, text + 200, idlen);
            n += idlen;
            ck_assert_msg(corrkey_hash_keyed(&k, &ref_key) == hash_keyed_string(&ref_key, want, n),
                          "host %zu, id %zu bytes", hostlen, idlen);
            /* an empty id and none hash alike */
            k.id = text + 200;
            ck_assert_uint_eq(corrkey_hash_keyed(&k, &ref_key),
                              hash_keyed_string(&ref_key, want, n));
        }
}
END_TEST

/*
 * n keys whose FNV-1a hashes share their low 16 bits (so one bucket of any
 * table up to 65,536 buckets), each "hNNNNNN" and two bytes chosen so: the
 * low 16 bits of FNV-1a depend on the low 16 bits of its state only, and the
 * prime is odd, so invertible modulo 2^16.
 */
#define FLOOD     4096
#define FLOOD_LEN 9
static void
fnv1a_colliding(char keys[][FLOOD_LEN], size_t n)
{
    const uint64_t prime = 1099511628211ULL;
    uint64_t inv = prime, target, h, h1;
    size_t found = 0;
    unsigned i, b1;
    char pre[8];

    for (i = 0; i < 5; i++) inv *= 2 - prime * inv; /* Newton: prime * inv = 1 modulo 2^64 */
    target = hash_fnv1a(HASH_FNV1A_BASIS, "target!!!", FLOOD_LEN) & 0xffff;
    for (i = 0; found < n && i < 100 * n; i++) {
        snprintf(pre, sizeof(pre), "h%06u", i);
        h = hash_fnv1a(HASH_FNV1A_BASIS, pre, 7);
        for (b1 = 0; b1 < 256; b1++) {
            /* the last byte b2: ((h1 ^ b2) * prime) & 0xffff == target */
            uint64_t want = (target * inv) & 0xffff;
            h1 = (h ^ b1) * prime;
            if ((h1 & 0xff00) != (want & 0xff00)) continue;
            memcpy(keys[found], pre, 7);
            keys[found][7] = (char)b1;
            keys[found][8] = (char)((h1 ^ want) & 0xff);
            found++;
            break;
        }
    }
    ck_assert_uint_eq(found, n);
}

struct flood_item {
    struct hash_node node;
    const char *key;
};

START_TEST(test_flood_spreads)
{
    static char keys[FLOOD][FLOOD_LEN];
    static struct flood_item items[FLOOD];
    struct hash_table t;
    size_t i, b, longest = 0;

    fnv1a_colliding(keys, FLOOD);
    for (i = 0; i < FLOOD; i++)
        ck_assert_uint_eq(hash_fnv1a(HASH_FNV1A_BASIS, keys[i], FLOOD_LEN) & 0xffff,
                          hash_fnv1a(HASH_FNV1A_BASIS, keys[0], FLOOD_LEN) & 0xffff);
    hash_table_init(&t, 16);
    for (i = 0; i < FLOOD; i++) {
        items[i].key = keys[i];
        hash_table_add(&t, &items[i].node, hash_string(keys[i], FLOOD_LEN));
    }
    /* FNV-1a put all 4,096 in one bucket; a random function puts at most about 7 in one of 4,096
     * buckets (more than 16: less likely than 1 in 10^12) */
    for (b = 0; b < t.nbuckets; b++) {
        size_t len = 0;
        struct hash_node *n;
        for (n = t.buckets[b]; n; n = n->next) len++;
        if (len > longest) longest = len;
    }
    ck_assert_uint_le(longest, 16);
    for (i = 0; i < FLOOD; i++) {
        struct hash_node *n = hash_table_find(&t, hash_string(keys[i], FLOOD_LEN));
        ck_assert_ptr_eq(hash_entry(n, struct flood_item, node), &items[i]);
    }
    hash_table_free(&t);
}
END_TEST

START_TEST(test_keys_differ)
{
    struct hash_key other = ref_key;
    size_t i, same = 0;
    char in[16];

    other.k1 ^= 1; /* one bit of the key */
    ck_assert(hash_process_key.k0 || hash_process_key.k1);
    for (i = 0; i < 1000; i++) {
        int len = snprintf(in, sizeof(in), "web%zu", i);
        uint64_t a = hash_keyed_string(&ref_key, in, (size_t)len);
        ck_assert_uint_eq(a,
                          hash_keyed_string(&ref_key, in, (size_t)len)); /* same key, same hash */
        same += a == hash_keyed_string(&other, in, (size_t)len);
        same += a == hash_string(in, (size_t)len);
        same += hash_keyed_bytes(&ref_key, HASH_START, in, (size_t)len) ==
                hash_keyed_bytes(&other, HASH_START, in, (size_t)len);
    }
    ck_assert_uint_eq(same, 0);
}
END_TEST

#define NTHREADS   4
#define PER_THREAD 2000

static uint64_t
thread_key_hash(size_t i)
{
    char in[32];
    int len = snprintf(in, sizeof(in), "host-%zu", i);

    return hash_bytes(hash_bytes(HASH_START, "sshd", 4), in, (size_t)len);
}

static void *
hash_thread(void *arg)
{
    uint64_t *out = arg;
    size_t i;

    for (i = 0; i < PER_THREAD; i++) out[i] = thread_key_hash(i);
    return NULL;
}

/* Threads started at any time hash as the main thread does (the shards of the parallel engine
 * depend on it), and so does a forked child. */
START_TEST(test_threads_agree)
{
    static uint64_t out[NTHREADS][PER_THREAD];
    pthread_t th[NTHREADS];
    uint64_t child;
    size_t i, k;
    int fds[2], status;
    pid_t pid;

    for (k = 0; k < NTHREADS; k++)
        ck_assert_int_eq(pthread_create(&th[k], NULL, hash_thread, out[k]), 0);
    for (k = 0; k < NTHREADS; k++) ck_assert_int_eq(pthread_join(th[k], NULL), 0);
    for (k = 0; k < NTHREADS; k++)
        for (i = 0; i < PER_THREAD; i++) ck_assert_uint_eq(out[k][i], thread_key_hash(i));
    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child = thread_key_hash(7);
        _exit(write(fds[1], &child, sizeof(child)) == sizeof(child) ? 0 : 1);
    }
    close(fds[1]);
    ck_assert_int_eq(read(fds[0], &child, sizeof(child)), (ssize_t)sizeof(child));
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_uint_eq(child, thread_key_hash(7));
}
END_TEST

/* What this program prints when run with the argument "key": its process's key. */
static int
print_key(void)
{
    printf("%016llx%016llx\n", (unsigned long long)hash_process_key.k0,
           (unsigned long long)hash_process_key.k1);
    return 0;
}

/* This program's key as another run of it prints it. */
static void
key_of_another_run(char *out, size_t size)
{
    char *argv[] = {"test_hash", "key", NULL};
    int fds[2], status;
    ssize_t n;
    pid_t pid;
    posix_spawn_file_actions_t fa;

    ck_assert_int_eq(pipe(fds), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    ck_assert_int_eq(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, NULL), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    n = read(fds[0], out, size - 1);
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(n, 33);
    out[n] = '\0';
}

START_TEST(test_each_process_draws_a_key)
{
    char a[64], b[64], mine[64];

    snprintf(mine, sizeof(mine), "%016llx%016llx\n", (unsigned long long)hash_process_key.k0,
             (unsigned long long)hash_process_key.k1);
    key_of_another_run(a, sizeof(a));
    key_of_another_run(b, sizeof(b));
    ck_assert_str_ne(a, b);
    ck_assert_str_ne(a, mine);
    ck_assert_str_ne(b, mine);
}
END_TEST

static size_t
count_found(struct hash_table *t, struct item *items, int id)
{
    struct hash_node *n;
    size_t found = 0;

    for (n = hash_table_find(t, item_hash(id)); n; n = hash_table_find_next(n)) {
        struct item *it = hash_entry(n, struct item, node);
        ck_assert_uint_eq(n->hash, item_hash(id));
        if (it == &items[id]) found++;
    }
    return found;
}

START_TEST(test_table_against_model)
{
    static struct item items[N];
    struct hash_table t;
    struct hash_node *n, *next;
    size_t i, walked = 0, live = 0;
    int id;

    hash_table_init(&t, 1);
    ck_assert_uint_eq(t.nbuckets, 16);
    for (id = 0; id < N; id++) {
        items[id].id = id;
        items[id].in = true;
        hash_table_add(&t, &items[id].node, item_hash(id));
    }
    ck_assert_uint_eq(t.count, N);
    ck_assert_uint_ge(t.nbuckets, N);
    for (id = 0; id < N; id++) ck_assert_uint_eq(count_found(&t, items, id), 1);

    /* remove every third entry while walking the whole table */
    for (n = hash_table_iter(&t, &i, NULL); n; n = next) {
        struct item *it = hash_entry(n, struct item, node);
        next = hash_table_iter(&t, &i, n);
        walked++;
        if (it->id % 3 == 0) {
            hash_table_remove(&t, n);
            it->in = false;
        }
    }
    ck_assert_uint_eq(walked, N);
    for (id = 0; id < N; id++) {
        ck_assert_uint_eq(count_found(&t, items, id), items[id].in ? 1 : 0);
        live += items[id].in;
    }
    ck_assert_uint_eq(t.count, live);
    walked = 0;
    for (n = hash_table_iter(&t, &i, NULL); n; n = hash_table_iter(&t, &i, n)) walked++;
    ck_assert_uint_eq(walked, live);
    hash_table_free(&t);
}
END_TEST

START_TEST(test_read_file)
{
    char path[] = "/tmp/corral-test-hash-XXXXXX";
    int fd = mkstemp(path);
    char *data;
    size_t len = 99;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "ab\0cd", 5), 5);
    close(fd);
    data = durable_read_file(path, DURABLE_MAX_STATE, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(len, 5);
    ck_assert_int_eq(memcmp(data, "ab\0cd", 6), 0); /* NUL-terminated after the data */
    free(data);
    /* over the bound: refused whole, not cut */
    errno = 0;
    ck_assert_ptr_null(durable_read_file(path, 4, &len));
    ck_assert_int_eq(errno, EFBIG);
    data = durable_read_file(path, 5, &len);
    ck_assert_ptr_nonnull(data);
    free(data);
    unlink(path);
    errno = 0;
    ck_assert_ptr_null(durable_read_file(path, DURABLE_MAX_STATE, &len));
    ck_assert_int_eq(errno, ENOENT);
    /* a FIFO without a writer would block, /dev/zero never end: both refused at once */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    errno = 0;
    ck_assert_ptr_null(durable_read_file(path, DURABLE_MAX_STATE, &len));
    ck_assert_int_eq(errno, DURABLE_ENOTREG);
    ck_assert_str_eq(durable_strerror(errno), "not a regular file");
    unlink(path);
    errno = 0;
    ck_assert_ptr_null(durable_read_file("/dev/zero", DURABLE_MAX_STATE, &len));
    ck_assert_int_eq(errno, DURABLE_ENOTREG);
    ck_assert_ptr_null(durable_read_file("/tmp", DURABLE_MAX_STATE, &len));
}
END_TEST

int
main(int argc, char **argv)
{
    Suite *s;
    TCase *tc;

    /* the child of test_each_process_draws_a_key: nothing allocated, so nothing leaks */
    if (argc == 2 && strcmp(argv[1], "key") == 0) return print_key();
    s = suite_create("hash");
    tc = tcase_create("core");
    tcase_add_test(tc, test_fnv1a_reference);
    tcase_add_test(tc, test_siphash13_reference);
    tcase_add_test(tc, test_parts_as_concatenation);
    tcase_add_test(tc, test_corrkey_layout);
    tcase_add_test(tc, test_flood_spreads);
    tcase_add_test(tc, test_keys_differ);
    tcase_add_test(tc, test_threads_agree);
    tcase_add_test(tc, test_each_process_draws_a_key);
    tcase_add_test(tc, test_table_against_model);
    tcase_add_test(tc, test_read_file);
    suite_add_tcase(s, tc);
    return unit_run(s);
}
