// oracle.js: checks the expectations of the tokenizer unit tests against HF tokenizers.
// Not part of ctest (it needs the npm package "tokenizers", the Node binding of the same
// Rust crate as the Python package). Usage, from a folder where `npm install tokenizers`
// was run (NODE_PATH pointing at its node_modules works too):
//   HYMT_TOK_ORACLE=1 build/tokenizer_test | node tests/tokenizer/oracle.js
// Reads "ORACLE <file> <text as JSON> <ids>" lines, encodes each text with
// add_special_tokens = false and reports every difference. Exit 1 on any.
const { Tokenizer } = require('tokenizers');
const readline = require('readline');

const cache = new Map();
const load = (f) => {
  if (!cache.has(f)) cache.set(f, Tokenizer.fromFile(f));
  return cache.get(f);
};

(async () => {
  let n = 0, bad = 0;
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.startsWith('ORACLE\t')) continue;
    const [, file, text, want] = line.split('\t');
    const enc = await load(file).encode(JSON.parse(text), null, { addSpecialTokens: false });
    const got = Array.from(enc.getIds()).join(' ');
    n++;
    if (got !== (want || '')) {
      bad++;
      console.log(`DIFF ${file} ${text}: HF [${got}], test expects [${want || ''}]`);
    }
  }
  console.log(`${n} expectations checked, ${bad} differ`);
  process.exit(bad ? 1 : 0);
})();
