// openai_test.mjs NPM_DIR BASE_URL: the official openai client against hymt serve.
// Every call must give a well-formed result (or the right error class); exit 1 otherwise.
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
import path from 'node:path';

const [npmDir, baseURL] = process.argv.slice(2);
const require = createRequire(path.resolve(npmDir, 'package.json'));
const OpenAI = require('openai');
const client = new OpenAI({ baseURL, apiKey: 'sekret', maxRetries: 0, timeout: 30000 });
const messages = [
  { role: 'system', content: 'Translate.' },
  { role: 'user', content: 'Translate into German: Good morning.' },
];

// Log-probabilities (raw model distribution, vLLM's way): for every token, top_logprobs
// are probabilities <= 1, in decreasing order, whose log-sum-exp is <= 0 (the tolerance
// 1e-6 covers fp32 rounding of values near 0); the chosen token's logprob equals its own
// entry there; for greedy decoding without a repetition penalty (the penalty changes the
// choice, not the reported raw distribution) the chosen token is the first (the maximum).
function checkTokens(content, k, greedy) {
  assert.ok(content.length >= 1);
  for (const t of content) {
    assert.equal(typeof t.token, 'string');
    assert.ok(Array.isArray(t.bytes));
    assert.ok(t.logprob <= 0 && Number.isFinite(t.logprob), `logprob ${t.logprob}`);
    assert.equal(t.top_logprobs.length, k);
    let sum = 0;
    t.top_logprobs.forEach((a, j) => {
      assert.ok(Math.exp(a.logprob) <= 1, `p ${Math.exp(a.logprob)}`);
      if (j > 0) assert.ok(a.logprob <= t.top_logprobs[j - 1].logprob, 'not decreasing');
      sum += Math.exp(a.logprob);
    });
    assert.ok(Math.log(sum) <= 1e-6, `logsumexp ${Math.log(sum)}`);
    const mine = t.top_logprobs.find((a) => a.token === t.token && a.logprob === t.logprob);
    if (greedy) {
      assert.equal(t.top_logprobs[0].token, t.token);
      assert.equal(t.top_logprobs[0].logprob, t.logprob);
      assert.ok(mine, 'greedy token not among top_logprobs');
    } else if (t.logprob >= t.top_logprobs[k - 1].logprob && !mine) {
      assert.fail(`token ${t.token} (${t.logprob}) ranks among the top ${k} but is missing`);
    }
  }
}

async function checkLogprobs(model) {
  const k = 5;
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 6, ignore_eos: true, temperature: 0, repetition_penalty: 1, logprobs: true, top_logprobs: k });
  checkTokens(r.choices[0].logprobs.content, k, true);
  assert.equal(r.choices[0].logprobs.content.length, 6);
  const s = await client.chat.completions.create({
    model, messages, max_tokens: 6, ignore_eos: true, seed: 3, logprobs: true, top_logprobs: 20, stream: true });
  const all = [];
  for await (const c of s)
    if (c.choices.length && c.choices[0].logprobs) all.push(...c.choices[0].logprobs.content);
  assert.equal(all.length, 6);
  checkTokens(all, 20, false);
  const c = await client.completions.create({ model, prompt: 'abc', max_tokens: 4, ignore_eos: true, temperature: 0, repetition_penalty: 1, logprobs: 3 });
  const lp = c.choices[0].logprobs;
  assert.equal(lp.tokens.length, 4);
  assert.equal(lp.token_logprobs.length, 4);
  lp.top_logprobs.forEach((top, i) => {
    const vals = Object.values(top);
    assert.ok(vals.length >= 1 && vals.length <= 3);
    assert.equal(Math.max(...vals), lp.token_logprobs[i]); // greedy: the chosen is the maximum
  });
  await assert.rejects(client.chat.completions.create({ model, messages, logprobs: true, top_logprobs: 21 }),
    (e) => e instanceof OpenAI.BadRequestError && /top_logprobs/.test(e.error.message));
  await assert.rejects(client.completions.create({ model, prompt: 'abc', logprobs: 21 }),
    (e) => e instanceof OpenAI.BadRequestError && /logprobs/.test(e.error.message));
}

async function main() {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  const model = models.data[0].id;
  assert.equal(models.data[0].object, 'model');

  const r = await client.chat.completions.create({ model, messages, max_tokens: 8, seed: 1 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);

  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 6, ignore_eos: true, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    assert.equal(c.object, 'chat.completion.chunk');
    if (c.choices.length) {
      text += c.choices[0].delta.content ?? '';
      finish = c.choices[0].finish_reason ?? finish;
    }
    if (c.usage) usage = c.usage;
  }
  assert.ok(chunks >= 3, `only ${chunks} chunks`);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 6);

  const helper = client.chat.completions.stream({ model, messages, max_tokens: 4 });
  const done = await helper.finalChatCompletion();
  assert.equal(done.choices[0].message.role, 'assistant');

  const c = await client.completions.create({ model, prompt: 'abc', max_tokens: 5, ignore_eos: true });
  assert.equal(c.object, 'text_completion');
  assert.equal(c.usage.completion_tokens, 5);

  await assert.rejects(client.chat.completions.create({ model, messages, n: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  // fields hymt does not implement: a 400 naming the field, never silently ignored
  const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
  await assert.rejects(client.chat.completions.create({ model, messages, tools }),
    (e) => e instanceof OpenAI.BadRequestError && /^tools:/.test(e.error.message));
  await assert.rejects(client.chat.completions.create({ model, messages, response_format: { type: 'json_object' } }),
    (e) => e instanceof OpenAI.BadRequestError && /^response_format:/.test(e.error.message));
  await checkLogprobs(model);
  const bad = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  console.log(`openai_test: ok (model ${model}, streamed ${chunks} chunks: ${JSON.stringify(text)})`);
}

main().catch((e) => { console.error('openai_test: FAIL', e); process.exit(1); });
