/* gen.h: one generation request on the engine for the OpenAI routes: submit the prompt
 * (the engine's notify hook schedules the request's worker), take in the tokens the engine
 * has published without waiting, decode them incrementally, and apply stop strings,
 * holding back text that could still become one. Run by the request's worker only; the
 * text buffer grows with the output, bounded by max_tokens x HY_DETOK_MAX_OUT.
 * Errors: start returns HY_E_NOSPACE when the engine queue is full (429), HY_E_RANGE /
 * HY_E_INVAL for a request that can never run (400). */
#ifndef HY_SERVER_GEN_H
#define HY_SERVER_GEN_H

#include "server/http.h"

#define HY_GEN_MAX_STOP_STRINGS 4
#define HY_GEN_MAX_STOP_LEN 256

struct hy_gen_params {
    int max_tokens;
    struct hy_sampler_params sampling;
    bool ignore_eos;
    char stop[HY_GEN_MAX_STOP_STRINGS][HY_GEN_MAX_STOP_LEN];
    int n_stop;
    bool logprobs;    /* the engine's log-probabilities of each token (engine/logprob.h) */
    int top_logprobs; /* 0..HY_LOGPROB_MAX_TOP alternatives each */
};

struct hy_gen {
    struct hy_http_req *req;
    uint64_t handle;
    bool submitted, done;
    struct hy_detok detok;
    struct hy_http_buf text; /* everything generated, stop strings applied */
    size_t emitted;          /* bytes of text already handed out */
    size_t searched;         /* stop strings were looked for up to here */
    struct hy_gen_params p;
    int n_prompt, n_generated;
    enum hy_finish finish;
    bool stopped_by_string;
    /* p.logprobs: one struct hy_logprob per generated token (the stop token left out, as
     * its text is); entries before lp_emitted were handed out */
    struct hy_http_buf lp;
    size_t lp_emitted;
};

/* The number of log-probability entries g holds (lp.n / sizeof (struct hy_logprob)). */
size_t hy_gen_n_logprobs(const struct hy_gen *g);
/* Entries [from, to) of g in OpenAI's shapes: chat's {"content": [{token, logprob, bytes,
 * top_logprobs}], "refusal": null}, or completions' {tokens, token_logprobs, top_logprobs,
 * text_offset} with offsets in characters from text_off (the characters before entry
 * `from`; updated past the entries). A token's text is its bytes when they are whole UTF-8,
 * else "bytes:\xNN..." as OpenAI writes partial characters. NULL when out of memory. */
json_t *hy_gen_logprobs_chat(const struct hy_gen *g, size_t from, size_t to);
json_t *hy_gen_logprobs_completion(const struct hy_gen *g, size_t from, size_t to,
                                   size_t *text_off);

/* Submits prompt[0..n) for req. */
hy_status hy_gen_start(struct hy_gen *g, struct hy_http_req *req, const int32_t *prompt, int n,
                       const struct hy_gen_params *p, struct hy_err *err);
/* Takes in the tokens published so far (never waits); returns the number of new bytes
 * that may be emitted (text.p + emitted, then the caller adds them to emitted). Sets done
 * at the end (finish tells why) or when req should stop (client gone, deadline: finish
 * CANCELLED or TIMEOUT). Called again when the engine notifies. */
size_t hy_gen_step(struct hy_gen *g);
/* "stop" or "length" as OpenAI spells them; NULL for a failed request. */
const char *hy_gen_finish_reason(const struct hy_gen *g);
/* Cancels and releases the engine request if any; frees the text. */
void hy_gen_end(struct hy_gen *g);

/* Reads max_tokens / max_completion_tokens, temperature, top_p, top_k,
 * repetition_penalty, seed, stop and ignore_eos from body into p (n_prompt decides the
 * default and the limit of max_tokens). On a bad value answers 400 through req and
 * returns false. */
bool hy_gen_parse(struct hy_http_req *req, json_t *body, int n_prompt, struct hy_gen_params *p);

/* temperature (0..2), top_p (0..1; 0: greedy), top_k (-1 or 0: off), repetition_penalty,
 * seed (absent: fallback_seed) from body over the values already in sp. HY_E_FORMAT /
 * HY_E_RANGE naming the field. */
hy_status hy_gen_parse_sampling(json_t *body, struct hy_sampler_params *sp, uint64_t fallback_seed,
                                struct hy_err *err);

#endif
