/* detect_textcat.c: libexttextcat (Debian's libexttextcat-dev) over the samples of
 * bench/detect_eval.py, in detect_bench's protocol, to compare the two detectors:
 *
 *   cc -O2 -o /tmp/detect_textcat bench/detect_textcat.c -I/usr/include/libexttextcat \
 *      -lexttextcat-2.0
 *   bench/detect_eval.py --bench /tmp/detect_textcat
 *
 * Its fingerprints are restricted to hymt's languages (a generated fpdb.conf naming the 36
 * it has; none for yue and te), so both choose among the same set. Not part of the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <textcat.h>
#include <time.h>

#define LINE_MAX_BYTES 65536
#define MAX_SAMPLES 200000
#define FP_DIR "/usr/share/libexttextcat/"

/* hymt code, fingerprint file name, the name textcat answers with */
static const char *const LANGS[][3] = {
    {"zh", "zh-Hans.lm", "zh-CN-utf8"}, {"en", "en.lm", "en--utf8"}, {"fr", "fr.lm", "fr--utf8"},
    {"pt", "pt.lm", "pt--utf8"}, {"es", "es.lm", "es--utf8"}, {"ja", "ja.lm", "ja--utf8"},
    {"tr", "tr.lm", "tr--utf8"}, {"ru", "ru.lm", "ru--utf8"}, {"ar", "ar.lm", "ar--utf8"},
    {"ko", "ko.lm", "ko--utf8"}, {"th", "th.lm", "th--utf8"}, {"it", "it.lm", "it--utf8"},
    {"de", "de.lm", "de--utf8"}, {"vi", "vi.lm", "vi--utf8"}, {"ms", "ms.lm", "ms--utf8"},
    {"id", "id.lm", "id--utf8"}, {"tl", "tl.lm", "tl--utf8"}, {"hi", "hi.lm", "hi--utf8"},
    {"zh-Hant", "zh-Hant.lm", "zh-TW-utf8"}, {"pl", "pl.lm", "pl--utf8"},
    {"cs", "cs.lm", "cs--utf8"}, {"nl", "nl.lm", "nl--utf8"}, {"km", "km.lm", "km--utf8"},
    {"my", "my.lm", "my--utf8"}, {"fa", "fa.lm", "fa--utf8"}, {"gu", "gu.lm", "gu--utf8"},
    {"ur", "ur.lm", "ur--utf8"}, {"mr", "mr.lm", "mr--utf8"},
    {"he", "he.lm", "he--utf8"}, {"bn", "bn.lm", "bn--utf8"}, {"ta", "ta.lm", "ta--utf8"},
    {"uk", "uk.lm", "uk--utf8"}, {"bo", "bo.lm", "bo--utf8"}, {"kk", "kk.lm", "kk--utf8"},
    {"mn", "mn.lm", "mn--utf8"}, {"ug", "ug.lm", "ug--utf8"},
};
#define N_LANGS (sizeof LANGS / sizeof LANGS[0])

/* The hymt code of textcat's first answer "[name][name]...", or "-". */
static const char *first(const char *r)
{
    if (!r || r[0] != '[')
        return "-";
    for (size_t i = 0; i < N_LANGS; i++) {
        size_t n = strlen(LANGS[i][2]);
        if (!strncmp(r + 1, LANGS[i][2], n) && r[1 + n] == ']')
            return LANGS[i][0];
    }
    return "-";
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int repeat = argc > 1 ? atoi(argv[1]) : 20;
    char conf[] = "/tmp/hymt-textcat-XXXXXX";
    int fd = mkstemp(conf);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return 1;
    for (size_t i = 0; i < N_LANGS; i++)
        fprintf(f, "%s %s\n", LANGS[i][1], LANGS[i][2]);
    fclose(f);
    void *h = special_textcat_Init(conf, FP_DIR);
    remove(conf);
    if (!h) {
        fprintf(stderr, "detect_textcat: textcat init failed (libexttextcat-data?)\n");
        return 1;
    }
    static char *exp[MAX_SAMPLES], *band[MAX_SAMPLES], *text[MAX_SAMPLES];
    static char line[LINE_MAX_BYTES];
    size_t n = 0;
    while (n < MAX_SAMPLES && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t2)
            return 1;
        *t1 = *t2 = '\0';
        exp[n] = strdup(line), band[n] = strdup(t1 + 1), text[n] = strdup(t2 + 1);
        n++;
    }
    for (size_t i = 0; i < n; i++)
        printf("%s\t%s\t%s\t0\n", exp[i], band[i],
               first(textcat_Classify(h, text[i], strlen(text[i]))));
    const char *bands[] = {"20-40", "80+"};
    for (int b = 0; b < 2; b++) {
        size_t count = 0;
        double t0 = now();
        for (int r = 0; r < repeat; r++) {
            for (size_t i = 0; i < n; i++) {
                if (!strcmp(band[i], bands[b])) {
                    textcat_Classify(h, text[i], strlen(text[i]));
                    count++;
                }
            }
        }
        printf("# us %s %.2f\n", bands[b], count ? (now() - t0) * 1e6 / (double)count : 0.0);
    }
    textcat_Done(h);
    return 0;
}
