/* convert_toks.c: a checkpoint folder's tokenizer files as convert embeds them (convert.h). */
#include "cli/convert.h"

#include "core/json.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static hy_status read_json_opt(const char *dir, const char *file, json_t **out, struct hy_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    *out = NULL;
    if (access(path, F_OK) != 0)
        return HY_OK;
    return hy_json_load_file(out, path, HY_TOK_MAX_FILE, err);
}

/* chat_template: tokenizer_config.json's string, else chat_template.jinja (at most 1 MiB). */
static hy_status read_template(struct hy_convert_toks *t, const char *dir, struct hy_err *err)
{
    const json_t *j = json_object_get(t->tok_config, "chat_template");
    if (json_is_string(j))
        return (t->chat_template = strdup(json_string_value(j)))
                   ? HY_OK
                   : hy_err_set(err, HY_E_NOMEM, "out of memory");
    char path[4096];
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return HY_OK;
    t->chat_template = calloc(1, 1 << 20);
    size_t n = t->chat_template ? fread(t->chat_template, 1, (1 << 20) - 1, f) : 0;
    bool more = fgetc(f) != EOF;
    fclose(f);
    if (!t->chat_template)
        return hy_err_set(err, HY_E_NOMEM, "out of memory");
    t->chat_template[n] = 0;
    return more ? hy_err_set(err, HY_E_RANGE, "%s: larger than 1 MiB", path) : HY_OK;
}

hy_status hy_convert_toks_open(struct hy_convert_toks *t, const char *dir, struct hy_err *err)
{
    memset(t, 0, sizeof *t);
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    hy_status s = HY_OK;
    if (access(path, F_OK) == 0) {
        s = hy_tok_load(&t->tok, dir, err);
        if (!s)
            s = hy_json_load_file(&t->tok_json, path, HY_TOK_MAX_FILE, err);
    }
    if (!s)
        s = read_json_opt(dir, "tokenizer_config.json", &t->tok_config, err);
    if (!s)
        s = read_json_opt(dir, "generation_config.json", &t->gen_config, err);
    if (!s)
        s = read_template(t, dir, err);
    return s;
}

void hy_convert_toks_close(struct hy_convert_toks *t)
{
    hy_tok_destroy(t->tok);
    json_decref(t->tok_json);
    json_decref(t->tok_config);
    json_decref(t->gen_config);
    free(t->chat_template);
    memset(t, 0, sizeof *t);
}
