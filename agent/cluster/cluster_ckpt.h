/*
 * cluster_ckpt: a partition's checkpoint in the cluster's state bucket,
 * of any size: split into chunks each below what one value may hold (the
 * servers' max payload), written before a small head record that names
 * them, so that a reader never takes a half-written checkpoint for a
 * whole one.  See cluster_ckpt.c.
 */
#ifndef CORRAL_CLUSTER_CKPT_H
#define CORRAL_CLUSTER_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/cluster/cluster.h"
#include "engine/buf.h"

/* One complete checkpoint as a head names it: its slot, chunks, size and SHA-256 (hex). */
struct cluster_ckpt_gen {
    unsigned slot, chunks;
    uint64_t bytes;
    char sum[65];
};

/* What the writer of partition p's checkpoints knows of them (the lease thread's). */
struct cluster_ckpt {
    uint64_t rev;                /* of the head; 0: none written or read */
    struct cluster_ckpt_gen cur; /* the whole one the head names first: not overwritten next */
    int have_cur;
    unsigned left[2]; /* chunks each slot may hold from earlier writes */
};

/*
 * Writes data as p's checkpoint: the chunks (in the slot the head does
 * not name as current), then the head on its revision (the fencing token),
 * then deletes what the slot held beyond the new chunks.  max is the most
 * bytes a value may hold.  CLUSTER_OK, CLUSTER_CONFLICT (another node
 * wrote the head since) or CLUSTER_ERROR.
 */
int cluster_ckpt_write(const struct cluster_backend *be, struct cluster_log *log, unsigned p,
                       struct cluster_ckpt *c, const char *data, size_t len, size_t max);

/*
 * Reads p's checkpoint into out: the one the head names as current, or
 * the previous one when that is incomplete or damaged (each counted in
 * *damaged).  CLUSTER_OK; CLUSTER_ABSENT when there is none, or none whole
 * (c still holds the head's revision); CLUSTER_ERROR when the servers do
 * not answer.  c is set for cluster_ckpt_write.
 */
int cluster_ckpt_read(const struct cluster_backend *be, struct cluster_log *log, unsigned p,
                      struct cluster_ckpt *c, struct buf *out, uint64_t *damaged);

#endif
