/* loadrates.c - the data loader's rates file (loadrates.h): twelve
 * entries, each a value and its source.
 * Not for: using the rates (cost/loader.c). */
#include "model/loadrates.h"

#include <stddef.h>
#include <stdio.h>

#include "util/doc.h"

static const char *const entry_keys[] = {"value", "source", NULL};

/* The file's entries, in its order, and where each lands. */
static const struct {
    const char *key;
    size_t off;
} entries[] = {
    {"jpeg_decode_mpx_s", offsetof(mm_loader_rates, jpeg_mpx_s)},
    {"jpeg_decode_fixed_s", offsetof(mm_loader_rates, jpeg_fixed_s)},
    {"resize_small_mpx_s", offsetof(mm_loader_rates, resize_small_mpx_s)},
    {"resize_grid_mpx_s", offsetof(mm_loader_rates, resize_grid_mpx_s)},
    {"video_decode_cpu_mpx_s", offsetof(mm_loader_rates, video_cpu_mpx_s)},
    {"video_decode_nvdec_mpx_s", offsetof(mm_loader_rates, video_nvdec_mpx_s)},
    {"tokenize_tokens_s", offsetof(mm_loader_rates, tokens_s)},
    {"copy_bytes_per_pixel", offsetof(mm_loader_rates, bytes_per_pixel)},
    {"copy_bytes_per_token", offsetof(mm_loader_rates, bytes_per_token)},
    {"audio_features_s_per_clip", offsetof(mm_loader_rates, audio_clip_s)},
    {"copy_bytes_per_audio_clip", offsetof(mm_loader_rates, bytes_per_clip)},
    {"pipe_recv_bytes_s", offsetof(mm_loader_rates, pipe_bytes_s)},
};
enum { N_ENTRIES = sizeof entries / sizeof entries[0] };

/* One {value, source} entry into *out. */
static int read_entry(const mm_doc *d, mm_node *root, const char *key, double *out, mm_err *err)
{
    mm_node *e = mm_node_get(root, key);
    char path[96], src[512];
    if (!e)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(root), key, "missing required key");
    int rc = mm_node_check_keys(d, e, key, entry_keys, err);
    bool found = false;
    snprintf(path, sizeof path, "%s.value", key);
    if (!rc)
        rc = mm_node_double(d, e, "value", path, 1e-12, 1e15, out, &found, err);
    if (!rc && !found)
        rc = mm_err_set(err, MM_EINPUT, d->path, mm_node_line(e), path, "missing required key");
    snprintf(path, sizeof path, "%s.source", key);
    found = false;
    if (!rc)
        rc = mm_node_str(d, e, "source", path, src, sizeof src, &found, err);
    if (!rc && (!found || !src[0]))
        rc = mm_err_set(err, MM_EINPUT, d->path, mm_node_line(e), path,
                        "every rate names its source (paper and table, or repository and path)");
    return rc;
}

int mm_loader_rates_load(const char *path, mm_loader_rates *r, mm_err *err)
{
    mm_doc d;
    int rc = mm_doc_load_file(&d, path, err);
    if (rc)
        return rc;
    mm_node *root = mm_doc_root(&d);
    const char *allowed[N_ENTRIES + 1];
    for (int i = 0; i < N_ENTRIES; i++)
        allowed[i] = entries[i].key;
    allowed[N_ENTRIES] = NULL;
    rc = mm_node_check_keys(&d, root, "", allowed, err);
    for (int i = 0; !rc && i < N_ENTRIES; i++)
        rc = read_entry(&d, root, entries[i].key, (double *)((char *)r + entries[i].off), err);
    mm_doc_free(&d);
    return rc;
}
