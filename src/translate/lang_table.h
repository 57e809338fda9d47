/* lang_table.h: the language table as data (internal to translate/; lang.h has the public
 * contract). The rows come from src/translate/languages.tsv, which the build checks and
 * turns into C (cmake/lang_table.cmake writes generated/lang_table.c): adding a language
 * or a model generation is a change to that file, not to code. Everything here is const
 * and lives for the program: thread-safe, nothing to free. */
#ifndef HY_TRANSLATE_LANG_TABLE_H
#define HY_TRANSLATE_LANG_TABLE_H

#include "translate/lang.h"

#include <stddef.h>
#include <stdint.h>

/* One row: the public entry, the aliases lookups accept ("|"-separated, "" for none) and
 * the generations that translate it (bit i: hy_lang_gen_names[i]). */
struct hy_lang_row {
    struct hy_lang lang; /* first: a struct hy_lang * of the table is its row's address */
    const char *aliases;
    uint32_t gens;
};

extern const size_t hy_lang_n_rows;             /* >= 1, at most 1000 */
extern const struct hy_lang_row hy_lang_rows[]; /* [hy_lang_n_rows], the file's order */
extern const size_t hy_lang_n_gens;             /* >= 1, at most 32 */
extern const char *const hy_lang_gen_names[];   /* [hy_lang_n_gens]: "mt1", "mt1.5", ... */

#endif
