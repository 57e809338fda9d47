/* kv_collide_test.c: the whole kv suite again with every chain hash cut to 2 bits, so nearly
 * every lookup meets colliding entries: prefix matches must still be exact (tokens and parent
 * compared), and the hash table must stay consistent with long probe runs. */
#define KV_HASH_MASK 0x3ULL
#include "engine/kv.c"
#include "engine/kv_test.c"
