/* detect_bench.c: runs the language detector over labelled samples (bench/detect_eval.py).
 *
 *   detect_bench [REPEAT] < samples.tsv
 *
 * Input lines: EXPECTED <tab> BAND <tab> TEXT (TEXT without tabs or newlines). Output: one
 * line per sample, EXPECTED <tab> BAND <tab> DETECTED <tab> CONFIDENCE ("-" when
 * undecided), then "# us BAND MICROSECONDS" per band: the mean time of one
 * hy_lang_detect_ranked call, over REPEAT (default 20) passes of that band's samples. */
#include "core/clock.h"
#include "translate/lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 65536
#define MAX_SAMPLES 200000
#define MAX_BANDS 8

struct sample {
    char *expected, *band, *text;
};

int main(int argc, char **argv)
{
    int repeat = argc > 1 ? atoi(argv[1]) : 20;
    if (repeat < 1 || repeat > 100000) {
        fprintf(stderr, "detect_bench: REPEAT must be 1..100000\n");
        return 2;
    }
    static struct sample s[MAX_SAMPLES];
    static char line[LINE_MAX_BYTES];
    size_t n = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2 || n == MAX_SAMPLES) {
            fprintf(stderr, "detect_bench: bad line %zu (or more than %d)\n", n + 1, MAX_SAMPLES);
            return 1;
        }
        *t1 = *t2 = '\0';
        s[n] = (struct sample){strdup(line), strdup(t1 + 1), strdup(t2 + 1)};
        if (!s[n].expected || !s[n].band || !s[n].text)
            return 1;
        n++;
    }
    const char *bands[MAX_BANDS];
    int nb = 0;
    for (size_t i = 0; i < n; i++) {
        struct hy_lang_guess g[4];
        size_t k = hy_lang_detect_ranked(s[i].text, strlen(s[i].text), g, 4);
        printf("%s\t%s\t%s\t%.1f\n", s[i].expected, s[i].band, k ? g[0].lang->code : "-",
               k ? g[0].confidence : 0.0);
        int b = 0;
        while (b < nb && strcmp(bands[b], s[i].band))
            b++;
        if (b == nb && nb < MAX_BANDS)
            bands[nb++] = s[i].band;
    }
    for (int b = 0; b < nb; b++) {
        size_t count = 0, sink = 0;
        double t0 = hy_clock_now();
        for (int r = 0; r < repeat; r++) {
            for (size_t i = 0; i < n; i++) {
                if (strcmp(s[i].band, bands[b]))
                    continue;
                struct hy_lang_guess g[4];
                sink += hy_lang_detect_ranked(s[i].text, strlen(s[i].text), g, 4);
                count++;
            }
        }
        double dt = hy_clock_now() - t0;
        printf("# us %s %.2f\n", bands[b], count && sink ? dt * 1e6 / (double)count : 0.0);
    }
    for (size_t i = 0; i < n; i++) {
        free(s[i].expected);
        free(s[i].band);
        free(s[i].text);
    }
    return 0;
}
