// stub_server.mjs: a stand-in for `hymt serve` with the same API shape, for the page-only
// browser test (tests/web/page_test.mjs --stub). No dependencies beyond Node.js.
//
//   node stub_server.mjs --page web/index.html [--langs src/translate/languages.tsv]
//        [--port 0] [--max-chars 2000] [--delay-ms 4]
//
// Prints "listening PORT" on stdout once it accepts connections. Routes:
//   GET  /            the page (read from --page at every request) with the language table's
//                     rows in place of /*@LANGS@*/, as the build puts them
//   GET  /health      {"status":"ok"}
//   GET  /v1/models   {"object":"list","data":[{"id","object":"model",...,"demo":true,"max_chars"}]}
//   POST /api/translate  {"text","target_lang","source_lang","stream",...}; the "translation"
//        is the text with each word wrapped as ⟨tgt:word⟩, streamed word by word over SSE
//        in the events of src/server/api_translate.c (which streams whole segments):
//          data: {"type":"delta","delta":"...","segments_done":d,"segments_total":n}
//          data: {"type":"progress","segments_done":d,"segments_total":n}
//          data: {"type":"done","source_lang",...,"usage":{...},"timing_ms":{...}}
//        Text containing "__queue_full__" gets 429 with Retry-After; over --max-chars 413;
//        "__slow__" slows the stream down (for Stop); "__tm__" puts "tm": {"hits": segments}
//        into the done event (as `hymt serve --tm`); "format" srt/vtt keeps numbers, timings
//        and headers (as the server's splitter); glossary/context are accepted; glossary_id
//        must name one of GLOSSARIES (404 as the server, not both with glossary: 400).
//   GET  /v1/glossaries  {"glossaries": GLOSSARIES} (the server's stored glossaries' shape)
//   POST /detect  {"q"}: LibreTranslate's shape, [{"language","confidence"}, ...]; a toy
//        detector (Han -> zh, a few German words -> de, other letters -> en, none -> []),
//        enough for the page's detection as you type (the real one: hymt's test mode).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { pageRows, readLanguages } from './languages.mjs';

const args = process.argv.slice(2);
function opt(name, def) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
}
const pagePath = opt('--page', 'web/index.html');
const port = Number(opt('--port', '0'));
const maxChars = Number(opt('--max-chars', '2000'));
const delayMs = Number(opt('--delay-ms', '4'));
const langsPath = opt('--langs', path.join(path.dirname(pagePath), '../src/translate/languages.tsv'));
const MODEL = 'hymt-demo-tiny';
const LANG_ROWS = readLanguages(langsPath);
const CODES = LANG_ROWS.map((r) => r[0]);

const GLOSSARIES = [
  { glossary_id: 'a1b2c3d4-0000-4000-8000-000000000001', name: 'Legal', source_lang: 'en', target_lang: 'de', entry_count: 12, creation_time: '2026-12-01T00:00:00Z', ready: true },
  { glossary_id: 'a1b2c3d4-0000-4000-8000-000000000002', name: 'Menu', source_lang: 'fr', target_lang: 'de', entry_count: 1, creation_time: '2026-12-01T00:00:00Z', ready: true },
  { glossary_id: 'a1b2c3d4-0000-4000-8000-000000000003', name: 'Support', source_lang: 'en', target_lang: 'ja', entry_count: 40, creation_time: '2026-12-01T00:00:00Z', ready: true },
];

function sendJson(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...headers });
  res.end(body);
}
function sendError(res, status, type, message, headers) {
  sendJson(res, status, { error: { message, type, code: status } }, headers);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Segments: paragraphs and sentences, separators kept with the following segment's lead.
function segment(text) {
  const out = [];
  const re = /[^.!?。！？\n]+[.!?。！？]*|\n+/g;
  let m, lead = '';
  while ((m = re.exec(text))) {
    if (/^\n+$/.test(m[0])) { lead += m[0]; continue; }
    const s = m[0];
    const ws = s.match(/^\s*/)[0];
    out.push({ lead: lead + ws, text: s.slice(ws.length).trimEnd() });
    lead = '';
  }
  return out;
}

async function translate(req, res, body) {
  let j;
  try { j = JSON.parse(body); } catch { return sendError(res, 400, 'invalid_request_error', 'malformed JSON'); }
  if (typeof j !== 'object' || j === null) return sendError(res, 400, 'invalid_request_error', 'body must be a JSON object');
  const text = j.text, tgt = j.target_lang ?? j.tgt, src = j.source_lang ?? j.src ?? 'auto';
  if (typeof text !== 'string' || !text.trim()) return sendError(res, 400, 'invalid_request_error', '"text" must be a non-empty string');
  if (!CODES.includes(tgt)) return sendError(res, 400, 'invalid_request_error', `unknown target_lang "${tgt}"; valid: ${CODES.join(', ')}`);
  if (src !== 'auto' && !CODES.includes(src)) return sendError(res, 400, 'invalid_request_error', `unknown source_lang "${src}"`);
  const n = [...text].length;
  if (n > maxChars) return sendError(res, 413, 'invalid_request_error', `text is ${n} characters; the limit is ${maxChars} (--max-chars)`);
  if (j.glossary_id !== undefined) {
    if (j.glossary !== undefined) return sendError(res, 400, 'invalid_request_error', 'give glossary or glossary_id, not both');
    if (!GLOSSARIES.some((g) => g.glossary_id === j.glossary_id)) return sendError(res, 404, 'not_found_error', 'glossary_id: no such glossary');
  }
  if (text.includes('__queue_full__')) return sendError(res, 429, 'rate_limit_error', 'queue full (stub): 16 requests waiting', { 'Retry-After': '1' });
  const detected = src === 'auto' ? (/[\u4e00-\u9fff]/.test(text) ? 'zh' : 'en') : src;
  const t0 = Date.now();
  const segs = segment(text);
  const markup = (w) => (j.format === 'srt' || j.format === 'vtt') && /^(\d+|WEBVTT|-->|[\d:.,]+)$/.test(w);
  const words = (s) => s.split(/(\s+)/).filter(Boolean).map((w) => (/^\s+$/.test(w) || markup(w) ? w : `⟨${tgt}:${w}⟩`));
  let closed = false;
  res.on('close', () => { closed = true; });
  if (!j.stream) {
    const translation = segs.map((s) => s.lead + words(s.text).join('')).join('');
    return sendJson(res, 200, {
      translation, source_lang: detected, target_lang: tgt, model: MODEL, segments: segs.length,
      usage: { prompt_tokens: n, completion_tokens: translation.length }, timing_ms: { queue: 0, first_token: 1, total: Date.now() - t0 },
    });
  }
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
  let translation = '', tokens = 0, firstToken = null;
  const slow = text.includes('__slow__') ? 40 : 0;
  for (let i = 0; i < segs.length && !closed; i++) {
    const pieces = [segs[i].lead, ...words(segs[i].text)].filter(Boolean);
    for (const p of pieces) {
      if (closed) break;
      await sleep(delayMs + slow);
      translation += p; tokens++;
      if (firstToken === null) firstToken = Date.now() - t0;
      res.write(`data: ${JSON.stringify({ type: 'delta', delta: p, segments_done: i, segments_total: segs.length })}\n\n`);
    }
    res.write(`data: ${JSON.stringify({ type: 'progress', segments_done: i + 1, segments_total: segs.length })}\n\n`);
  }
  if (closed) return;
  res.end(`data: ${JSON.stringify({
    type: 'done', source_lang: detected, target_lang: tgt, model: MODEL, segments: segs.length,
    segments_done: segs.length, segments_total: segs.length, demo: true,
    ...(text.includes('__tm__') ? { tm: { hits: segs.length, stored: 0 } } : {}),
    usage: { prompt_tokens: n, completion_tokens: tokens }, timing_ms: { queue: 0, first_token: firstToken ?? 0, total: Date.now() - t0 },
  })}\n\n`);
}

function detect(q) {
  if (/[\u4e00-\u9fff]/.test(q)) return [{ language: 'zh', confidence: 96.0 }];
  if (/\b(und|der|die|das|wie|ist|nicht|guten|morgen)\b/i.test(q)) return [{ language: 'de', confidence: 91.5 }, { language: 'nl', confidence: 8.5 }];
  return /\p{L}/u.test(q) ? [{ language: 'en', confidence: 88.0 }] : [];
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html')) {
    const page = Buffer.from(fs.readFileSync(pagePath, 'utf8').replace('/*@LANGS@*/', '\n' + pageRows(LANG_ROWS)));
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': page.length });
    return res.end(page);
  }
  if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { status: 'ok' });
  if (req.method === 'GET' && url.pathname === '/v1/models') {
    return sendJson(res, 200, {
      object: 'list',
      data: [{ id: MODEL, object: 'model', created: 0, owned_by: 'hymt', demo: true, max_chars: maxChars,
        description: 'random-weight demo model (stub)' }],
    });
  }
  if (req.method === 'GET' && url.pathname === '/v1/glossaries') return sendJson(res, 200, { glossaries: GLOSSARIES });
  if (url.pathname === '/api/translate') {
    if (req.method !== 'POST') return sendError(res, 405, 'invalid_request_error', 'use POST');
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => { translate(req, res, body).catch((e) => { res.destroy(e); }); });
    return;
  }
  if (url.pathname === '/detect' && req.method === 'POST') {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      let j;
      try { j = JSON.parse(body); } catch { return sendJson(res, 400, { error: 'malformed JSON' }); }
      if (typeof j.q !== 'string') return sendJson(res, 400, { error: 'Invalid request: missing q parameter' });
      sendJson(res, 200, detect(j.q));
    });
    return;
  }
  sendError(res, 404, 'not_found_error', `no route ${req.method} ${url.pathname}`);
});
server.listen(port, '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { server.close(); process.exit(0); });
