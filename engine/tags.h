/*
 * tags: the registry of tag names.  Tags are interned like value names so a
 * message carries a short list of integer ids.
 */
#ifndef CORRAL_TAGS_H
#define CORRAL_TAGS_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t tag_id;

enum {
    TAG_NONE = 0,
    TAG_CLASSIFIER_UNKNOWN, /* .classifier.unknown */
    TAG_CLASSIFIER_SYSTEM,  /* .classifier.system */
    TAG_NBUILTIN
};

#define TAG_MAX_TAGS 65536

/* Returns the id of a tag, registering it if new; 0 if the registry is full. */
tag_id tag_intern(const char *name, size_t len);
tag_id tag_lookup(const char *name, size_t len);
const char *tag_name(tag_id id, size_t *len);

#endif
