/* membw.c: measures this machine's memory read bandwidth, the ceiling of CPU decoding
 * (each decode step reads every weight once).
 * usage: membw [GiB=4] [threads=all] [reps=5]        anonymous memory (huge pages if THP)
 *        membw --file PATH [threads=all] [reps=5]    a mmapped file, as hymt reads weights
 * Each thread sums its share of a buffer far larger than the caches; prints the best rate. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct part {
    const uint64_t *p;
    size_t n;
    uint64_t sum;
};

static void *reader(void *arg)
{
    struct part *w = arg;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= w->n; i += 4) {
        a += w->p[i];
        b ^= w->p[i + 1];
        c += w->p[i + 2];
        d ^= w->p[i + 3];
    }
    w->sum = a + b + c + d;
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Maps PATH read-only; returns NULL on error. */
static const uint64_t *map_file(const char *path, size_t *bytes)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 4096) {
        fprintf(stderr, "membw: cannot read %s\n", path);
        return NULL;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    *bytes = (size_t)st.st_size & ~(size_t)31;
    return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
    const char *file = NULL;
    if (argc > 2 && !strcmp(argv[1], "--file")) {
        file = argv[2];
        argv += 1;
        argc -= 1;
        argv[1] = "1";
    }
    double gib = argc > 1 ? atof(argv[1]) : 4.0;
    int nt = argc > 2 ? atoi(argv[2]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (gib <= 0 || nt < 1 || nt > 256 || reps < 1) {
        fprintf(stderr, "usage: membw [GiB>0] [threads 1..256] [reps>=1]\n");
        return 2;
    }
    size_t bytes = (size_t)(gib * (1 << 30)) & ~(size_t)4095;
    uint64_t *buf = NULL;
    const uint64_t *src;
    if (file) {
        src = map_file(file, &bytes);
        if (!src)
            return 1;
    } else {
        buf = aligned_alloc(4096, bytes);
        if (!buf) {
            fprintf(stderr, "membw: cannot allocate %.1f GiB\n", gib);
            return 1;
        }
        for (size_t i = 0; i < bytes / 8; i++)
            buf[i] = i * 0x9e3779b97f4a7c15ull; /* non-zero, touched: real pages */
        src = buf;
    }
    size_t n = bytes / 8;
    pthread_t th[256];
    struct part parts[256];
    double best = 0;
    uint64_t check = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int t = 0; t < nt; t++) {
            size_t lo = n / (size_t)nt * (size_t)t, hi = t == nt - 1 ? n : n / (size_t)nt * (size_t)(t + 1);
            parts[t] = (struct part){src + lo, hi - lo, 0};
            pthread_create(&th[t], NULL, reader, &parts[t]);
        }
        for (int t = 0; t < nt; t++) {
            pthread_join(th[t], NULL);
            check += parts[t].sum;
        }
        double gbs = (double)bytes / (now() - t0) / 1e9;
        best = gbs > best ? gbs : best;
    }
    printf("read bandwidth: %.2f GB/s (best of %d, %.2f GB %s, %d threads, checksum %llx)\n",
           best, reps, (double)bytes / 1e9, file ? "mmapped file" : "anonymous memory", nt,
           (unsigned long long)(check & 0xffff));
    free(buf);
    return 0;
}
