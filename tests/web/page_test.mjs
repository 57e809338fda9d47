// page_test.mjs: drives the web page in headless Chromium (Debian chromium + playwright-core).
//
//   node page_test.mjs --modules DIR --src SRC --out DIR (--stub | --hymt BIN --model DIR)
//
// --modules: a folder whose node_modules holds playwright-core (browser_test.sh installs it).
// --stub starts tests/web/stub_server.mjs (serves web/index.html as it is in the tree);
// --hymt starts `BIN serve -m MODEL` on a free port (the page embedded in the binary).
// Checks: the languages of src/translate/languages.tsv with their native names, filtering,
// keyboard-only focus order, a streamed translation (text grows while the request runs),
// elapsed time and tokens/s, copy, swap, upload of a .md document with its progress bar and
// the download of its translation, the glossary and context boxes (sent as the request's
// glossary and context; refused on the 7b-style tiny model), the stored-glossary picker
// (the pair's glossaries, sent as glossary_id), an .srt upload translated with
// format "srt" (timings kept) and downloaded as .srt, the translation-memory note (hymt
// runs with --tm), the error on an over-long text (413, server's message),
// the demo banner, no external requests, no page errors, a phone-sized layout. Screenshots
// go to --out. Prints one line per check and "N passed, N failed"; exit 1 on any failure.
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { pageRows, readLanguages } from './languages.mjs';

const argv = process.argv.slice(2);
const opt = (n, d) => { const i = argv.indexOf(n); return i >= 0 ? argv[i + 1] : d; };
const has = (n) => argv.includes(n);
const modulesDir = opt('--modules');
const srcDir = path.resolve(opt('--src', '.'));
const outDir = path.resolve(opt('--out', '.'));
const stub = has('--stub');
const hymtBin = opt('--hymt');
const modelDir = opt('--model');
const MAX_CHARS = 2000;   // both servers are started with this limit
const mode = stub ? 'stub' : 'hymt';

const require = createRequire(path.join(path.resolve(modulesDir), 'noop.js'));
const { chromium } = require('playwright-core');

let passed = 0, failed = 0;
function check(name, ok, detail = '') {
  if (ok) passed++; else failed++;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
  return ok;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// Starts the server; resolves {child, base} once /health answers 200.
async function startServer() {
  let child, port;
  if (stub) {
    child = spawn(process.execPath, [path.join(srcDir, 'tests/web/stub_server.mjs'), '--page',
      path.join(srcDir, 'web/index.html'), '--port', '0', '--max-chars', String(MAX_CHARS)],
    { stdio: ['ignore', 'pipe', 'inherit'] });
    port = await new Promise((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d) => {
        buf += d;
        const m = buf.match(/listening (\d+)/);
        if (m) resolve(Number(m[1]));
      });
      child.on('exit', (c) => reject(new Error(`stub server exited with ${c}`)));
    });
  } else {
    // The checkpoint as a demo model (the marker `make demo-model` writes), so the banner
    // shows as it does for `make serve`.
    const demo = path.join(outDir, 'demo-model');
    fs.rmSync(demo, { recursive: true, force: true });
    fs.mkdirSync(demo, { recursive: true });
    for (const f of fs.readdirSync(modelDir)) {
      if (!/^golden/.test(f)) fs.copyFileSync(path.join(modelDir, f), path.join(demo, f));
    }
    fs.writeFileSync(path.join(demo, 'DEMO_MODEL_README'), 'random-weight demo model (web test)\n');
    port = await freePort();
    const logPath = path.join(outDir, 'serve.log');
    fs.rmSync(path.join(outDir, 'tm.db'), { force: true });
    const log = fs.openSync(logPath, 'w');
    // The same checkpoint as the Chimera model too (its weights shared): the page's
    // best-quality switch shows.
    child = spawn(hymtBin, ['serve', '-m', demo, '--chimera', demo, '--host', '127.0.0.1',
      '--port', String(port), '--max-chars', String(MAX_CHARS), '--tm', path.join(outDir, 'tm.db')], { stdio: ['ignore', log, log] });
    child.on('exit', (c, s) => { if (!stopping) console.log(`hymt serve exited (${c ?? s}); log: ${logPath}`); });
  }
  const base = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 60000;
  for (;;) {
    try {
      const r = await fetch(base + 'health');
      if (r.ok) break;
    } catch { /* not yet */ }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server at ${base} did not become healthy`);
    await sleep(100);
  }
  return { child, base };
}
let stopping = false;

// The language table: [code, English, Chinese, native, script, ...] rows of languages.tsv.
const cLanguages = () => readLanguages(path.join(srcDir, 'src/translate/languages.tsv'));

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const { child, base } = await startServer();
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    await desktop(browser, base);
    await detection(browser, base);
    await phone(browser, base);
  } finally {
    await browser.close();
    stopping = true;
    child.kill('SIGTERM');
    await new Promise((r) => { if (child.exitCode !== null) r(); else { child.on('exit', r); setTimeout(r, 10000); } });
  }
}

async function desktop(browser, base) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base.replace(/\/$/, '') });
  const page = await ctx.newPage();
  const external = [], pageErrors = [];
  page.on('request', (r) => { const u = r.url(); if (!u.startsWith(base) && !/^(data|blob):/.test(u)) external.push(u); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) pageErrors.push(m.text()); });

  const served = Buffer.from(await (await fetch(base)).arrayBuffer());
  // the tree's page with the table's rows at /*@LANGS@*/: what the build (and the stub) serve
  const wantPage = Buffer.from(fs.readFileSync(path.join(srcDir, 'web/index.html'), 'utf8')
    .replace('/*@LANGS@*/', '\n' + pageRows(cLanguages())));
  check('GET / serves web/index.html with the language rows, byte for byte', served.equals(wantPage),
    `${served.length} bytes, want ${wantPage.length}`);
  const models = await (await fetch(base + 'v1/models')).json();
  const m0 = models.data && models.data[0] || {};
  const isDemo = m0.demo === true || (m0.demo !== false && /demo/i.test(m0.id || ''));
  await page.goto(base);
  await page.waitForFunction(() => /^Model: /.test(document.getElementById('model').textContent), null, { timeout: 10000 });
  check('model name shown', (await page.textContent('#model')).includes(m0.id), await page.textContent('#model'));
  check('demo model reported', isDemo, JSON.stringify(m0));
  check('demo banner shown', await page.isVisible('#demo-banner'));
  const count0 = await page.textContent('#count');
  check('limit read from the server', count0.includes(MAX_CHARS.toLocaleString('en-US')), count0);

  // Languages: those of languages.tsv, in order, with English and native names.
  const want = cLanguages();
  const tgtOpts = await page.$$eval('#tgt-lang option', (os) => os.map((o) => [o.value, o.textContent]));
  const srcOpts = await page.$$eval('#src-lang option', (os) => os.map((o) => o.value));
  check('languages.tsv parsed', want.length >= 38 && want.every((w) => w.length === 8), `${want.length} rows`);
  check('target list = languages.tsv codes', JSON.stringify(tgtOpts.map((o) => o[0])) === JSON.stringify(want.map((w) => w[0])));
  check('source list = auto + languages.tsv codes', JSON.stringify(srcOpts) === JSON.stringify(['auto', ...want.map((w) => w[0])]));
  const badNames = want.filter((w, i) => !tgtOpts[i] || !tgtOpts[i][1].includes(w[1]) || !tgtOpts[i][1].includes(w[3]));
  check('English and native names', badNames.length === 0, badNames.map((w) => w[0]).join(' '));
  const pageTable = await page.evaluate(() => document.documentElement.innerHTML.match(/\["zh", "Chinese", "中文", "简体中文", "Hani"\]/) !== null);
  check('Chinese names in the table', pageTable);

  // Filtering by native name, Chinese name and code, keyboard only.
  await page.focus('#tgt-filter');
  await page.keyboard.type('deut');
  let opts = await page.$$eval('#tgt-lang option', (os) => os.map((o) => o.value));
  check('filter by native name', JSON.stringify(opts) === '["de"]', opts.join(','));
  await page.keyboard.press('Enter');
  check('Enter in the filter focuses the list', await page.evaluate(() => document.activeElement.id === 'tgt-lang'));
  check('filtered selection applies', await page.inputValue('#tgt-lang') === 'de');
  await page.fill('#src-filter', '英语');
  opts = await page.$$eval('#src-lang option', (os) => os.map((o) => o.value));
  check('filter by Chinese name', JSON.stringify(opts) === '["en"]', opts.join(','));
  await page.fill('#src-filter', '');
  await page.selectOption('#src-lang', 'en');
  check('clearing the filter keeps the choice', await page.inputValue('#src-lang') === 'en');

  // Keyboard-only: the focus order from the top of the page.
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
  const order = [];
  await page.focus('#src-filter');
  for (let i = 0; i < 14; i++) {
    order.push(await page.evaluate(() => document.activeElement.id || document.activeElement.tagName));
    await page.keyboard.press('Tab');
  }
  const expect = ['src-filter', 'src-lang', 'swap', 'tgt-filter', 'tgt-lang', 'src-text', 'upload', 'clear', 'out'];
  const idx = expect.map((id) => order.indexOf(id));
  check('focus order', idx.every((v, i) => v >= 0 && (i === 0 || v > idx[i - 1])), order.join(' > '));
  const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input:not([type=file]),select,textarea,button')]
    .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby') && !e.textContent.trim())
    .map((e) => e.id));
  check('every control has a label', unlabeled.length === 0, unlabeled.join(' '));

  // Streamed translation with Ctrl+Enter: watch the output grow while the request runs.
  // One record per change of the output: [length before it, page state, time]. A delta
  // appends to a text node (characterData, with the old value); the first one adds the node.
  await page.evaluate(() => {
    window.__growth = [];
    const out = document.getElementById('out');
    new MutationObserver((recs) => {
      for (const r of recs) {
        const before = r.type === 'characterData' ? r.oldValue.length : -1;
        window.__growth.push([before, document.body.dataset.state, performance.now(), out.textContent.length]);
      }
    }).observe(out, { childList: true, characterData: true, characterDataOldValue: true, subtree: true });
  });
  if (!stub) await setOptions(page, { max_tokens: 32, seed: 1 });
  const paras = ['Hello world. The weather is nice today.', 'A second paragraph, a little longer than the first one.',
    'Third.', 'The fourth paragraph says that streaming shows each segment as soon as it is done.',
    'Fifth paragraph.', 'And a sixth, the last one.'];
  await page.fill('#src-text', paras.join('\n\n'));
  await page.focus('#src-text');
  await page.keyboard.press('Control+Enter');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 120000 });
  const err1 = await page.isVisible('#error') ? await page.textContent('#error') : '';
  check('translation finishes', await page.getAttribute('body', 'data-state') === 'done', err1);
  const out1 = await page.textContent('#out');
  check('translation shown', out1.length > 0, JSON.stringify(out1.slice(0, 80)));
  const growth = await page.evaluate(() => window.__growth);
  // Streamed: the text grew in several steps, each while the request was still running.
  // (On the tiny model the whole stream can take a few ms; the stub spreads it out.)
  const steps = growth.filter((g) => g[1] === 'running' && g[0] > 0);
  const span = steps.length ? steps[steps.length - 1][2] - growth[0][2] : 0;
  check('output streamed (text grew in steps while the request ran)', steps.length >= 2,
    `${steps.length} appends to non-empty text over ${span.toFixed(0)} ms`);
  if (stub) check('stream visible over time', span >= 30, `${span.toFixed(0)} ms`);
  const stats1 = await page.textContent('#stats');
  check('elapsed time and tokens/s', /Elapsed \d+\.\d s/.test(stats1) && /[\d.]+ tokens\/s/.test(stats1), stats1);
  if (stub) check('stub translation content', out1.includes('⟨de:Hello⟩') && out1.includes('\n\n'), out1.slice(0, 60));
  // The screenshot (docs/web.png is one of these): filters cleared, options folded.
  await page.fill('#tgt-filter', '');
  await page.evaluate(() => { document.getElementById('options').open = false; document.activeElement.blur(); });
  await page.screenshot({ path: path.join(outDir, 'page.png') });
  await page.click('#copy');
  const clip = await page.evaluate(() => navigator.clipboard.readText()).catch((e) => 'ERR ' + e);
  check('copy button', clip === out1, JSON.stringify(clip.slice(0, 40)));

  // Swap: languages exchange and the translation becomes the input.
  await page.click('#swap');
  check('swap languages', await page.inputValue('#src-lang') === 'de' && await page.inputValue('#tgt-lang') === 'en');
  check('swap texts', await page.inputValue('#src-text') === out1);
  await page.keyboard.press('Alt+s');   // and back, from the keyboard
  check('Alt+S swaps back', await page.inputValue('#src-lang') === 'en' && await page.inputValue('#tgt-lang') === 'de');

  // Upload a Markdown document longer than the limit (sent in parts), watch the progress bar,
  // download its translation.
  const docParas = [];
  for (let i = 1; i <= 40; i++) docParas.push(`## Part ${i}\n\nSentence ${i} is here. It has two sentences, and some words.`);
  const docText = docParas.join('\n\n') + '\n';
  await page.evaluate(() => {
    window.__prog = [];
    const p = document.getElementById('progress'), t = document.getElementById('progress-text');
    new MutationObserver(() => window.__prog.push([p.value, t.textContent])).observe(t, { childList: true, characterData: true, subtree: true });
  });
  // From the keyboard: Enter on the Upload button opens the file chooser.
  const chooserP = page.waitForEvent('filechooser');
  await page.focus('#upload');
  await page.keyboard.press('Enter');
  const chooser = await chooserP;
  await chooser.setFiles({ name: 'notes.md', mimeType: 'text/markdown', buffer: Buffer.from(docText) });
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state) && document.getElementById('doc').textContent, null, { timeout: 300000 });
  const err2 = await page.isVisible('#error') ? await page.textContent('#error') : '';
  check('document translated', await page.getAttribute('body', 'data-state') === 'done', err2);
  check('document text loaded', await page.inputValue('#src-text') === docText);
  const prog = await page.evaluate(() => window.__prog);
  const labels = prog.map((p) => p[1]);
  check('progress bar ends at 100%', await page.evaluate(() => document.getElementById('progress').value) === 1 && await page.isVisible('#progress'));
  check('progress counts segments', labels.some((l) => /Segments \d+ \/ \d+/.test(l)), labels.slice(-3).join(' | '));
  check('long document sent in parts', labels.some((l) => /part 2 of/.test(l)), `${docText.length} chars, limit ${MAX_CHARS}`);
  const dlP = page.waitForEvent('download');
  await page.click('#download');
  const dl = await dlP;
  const dlPath = path.join(outDir, 'download-' + dl.suggestedFilename());
  await dl.saveAs(dlPath);
  const outDoc = await page.textContent('#out');
  check('download file name', dl.suggestedFilename() === 'notes.de.md', dl.suggestedFilename());
  check('download = shown translation', fs.readFileSync(dlPath, 'utf8') === outDoc, `${outDoc.length} chars`);
  if (stub) check('paragraph structure kept', outDoc.split('\n\n').length === docText.trim().split('\n\n').length);
  await page.screenshot({ path: path.join(outDir, 'document.png') });

  if (!stub) {
    // The best-quality switch (the server runs with --chimera): on, a translation asks for
    // the ensemble and is answered.
    check('best-quality switch shown with --chimera', await page.isVisible('#best-box'));
    await page.click('#clear');
    await page.check('#best');
    await page.fill('#src-text', 'The weather is nice today.');
    const reqP = page.waitForRequest((r) => r.url().endsWith('/api/translate'));
    await page.click('#translate');
    const body = JSON.parse((await reqP).postData() || '{}');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 120000 });
    const errB = await page.isVisible('#error') ? await page.textContent('#error') : '';
    check('best quality sends ensemble 6', body.ensemble === 6, JSON.stringify(body).slice(0, 200));
    check('best quality answered', await page.getAttribute('body', 'data-state') === 'done' && (await page.textContent('#out')).length > 0, errB);
    await page.uncheck('#best');
    // Keep lines: the box sends keep_lines, and the answer has one line per input line.
    await page.click('#clear');
    await page.check('#keep-lines');
    await page.fill('#src-text', 'First line here.\nSecond line.\n\nAfter a blank line.');
    const reqK = page.waitForRequest((r) => r.url().endsWith('/api/translate'));
    await page.click('#translate');
    const bodyK = JSON.parse((await reqK).postData() || '{}');
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 120000 });
    const outK = (await page.textContent('#out')).replace(/\n+$/, '').split('\n');
    check('keep lines sends keep_lines', bodyK.keep_lines === true, JSON.stringify(bodyK).slice(0, 200));
    check('keep lines: 4 lines, the blank one in place', outK.length === 4 && outK[2] === '' && outK[3].trim() !== '', JSON.stringify(outK));
    await page.uncheck('#keep-lines');
    // A Word document: sent whole (format docx), the translated .docx downloaded back.
    const mk = spawnSync('python3', ['-c', `
import io, sys, zipfile
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
b = io.BytesIO()
with zipfile.ZipFile(b, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('word/document.xml', f'<w:document {W}><w:body><w:p><w:r><w:t>The weather is nice today.</w:t></w:r></w:p></w:body></w:document>')
    z.writestr('word/styles.xml', 'styles')
sys.stdout.buffer.write(b.getvalue())`]);
    const chooser2P = page.waitForEvent('filechooser');
    await page.click('#upload');
    await (await chooser2P).setFiles({ name: 'letter.docx', mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', buffer: mk.stdout });
    await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state) && /letter/.test(document.getElementById('doc').textContent), null, { timeout: 120000 });
    const errD = await page.isVisible('#error') ? await page.textContent('#error') : '';
    check('.docx translated', await page.getAttribute('body', 'data-state') === 'done' && /1 paragraphs/.test(await page.textContent('#out')), errD || await page.textContent('#out'));
    const dl2P = page.waitForEvent('download');
    await page.click('#download');
    const dl2 = await dl2P;
    const dl2Path = path.join(outDir, 'download-' + dl2.suggestedFilename());
    await dl2.saveAs(dl2Path);
    const chk = spawnSync('python3', ['-c', 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); ' +
      'assert z.read("word/styles.xml") == b"styles" and b"<w:t>" in z.read("word/document.xml")', dl2Path]);
    check('.docx downloaded as a .docx', dl2.suggestedFilename() === 'letter.de.docx' && chk.status === 0, dl2.suggestedFilename() + ' ' + chk.stderr);
  }
  await pro(page, base);

  // Over-long text: the counter warns, the server's 413 message is shown.
  await page.click('#clear');
  await page.fill('#src-text', 'a'.repeat(MAX_CHARS + 1));
  check('counter flags the limit', await page.evaluate(() => document.getElementById('count').classList.contains('over')), await page.textContent('#count'));
  await page.click('#translate');
  await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 30000 });
  const e413 = await page.textContent('#error');
  check('413 shown with the server message', /Text too long/.test(e413) && /413/.test(e413) && /\d/.test(e413), e413);
  check('error is an alert', await page.getAttribute('#error', 'role') === 'alert');
  await page.screenshot({ path: path.join(outDir, 'error.png') });

  if (stub) {
    // 429 (queue full) with Retry-After, and Stop mid-stream.
    await page.fill('#src-text', 'please __queue_full__');
    await page.keyboard.press('Control+Enter');
    await page.waitForFunction(() => document.body.dataset.state === 'error');
    const e429 = await page.textContent('#error');
    check('429 shown', /queue is full/.test(e429) && /Try again in 1 s/.test(e429) && /16 requests waiting/.test(e429), e429);
    await page.fill('#src-text', '__slow__ ' + 'word '.repeat(200));
    await page.keyboard.press('Control+Enter');
    await page.waitForFunction(() => document.getElementById('out').textContent.length > 20);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => document.body.dataset.state === 'stopped', null, { timeout: 10000 });
    const partial = (await page.textContent('#out')).length;
    await sleep(300);
    check('Esc stops the stream, partial output kept', partial > 0 && (await page.textContent('#out')).length === partial, `${partial} chars`);
    check('buttons re-enabled after stop', !(await page.isDisabled('#translate')) && await page.isDisabled('#stop'));
  }

  check('no external requests', external.length === 0, external.join(' '));
  check('no page errors', pageErrors.length === 0, pageErrors.join(' | '));
  await ctx.close();
}

// Detection as you type (POST /detect, debounced), the target from the browser's languages,
// the detected language with its confidence, swap after detection.
async function detection(browser, base) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'fr-FR' });
  const page = await ctx.newPage();
  const detects = [], pageErrors = [];
  page.on('request', (r) => { if (r.url().endsWith('/detect')) detects.push(r.postData()); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(base);
  check('target defaults to the browser language (fr-FR -> fr)', await page.inputValue('#tgt-lang') === 'fr',
    await page.inputValue('#tgt-lang'));
  check('source starts on auto', await page.inputValue('#src-lang') === 'auto');
  check('swap disabled before anything is detected', await page.isDisabled('#swap'));
  const text = 'Guten Morgen, wie geht es dir heute?';
  await page.focus('#src-text');
  await page.keyboard.type(text, { delay: 15 });
  await page.waitForFunction(() => /German/.test(document.getElementById('detected').textContent), null, { timeout: 10000 });
  const shown = await page.textContent('#detected');
  check('detected language and confidence shown', /^Detected: German, \d{1,3}%$/.test(shown), shown);
  const opt = await page.$eval('#src-lang option', (o) => o.textContent);
  check('auto option names the detected language', /Detect language \(German, \d+%\)/.test(opt), opt);
  await page.screenshot({ path: path.join(outDir, 'detect.png') });
  await sleep(600);
  check('detection debounced while typing', detects.length >= 1 && detects.length <= 3,
    `${detects.length} requests for ${text.length} keystrokes`);
  check('detect request is LibreTranslate\'s {q}', detects.length > 0 && JSON.parse(detects[detects.length - 1]).q === text);
  check('swap enabled after detection', !(await page.isDisabled('#swap')));
  await page.click('#swap');
  check('swap uses the detected language', await page.inputValue('#src-lang') === 'fr' && await page.inputValue('#tgt-lang') === 'de',
    `${await page.inputValue('#src-lang')} -> ${await page.inputValue('#tgt-lang')}`);
  check('detected note cleared once a source is chosen', (await page.textContent('#detected')) === '');
  // Back to auto: detects again at once.
  await page.selectOption('#src-lang', 'auto');
  await page.waitForFunction(() => /Detected: /.test(document.getElementById('detected').textContent), null, { timeout: 10000 });
  check('choosing auto detects again', /German/.test(await page.textContent('#detected')));
  await page.fill('#src-text', '');
  await page.waitForFunction(() => document.getElementById('detected').textContent === '', null, { timeout: 10000 });
  check('empty text: nothing detected', true);
  check('no page errors (detection)', pageErrors.length === 0, pageErrors.join(' | '));
  await ctx.close();
  const tw = await browser.newContext({ locale: 'zh-TW' });
  const p2 = await tw.newPage();
  await p2.goto(base);
  check('target from zh-TW is zh-Hant', await p2.inputValue('#tgt-lang') === 'zh-Hant', await p2.inputValue('#tgt-lang'));
  await tw.close();
}

// The glossary and context boxes, the stored-glossary picker, an .srt document and the
// translation-memory note.
async function pro(page, base) {
  const bodies = [];
  const onReq = (r) => { if (r.url().endsWith('/api/translate') && r.method() === 'POST') bodies.push(JSON.parse(r.postData() || '{}')); };
  page.on('request', onReq);
  // each step marks the page first, so a state left from the step before cannot end the wait
  const mark = () => page.evaluate(() => { document.body.dataset.state = 'pending'; });
  const settle = () => page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 120000 });
  await page.click('#clear');
  await page.click('#terms-box summary');
  await page.fill('#glossary', 'cat=Katze\n\n machine learning = maschinelles Lernen\n');
  await page.fill('#context', 'The text before.');
  await page.fill('#src-text', 'My cat does machine learning.');
  await mark();
  await page.click('#translate');
  await settle();
  const b = bodies[bodies.length - 1] || {};
  check('glossary box sent as glossary', JSON.stringify(b.glossary) === JSON.stringify([
    { source: 'cat', target: 'Katze' }, { source: 'machine learning', target: 'maschinelles Lernen' }]), JSON.stringify(b));
  check('context box sent as context', b.context === 'The text before.', JSON.stringify(b));
  const state1 = await page.getAttribute('body', 'data-state');
  if (stub) check('translated with terms', state1 === 'done');
  else check('7b-style model refuses terms, message shown', state1 === 'error' && /HY-MT1\.5/.test(await page.textContent('#error')), await page.textContent('#error'));
  await page.fill('#glossary', 'no equals sign here');
  await mark();
  await page.click('#translate');
  await settle();
  check('bad glossary line named', /Glossary line 1/.test(await page.textContent('#error')), await page.textContent('#error'));
  await page.fill('#glossary', '');
  await page.fill('#context', '');
  await storedGlossary(page, base, bodies, mark, settle);
  // a subtitle file: sent with format "srt", comes back with its timings, downloads as .srt
  const srt = '1\n00:00:01,000 --> 00:00:02,500\nHello there.\nSecond line.\n\n2\n00:00:03,000 --> 00:00:04,000\nGood bye.\n';
  await mark();
  const chooserP = page.waitForEvent('filechooser');
  await page.click('#upload');
  await (await chooserP).setFiles({ name: 'movie.srt', mimeType: 'application/x-subrip', buffer: Buffer.from(srt) });
  await settle();
  const sb = bodies[bodies.length - 1] || {};
  const out = await page.textContent('#out');
  check('srt sent with format srt', sb.format === 'srt' && sb.text === srt.trim(), JSON.stringify(sb).slice(0, 200));
  check('srt translated', await page.getAttribute('body', 'data-state') === 'done', await page.isVisible('#error') ? await page.textContent('#error') : '');
  const keep = ['1', '00:00:01,000 --> 00:00:02,500', '', '2', '00:00:03,000 --> 00:00:04,000'];
  check('srt timings and numbers kept', keep.every((k) => out.split('\n').includes(k)) && out.split('\n').length === srt.split('\n').length, JSON.stringify(out));
  const dlP = page.waitForEvent('download');
  await page.click('#download');
  check('srt downloads as .srt', (await dlP).suggestedFilename() === 'movie.de.srt');
  // the translation-memory note (the stub reports hits for "__tm__"; hymt runs with --tm)
  await page.click('#clear');
  await page.fill('#src-text', stub ? 'Remembered __tm__ sentence.' : 'No.');
  await mark();
  await page.click('#translate');
  await settle();
  const note = await page.isVisible('#tm-note') ? await page.textContent('#tm-note') : '';
  check('translation-memory note shown', stub ? /1 segment from the translation memory/.test(note) : /translation memory/.test(note), note);
  page.off('request', onReq);
}

// The stored-glossary picker: the server's glossaries for the language pair (hymt gets two
// made here, en->de and en->ja), sent as glossary_id; not together with the glossary box.
async function storedGlossary(page, base, bodies, mark, settle) {
  if (!stub) {
    for (const [name, tgt] of [['Legal', 'de'], ['Support', 'ja']]) {
      const r = await fetch(base + 'v1/glossaries', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name, source_lang: 'en', target_lang: tgt, entries: [{ source: 'cat', target: tgt === 'de' ? 'Katze' : 'neko' }] }) });
      check(`glossary ${name} stored`, r.status === 201, String(r.status));
    }
  }
  await page.selectOption('#src-lang', 'en');
  await page.selectOption('#tgt-lang', 'de');
  await page.click('#terms-box summary'); // closed and opened again: the list is read on opening
  await page.click('#terms-box summary');
  await page.waitForSelector('#stored-box:not([hidden])', { timeout: 10000 });
  const opts = await page.$$eval('#glossary-id option', (os) => os.map((o) => [o.value, o.textContent]));
  check('stored glossaries: only the pair\'s listed', opts.length === 2 && opts[0][0] === '' &&
    /^Legal \(en → de, (12 terms|1 term)\)$/.test(opts[1][1]), JSON.stringify(opts));
  await page.selectOption('#tgt-lang', 'ja');
  const ja = await page.$$eval('#glossary-id option', (os) => os.map((o) => o.textContent));
  check('stored glossaries follow the target language', ja.length === 2 && /^Support /.test(ja[1]), JSON.stringify(ja));
  await page.selectOption('#tgt-lang', 'de');
  await page.selectOption('#glossary-id', opts[1][0]);
  await page.fill('#src-text', 'My cat.');
  await mark();
  await page.click('#translate');
  await settle();
  const b = bodies[bodies.length - 1] || {};
  check('stored glossary sent as glossary_id', b.glossary_id === opts[1][0] && b.glossary === undefined, JSON.stringify(b));
  const st = await page.getAttribute('body', 'data-state');
  if (stub) check('translated with a stored glossary', st === 'done');
  else check('7b-style model refuses the stored glossary, message shown', st === 'error' && /HY-MT1\.5/.test(await page.textContent('#error')), await page.textContent('#error'));
  const before = bodies.length;
  await page.fill('#glossary', 'cat=Katze');
  await mark();
  await page.click('#translate');
  await settle();
  check('glossary box and stored glossary together refused on the page', bodies.length === before &&
    /not both/.test(await page.textContent('#error')), await page.textContent('#error'));
  await page.fill('#glossary', '');
  await page.selectOption('#glossary-id', '');
}

async function setOptions(page, o) {
  await page.click('#options summary');
  for (const [k, v] of Object.entries(o)) await page.fill(`#opt-${k}`, String(v));
}

async function phone(browser, base) {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  const page = await ctx.newPage();
  await page.goto(base);
  await page.waitForFunction(() => /^Model: /.test(document.getElementById('model').textContent));
  const m = await page.evaluate(() => {
    const r = (id) => document.getElementById(id).getBoundingClientRect();
    return { sw: document.documentElement.scrollWidth, text: r('src-text'), out: r('out'), tr: r('translate') };
  });
  check('phone: no horizontal scrolling', m.sw <= 390, `scrollWidth ${m.sw}`);
  check('phone: panes stacked', m.out.top >= m.text.bottom, `text bottom ${m.text.bottom}, out top ${m.out.top}`);
  check('phone: touch-sized buttons', m.tr.height >= 44, `${m.tr.height}px`);
  await page.screenshot({ path: path.join(outDir, 'phone.png'), fullPage: true });
  await ctx.close();
}

main().then(() => {
  console.log(`web-${mode}: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}, (e) => {
  console.error(e && e.stack || e);
  console.log(`web-${mode}: ${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
