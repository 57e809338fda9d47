/* web_page.h: the web page served at GET / and the OpenAPI document, embedded in the
 * binary at build time.
 * Returns the page's bytes (static storage, not NUL-terminated) and their length in *len.
 * Thread-safe: constant data. */
#ifndef HY_SERVER_WEB_PAGE_H
#define HY_SERVER_WEB_PAGE_H

#include <stddef.h>

const unsigned char *hy_web_page(size_t *len);
/* docs/openapi.json, the OpenAPI 3 document of every route, served at GET /openapi.json. */
const unsigned char *hy_openapi_doc(size_t *len);

#endif
