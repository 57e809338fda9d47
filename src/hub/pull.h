/* pull.h: `hymt pull`: downloads a Hugging Face model repo into the hub cache (cache.h) with
 * libcurl, as huggingface_hub's snapshot_download lays it out.
 *
 * Steps: GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true gives the commit ("sha")
 * and the files ("siblings": rfilename, size, blobId, lfs.sha256/lfs.size); the include and
 * exclude patterns pick files (fnmatch as Python's fnmatchcase: '*' crosses '/', a pattern
 * ending in '/' takes the folder); for each file a HEAD of {endpoint}/{repo}/resolve/
 * {commit}/{path} (relative redirects followed, as huggingface_hub does) gives the blob
 * name (X-Linked-Etag, else ETag, quotes and W/ dropped) and size (X-Linked-Size); the GET
 * follows redirects (the CDN) into blobs/<etag>.incomplete, resuming with Range from what
 * is there, retried on a broken transfer. A file is kept only when its size matches and its
 * sha256 (LFS files: lfs.sha256) or git blob id (the others: sha1 of "blob N\0" + bytes)
 * does; a mismatch deletes the download. Only when every file is in blobs/ are the
 * snapshots/<commit>/<path> symlinks made and refs/<rev> written, so a failed pull leaves
 * no snapshot that looks complete. A blob already present is not downloaded again.
 * Concurrent pulls of one blob wait on CACHE/.locks/<repo folder>/<etag>.lock (flock, as
 * huggingface_hub's filelock). The token goes only to the endpoint's host (curl drops it
 * on a redirect elsewhere). Everything the server sends is validated: JSON shapes, commit
 * hashes, file names (no absolute paths, "..", or control characters), sizes. */
#ifndef HY_HUB_PULL_H
#define HY_HUB_PULL_H

#include "hub/cache.h"

#include <stdio.h>

#define HY_HUB_DEFAULT_ENDPOINT "https://huggingface.co"
#define HY_HUB_MAX_PATTERNS 32

enum hy_hub_progress {
    HY_HUB_PROGRESS_NONE,
    HY_HUB_PROGRESS_BAR,   /* one line redrawn with \r (a terminal) */
    HY_HUB_PROGRESS_LINES, /* a line at every 10% of the bytes to fetch (logs, pipes) */
};

struct hy_hub_pull_opts {
    const char *endpoint; /* NULL: HY_HUB_DEFAULT_ENDPOINT; http:// or https:// */
    const char *token;    /* NULL: none; sent as Authorization: Bearer */
    const char *include[HY_HUB_MAX_PATTERNS];
    int n_include; /* 0: every file */
    const char *exclude[HY_HUB_MAX_PATTERNS];
    int n_exclude;
    enum hy_hub_progress progress;
    FILE *out;   /* progress and per-file lines (stderr when NULL) */
    int retries; /* extra attempts of a broken transfer, each resuming (0: none) */
};

/* Pulls id into the cache; on success the snapshot folder is in snapshot. Not
 * thread-safe (one pull a process: curl_global_init). */
hy_status hy_hub_pull(const struct hy_hub_id *id, const struct hy_hub_pull_opts *o,
                      char *snapshot, size_t cap, struct hy_hub_err *err);

/* Does path match pattern as huggingface_hub's filter_repo_objects matches it? */
bool hy_hub_pattern_match(const char *pattern, const char *path);

#endif
