/* log_test.c: log lines in both formats: ISO 8601 timestamps with the zone offset (POSIX TZ
 * strings, so no tzdata is needed: UTC, +05:30, -05:00), milliseconds, levels; control
 * characters and invalid UTF-8 escaped (JSON lines parsed back with jansson: the message
 * comes back byte for byte, U+FFFD for the invalid byte); fields (numbers as numbers, other
 * values as strings; quoted in text when they hold spaces); lines cut at the buffer with
 * valid JSON and a "truncated" mark; hy_log's threshold and output stream. */
#include "core/globals.h"
#include "core/log.h"
#include "test.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char line[HY_LOG_LINE_MAX];

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static void check_time(void)
{
    hy_log_set_format(HY_LOG_TEXT);
    set_tz("UTC0");
    hy_log_format_line(line, sizeof line, 1764602433.1239, HY_LOG_INFO, NULL, 0, "hi");
    CHECKF(!strcmp(line, "2025-12-01T15:20:33.123+00:00 info  hi"), "%s", line);
    set_tz("XYZ-5:30");
    hy_log_format_line(line, sizeof line, 0.5, HY_LOG_WARN, NULL, 0, "x");
    CHECKF(!strcmp(line, "1970-01-01T05:30:00.500+05:30 warn  x"), "%s", line);
    set_tz("EST+5");
    hy_log_format_line(line, sizeof line, 0, HY_LOG_ERROR, NULL, 0, "y");
    CHECKF(!strcmp(line, "1969-12-31T19:00:00.000-05:00 error y"), "%s", line);
    set_tz("UTC0");
}

static void check_text_escapes(void)
{
    hy_log_set_format(HY_LOG_TEXT);
    const struct hy_log_field f[] = {
        {"request_id", "abc-123"}, {"path", "/a b\"c"}, {"empty", ""}, {"skipped", NULL},
        {"status", "200"},
    };
    hy_log_format_line(line, sizeof line, 0, HY_LOG_INFO, f, 5, "a\nb\tc\x01" "d\x7f" "e\xff" "f");
    const char *want = "1970-01-01T00:00:00.000+00:00 info  a\\nb\\tc\\x01d\\x7fe\xEF\xBF\xBD" "f "
                       "request_id=abc-123 path=\"/a b\\\"c\" empty=\"\" status=200";
    CHECKF(!strcmp(line, want), "\n got  %s\n want %s", line, want);
    CHECK(!strchr(line, '\n') && !strchr(line, '\x01'));
}

static json_t *parse(void)
{
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    CHECKF(json_is_object(j), "not JSON (%s): %s", je.text, line);
    return j;
}

static void check_json(void)
{
    hy_log_set_format(HY_LOG_JSON);
    const char *msg = "quote \" backslash \\ newline \n tab \t bell \x07 del \x7f \xE4\xB8\xAD";
    const struct hy_log_field f[] = {
        {"request_id", "r-1"}, {"status", "200"}, {"ms", "12.5"}, {"neg", "-0.25e3"},
        {"not_num", "1e"}, {"lead0", "012"}, {"text", "a\"b\x01"}, {"gone", NULL},
    };
    hy_log_format_line(line, sizeof line, 1.25, HY_LOG_DEBUG, f, 8, msg);
    json_t *j = parse();
    CHECK(!strcmp(json_string_value(json_object_get(j, "ts")), "1970-01-01T00:00:01.250+00:00"));
    CHECK(!strcmp(json_string_value(json_object_get(j, "level")), "debug"));
    CHECKF(!strcmp(json_string_value(json_object_get(j, "msg")), msg), "msg round trip: %s", line);
    CHECK(!strcmp(json_string_value(json_object_get(j, "request_id")), "r-1"));
    CHECK(json_integer_value(json_object_get(j, "status")) == 200);
    CHECK(json_real_value(json_object_get(j, "ms")) == 12.5);
    CHECK(json_real_value(json_object_get(j, "neg")) == -250.0);
    CHECK(json_is_string(json_object_get(j, "not_num")));
    CHECK(json_is_string(json_object_get(j, "lead0")));
    CHECK(!strcmp(json_string_value(json_object_get(j, "text")), "a\"b\x01"));
    CHECK(!json_object_get(j, "gone") && !json_object_get(j, "truncated"));
    CHECK(!strchr(line, '\n'));
    json_decref(j);
    hy_log_format_line(line, sizeof line, 0, HY_LOG_INFO, NULL, 0, "bad \xC3\x28 utf8");
    j = parse();
    CHECK(!strcmp(json_string_value(json_object_get(j, "msg")), "bad \xEF\xBF\xBD( utf8"));
    json_decref(j);
}

static void check_cut(void)
{
    static char big[3 * HY_LOG_LINE_MAX];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    for (int fmt = 0; fmt < 2; fmt++) {
        hy_log_set_format((enum hy_log_fmt)fmt);
        size_t n = hy_log_format_line(line, sizeof line, 0, HY_LOG_INFO, NULL, 0, big);
        CHECK(n == strlen(line) && n < sizeof line);
        if (fmt == HY_LOG_TEXT) {
            CHECK(n > 3 && !strcmp(line + n - 3, "..."));
        } else {
            json_t *j = parse();
            CHECK(json_is_true(json_object_get(j, "truncated")));
            json_decref(j);
        }
        /* a field that does not fit is left out whole; the line stays valid */
        const struct hy_log_field f[] = {{"id", "kept"}, {"long", big}, {"after", "1"}};
        char small[256];
        n = hy_log_format_line(small, sizeof small, 0, HY_LOG_INFO, f, 3, "m");
        CHECK(n < sizeof small && strstr(small, "kept") && !strstr(small, "xxx"));
        if (fmt == HY_LOG_JSON) {
            json_t *j = json_loads(small, 0, NULL);
            CHECKF(json_is_true(json_object_get(j, "truncated")) && !json_object_get(j, "after"),
                   "%s", small);
            json_decref(j);
        }
        /* escapes are never split: a message of control characters cut at any length */
        char ctl[300];
        memset(ctl, '\x01', sizeof ctl - 1);
        ctl[sizeof ctl - 1] = '\0';
        for (size_t cap = 64; cap < 200; cap += 7) {
            n = hy_log_format_line(small, cap, 0, HY_LOG_INFO, NULL, 0, ctl);
            CHECK(n < cap);
            if (fmt == HY_LOG_JSON) {
                json_t *j = json_loads(small, 0, NULL);
                CHECKF(json_is_object(j), "cap %zu: %s", cap, small);
                json_decref(j);
            }
        }
    }
}

static void check_output(void)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    hy_log_set_output(f);
    hy_log_set_format(HY_LOG_JSON);
    int saved = hy_log_level;
    hy_log_level = HY_LOG_WARN;
    HY_LOGI("hidden %d", 1);
    HY_LOGW("shown %d", 2);
    const struct hy_log_field fl[] = {{"request_id", "q9"}};
    hy_log_fields(HY_LOG_ERROR, fl, 1, "with %s", "fields");
    hy_log_level = saved;
    hy_log_set_output(NULL);
    hy_log_set_format(HY_LOG_TEXT);
    rewind(f);
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        CHECKF(json_is_object(j), "%s", line);
        if (lines == 1)
            CHECK(!strcmp(json_string_value(json_object_get(j, "request_id")), "q9"));
        json_decref(j);
        lines++;
    }
    CHECK(lines == 2);
    fclose(f);
    enum hy_log_fmt fm;
    CHECK(hy_log_parse_format("json", &fm) == 0 && fm == HY_LOG_JSON);
    CHECK(hy_log_parse_format("text", &fm) == 0 && fm == HY_LOG_TEXT);
    CHECK(hy_log_parse_format("xml", &fm) == -1);
}

int main(void)
{
    check_time();
    check_text_escapes();
    check_json();
    check_cut();
    check_output();
    return test_result();
}
