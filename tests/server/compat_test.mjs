// compat_test.mjs NPM_DIR BASE_URL ROUTES_FILE: hymt's LibreTranslate- and DeepL-compatible
// routes and its OpenAPI document (see compat_test.sh). The tiny checkpoint's random weights
// translate into noise, so translations are checked for shape (types, keys, counts, markup
// kept), never for words. Exit 1 on the first failure.
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const [npmDir, base, routesFile] = process.argv.slice(2);
const require = createRequire(path.resolve(npmDir, 'package.json'));
const deepl = require('deepl-node');
const SwaggerParser = require('@apidevtools/swagger-parser');
const KEY = 'sekret';

async function call(method, p, body, headers = {}) {
  const r = await fetch(base + p, { method, body, headers });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), json: JSON.parse(text) };
}
const postJSON = (p, obj, headers = {}) =>
  call('POST', p, JSON.stringify(obj), { 'Content-Type': 'application/json', ...headers });
const keys = (o) => Object.keys(o).sort();

// LibreTranslate: the requests of its README / API docs, checked key by key
async function libre() {
  let r = await postJSON('/translate', { q: 'Hello!', source: 'en', target: 'es', api_key: KEY });
  assert.equal(r.status, 200);
  assert.deepEqual(keys(r.json), ['translatedText']);
  assert.equal(typeof r.json.translatedText, 'string');
  r = await postJSON('/translate', { q: 'Ciao!', source: 'auto', target: 'en', format: 'text', alternatives: 3, api_key: KEY });
  assert.equal(r.status, 200);
  assert.deepEqual(keys(r.json), ['alternatives', 'detectedLanguage', 'translatedText']);
  assert.deepEqual(keys(r.json.detectedLanguage), ['confidence', 'language']);
  assert.equal(typeof r.json.detectedLanguage.confidence, 'number');
  assert.ok(Array.isArray(r.json.alternatives) && r.json.alternatives.length <= 3);
  assert.ok(!r.json.alternatives.includes(r.json.translatedText), 'an alternative equals the translation');
  assert.equal(new Set(r.json.alternatives).size, r.json.alternatives.length, 'alternatives repeat');
  // detection from the text: the language and POST /detect's confidence for it
  for (const [q, lang] of [['こんにちは、お元気ですか', 'ja'], ['Guten Morgen, wie geht es dir heute?', 'de']]) {
    r = await postJSON('/translate', { q, source: 'auto', target: 'en', api_key: KEY });
    assert.equal(r.json.detectedLanguage.language, lang);
    const d = await postJSON('/detect', { q, api_key: KEY });
    const mine = d.json.find((x) => x.language === lang);
    assert.ok(mine, `/detect does not list ${lang}`);
    assert.equal(r.json.detectedLanguage.confidence, mine.confidence);
    assert.ok(r.json.detectedLanguage.confidence > 0 && r.json.detectedLanguage.confidence <= 100);
  }
  // an array q: arrays back, in order; HTML keeps its markup; a form body (as browsers send)
  r = await postJSON('/translate', { q: ['Hello', '<p>Hello <b>world</b></p>'], source: 'en', target: 'de', format: 'html', api_key: KEY });
  assert.equal(r.status, 200);
  assert.ok(Array.isArray(r.json.translatedText) && r.json.translatedText.length === 2);
  assert.match(r.json.translatedText[1], /^<p>[^]*<b>[^]*<\/b><\/p>$/);
  r = await call('POST', '/translate', new URLSearchParams({ q: 'Hello world', source: 'en', target: 'fr', api_key: KEY }));
  assert.equal(r.status, 200);
  assert.equal(typeof r.json.translatedText, 'string');
  r = await call('GET', '/languages');
  assert.equal(r.status, 200);
  assert.equal(r.json.length, 38);
  for (const l of r.json) {
    assert.deepEqual(keys(l), ['code', 'name', 'targets']);
    assert.equal(l.targets.length, 37);
  }
  // errors: {"error": "..."} alone, LibreTranslate's statuses
  const bad = [
    [{ q: 'a', source: 'en', target: 'xx', api_key: KEY }, 400, /xx is not supported/],
    [{ q: 'a', source: 'en', api_key: KEY }, 400, /missing target/],
    [{ source: 'en', target: 'de', api_key: KEY }, 400, /missing q/],
    [{ q: 'a', target: 'de', format: 'pdf', api_key: KEY }, 400, /pdf format/],
    [{ q: 'a', target: 'de', alternatives: 4, api_key: KEY }, 400, /alternatives/],
    [{ q: 'a', target: 'de', api_key: 'wrong' }, 403, /API key/],
    [{ q: 'a', target: 'de' }, 403, /API key/],
    [{ q: 'a', target: 'de', api_key: KEY, glossary: 'x' }, 400, /glossary is not a parameter/],
  ];
  for (const [body, status, re] of bad) {
    r = await postJSON('/translate', body);
    assert.equal(r.status, status, JSON.stringify(body));
    assert.deepEqual(keys(r.json), ['error']);
    assert.match(r.json.error, re);
  }
  // forms: a repeated q is an array; malformed escapes, NUL and multipart are refused
  const form = (s) => call('POST', '/translate', s, { 'Content-Type': 'application/x-www-form-urlencoded' });
  r = await form(`q=a%20b&q=c+d&target=de&api_key=${KEY}`);
  assert.equal(r.status, 200);
  assert.equal(r.json.translatedText.length, 2);
  for (const [body, re] of [[`q=%zz&target=de&api_key=${KEY}`, /escape/], [`q=a%00&target=de&api_key=${KEY}`, /UTF-8/],
    [`q=%ff&target=de&api_key=${KEY}`, /UTF-8/], ['a=1&'.repeat(1100), /fields/]]) {
    r = await form(body);
    assert.equal(r.status, 400, body.slice(0, 40));
    assert.deepEqual(keys(r.json), ['error']);
    assert.match(r.json.error, re);
  }
  const fd = new FormData();
  fd.append('q', 'a');
  fd.append('target', 'de');
  r = await call('POST', '/translate', fd, { Authorization: `Bearer ${KEY}` });
  assert.equal(r.status, 415);
  assert.deepEqual(keys(r.json), ['error']);
}

async function deeplClient() {
  const tr = new deepl.Translator(KEY, { serverUrl: base, maxRetries: 0, minTimeout: 30000 });
  const one = await tr.translateText('Hello, world!', null, 'de');
  assert.equal(typeof one.text, 'string');
  assert.equal(typeof one.detectedSourceLang, 'string');
  const many = await tr.translateText(['Hello', 'Good morning'], 'en', 'en-US');
  assert.equal(many.length, 2);
  for (const t of many) assert.equal(t.detectedSourceLang, 'en');
  const html = await tr.translateText('<p>Hello <b>you</b></p>', 'en', 'zh-HANT', { tagHandling: 'html' });
  assert.match(html.text, /^<p>[^]*<b>[^]*<\/b><\/p>$/);
  const kana = await tr.translateText('こんにちは、お元気ですか', null, 'pt-BR');
  assert.equal(kana.detectedSourceLang, 'ja');
  const de = await tr.translateText('Guten Morgen, wie geht es dir heute?', null, 'en-GB');
  assert.equal(de.detectedSourceLang, 'de');
  const src = await tr.getSourceLanguages(), tgt = await tr.getTargetLanguages();
  assert.equal(src.length, 38);
  for (const code of ['en-US', 'en-GB', 'pt-BR', 'pt-PT', 'zh-HANS', 'zh-HANT', 'de'])
    assert.ok(tgt.some((l) => l.code === code), `target ${code} missing`);
  assert.ok(!src.some((l) => l.code === 'en-US'));
  await assert.rejects(tr.translateText('a', null, 'xx'),
    (e) => e instanceof deepl.DeepLError && /target_lang/.test(e.message));
  await assert.rejects(tr.translateText('a', 'en', 'de', { glossary: 'g1' }),
    (e) => e instanceof deepl.DeepLError && /glossary_id/.test(e.message));
  await assert.rejects(tr.translateText('a', null, 'de', { formality: 'more' }),
    (e) => e instanceof deepl.DeepLError && /formality/.test(e.message));
  const wrong = new deepl.Translator('wrong', { serverUrl: base, maxRetries: 0 });
  await assert.rejects(wrong.translateText('a', null, 'de'), (e) => e instanceof deepl.AuthorizationError);
  // DeepL's error shape, and an unknown field named
  const r = await postJSON('/v2/translate', { text: ['a'], target_lang: 'DE', foo: 1 },
    { Authorization: `DeepL-Auth-Key ${KEY}` });
  assert.equal(r.status, 400);
  assert.deepEqual(keys(r.json), ['message']);
  assert.match(r.json.message, /'foo'/);
  await assert.rejects(tr.translateText('a', null, 'de', { formality: 'less' }),
    (e) => e instanceof deepl.DeepLError && /formality/.test(e.message));
  let q = await call('GET', '/v2/languages?type=bogus', undefined, { Authorization: `DeepL-Auth-Key ${KEY}` });
  assert.equal(q.status, 400);
  assert.deepEqual(keys(q.json), ['message']);
  q = await call('GET', '/v2/languages');
  assert.equal(q.status, 403);
  assert.deepEqual(keys(q.json), ['message']);
  // JSON bodies too, as DeepL's newer clients send them; Bearer works as well
  q = await postJSON('/v2/translate', { text: ['Hi', 'there'], target_lang: 'ja', show_billed_characters: true },
    { Authorization: `Bearer ${KEY}` });
  assert.equal(q.status, 200);
  assert.equal(q.json.translations.length, 2);
  assert.deepEqual(q.json.translations.map((t) => t.billed_characters), [2, 5]);
  return many.length + 2;
}

// /openapi.json: a valid OpenAPI 3 document whose paths and methods are exactly the server's
async function openapi() {
  const r = await call('GET', '/openapi.json');
  assert.equal(r.status, 200);
  const doc = r.json;
  await SwaggerParser.validate(structuredClone(doc));
  assert.match(doc.openapi, /^3\./);
  const routes = fs.readFileSync(routesFile, 'utf8').trim().split('\n').map((l) => l.split(' '));
  const served = new Set(routes.map(([m, p]) => `${m.toLowerCase()} ${p}`));
  const documented = new Set();
  for (const [p, item] of Object.entries(doc.paths))
    for (const m of Object.keys(item)) documented.add(`${m} ${p}`);
  const missing = [...served].filter((x) => !documented.has(x));
  const extra = [...documented].filter((x) => !served.has(x));
  assert.deepEqual(missing, [], `routes the server answers but /openapi.json lacks: ${missing.join(', ')}`);
  assert.deepEqual(extra, [], `paths in /openapi.json that the server does not answer: ${extra.join(', ')}`);
  return served.size;
}

async function main() {
  await libre();
  const n = await deeplClient();
  const routes = await openapi();
  console.log(`compat_test: ok (LibreTranslate, DeepL via deepl-node ${n} texts, OpenAPI ${routes} routes)`);
}

main().catch((e) => { console.error('compat_test: FAIL', e); process.exit(1); });
