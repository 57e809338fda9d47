/* cache.h: Hugging Face repo ids and the local hub cache, laid out as huggingface_hub lays
 * it out (so `huggingface-cli download`, transformers and `hymt pull` share one copy).
 *
 *   CACHE/models--ORG--NAME/refs/<revision>          the commit hash a branch or tag names
 *   CACHE/models--ORG--NAME/snapshots/<commit>/<path> symlinks into ../../blobs/
 *   CACHE/models--ORG--NAME/blobs/<etag>              the files (etag: sha256 for LFS files,
 *                                                     the git blob id for the others)
 *
 * CACHE is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE (the older name), else $HF_HOME/hub,
 * else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's
 * constants.py; a leading ~ is expanded). A revision of 40 lowercase hex digits is a commit
 * and names its snapshot directly; any other revision is looked up in refs/ (default "main").
 * Everything read from the environment and from refs/ is validated before it becomes part
 * of a path. No state: any thread may call these. */
#ifndef HY_HUB_CACHE_H
#define HY_HUB_CACHE_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>

#define HY_HUB_PATH_MAX 4096
#define HY_HUB_REPO_MAX 96  /* huggingface_hub's limit on a repo id */
#define HY_HUB_REV_MAX 256
#define HY_HUB_DEFAULT_REVISION "main"

/* Errors of this module name whole paths, longer than a struct hy_err holds. */
struct hy_hub_err {
    char msg[2 * HY_HUB_PATH_MAX];
};

/* A parsed "ORG/NAME[@REVISION]". */
struct hy_hub_id {
    char repo[HY_HUB_REPO_MAX + 1];    /* "tencent/Hunyuan-MT-7B" */
    char revision[HY_HUB_REV_MAX + 1]; /* "main" when none was given */
    bool has_revision;                 /* "@REVISION" was part of the text */
};

/* Parses s as a repo id: ORG/NAME, each part letters, digits, '-', '_' or '.', neither
 * starting nor ending with '-' or '.', no "--" or ".." (huggingface_hub's rules), at most
 * HY_HUB_REPO_MAX characters; optionally "@REVISION" (printable, no spaces, no ".." or
 * empty path parts). false (and *id untouched) when s is not one. */
bool hy_hub_id_parse(const char *s, struct hy_hub_id *id);

/* True when no '/'-separated part of s[0..n) is "." or "..": a relative path from outside
 * (a revision, a file name from the server) then stays below the folder it is joined to. */
bool hy_hub_parts_ok(const char *s, size_t n);

/* True for 40 lowercase hex digits (huggingface_hub's REGEX_COMMIT_HASH). */
bool hy_hub_is_commit(const char *s);

/* The cache folder into buf, and into *source (if non-NULL) the variable it came from
 * ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME" or "HOME").
 * HY_E_INVAL when none of them is set or a value is too long. */
hy_status hy_hub_cache_dir(char *buf, size_t cap, const char **source, struct hy_hub_err *err);

/* CACHE/models--ORG--NAME into buf. */
hy_status hy_hub_repo_dir(const struct hy_hub_id *id, char *buf, size_t cap, struct hy_hub_err *err);

/* The snapshot folder of id in the cache: refs/<revision> read (or the revision itself when
 * it is a commit), snapshots/<commit> checked to be a folder. HY_E_NOTFOUND with a message
 * naming the cache folder, where it came from and the path that is missing, ending in
 * "run `hymt pull ID`"; HY_E_FORMAT for a refs file that does not hold a commit hash. */
hy_status hy_hub_snapshot(const struct hy_hub_id *id, char *buf, size_t cap,
                          struct hy_hub_err *err);

/* What `-m ARG` names: an existing file or folder (as is; it wins over a repo id of the same
 * spelling), else a repo id resolved with hy_hub_snapshot, and in a snapshot without a
 * config.json, its one .gguf file. path gets what the loaders take; name (may be NULL) the
 * model's display name: the repo id, or the last component of the path given. Anything
 * else is HY_E_NOTFOUND "no such file or folder". */
hy_status hy_hub_resolve_model(const char *arg, char *path, size_t path_cap, char *name,
                               size_t name_cap, struct hy_hub_err *err);

#endif
