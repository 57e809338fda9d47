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
  await assert.rejects(client.completions.create({ model, prompt: 'abc', logprobs: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && /^logprobs:/.test(e.error.message));
  const bad = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.models.list(), (e) => e instanceof OpenAI.AuthenticationError);
  console.log(`openai_test: ok (model ${model}, streamed ${chunks} chunks: ${JSON.stringify(text)})`);
}

main().catch((e) => { console.error('openai_test: FAIL', e); process.exit(1); });
