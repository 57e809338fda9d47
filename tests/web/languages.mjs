// languages.mjs: the language table (src/translate/languages.tsv) for the web tests, read
// the way cmake/lang_table.cmake reads it: '#' lines and blank lines skipped, eight
// tab-separated fields a row (code, name_en, name_zh, native, script, prompt, gens,
// aliases). pageRows gives what the build writes into web/index.html's /*@LANGS@*/.
import fs from 'node:fs';

export function readLanguages(tsvPath) {
  return fs.readFileSync(tsvPath, 'utf8').split(/\r?\n/)
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split('\t'));
}

export function pageRows(rows) {
  return rows.map((r) => '  [' + r.slice(0, 5).map((f) => JSON.stringify(f)).join(', ') + '],\n').join('');
}
