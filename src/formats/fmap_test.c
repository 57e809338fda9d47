/* fmap_test.c: mapping files, empty files, and the errors that name the path. */
#include "formats/fmap.h"

#include "test.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    char dir[64] = "/tmp/hymt-fmap-XXXXXX", path[128], empty[128];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    struct hy_err e = {{0}};
    struct hy_fmap m;

    snprintf(path, sizeof path, "%s/data.bin", dir);
    unsigned char bytes[1000];
    for (int i = 0; i < 1000; i++)
        bytes[i] = (unsigned char)(i * 131 + 7);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(bytes, 1, sizeof bytes, f) == sizeof bytes && fclose(f) == 0);
    CHECKF(hy_fmap_open(&m, path, &e) == HY_OK, "%s", e.msg);
    CHECK(m.size == sizeof bytes && m.data && !memcmp(m.data, bytes, sizeof bytes));
    hy_fmap_close(&m);
    CHECK(m.data == NULL && m.size == 0);
    hy_fmap_close(&m); /* closing twice is harmless */

    snprintf(empty, sizeof empty, "%s/empty.bin", dir);
    f = fopen(empty, "wb");
    CHECK(f && fclose(f) == 0);
    CHECK(hy_fmap_open(&m, empty, &e) == HY_OK && m.size == 0 && m.data == NULL);
    hy_fmap_close(&m);

    char missing[128];
    snprintf(missing, sizeof missing, "%s/missing.bin", dir);
    CHECK(hy_fmap_open(&m, missing, &e) == HY_E_IO && m.data == NULL && m.size == 0);
    CHECKF(strstr(e.msg, missing) && strstr(e.msg, "No such file"), "%s", e.msg);
    CHECK(hy_fmap_open(&m, dir, &e) == HY_E_IO);
    CHECKF(strstr(e.msg, dir) && strstr(e.msg, "not a regular file"), "%s", e.msg);

    unlink(path);
    unlink(empty);
    CHECK(rmdir(dir) == 0);
    return test_result();
}
