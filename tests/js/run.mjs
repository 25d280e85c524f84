// Runs Transformers.js for the tests, offline or against a loopback Hub: reads one JSON request on stdin,
// prints one JSON answer on stdout.
//
// Request: {
//   "models": folder holding model folders (env.localModelPath), or null with "remote_host"
//   "remote_host": a Hub to download from instead (a loopback test Hub), optional, with
//   "cache_dir": an empty folder for the downloads
//   "model": the model's name under "models" (or its repo id on "remote_host"),
//   "task": a pipeline task ("text-generation", "feature-extraction", ...), or
//   "auto": an Auto class ("AutoModelForCausalLM", ...) to load the model alone (no tokenizer),
//   "options": pipeline() / from_pretrained() options (dtype, revision, ...),
//   "calls": [{"inputs": ..., "options": {...}}                  -> pipe(inputs, options)
//            | {"audio": [samples], "options": {...}}             -> pipe(Float32Array, options)
//            | {"generate": {"input_ids": [[...]], ...kwargs}}]  -> model.generate(...)
// }
// Answer: {"results": [one per call]}; tensors become {"dims": [...], "data": [...]}.
import * as transformers from '@huggingface/transformers';

const { env, pipeline, Tensor } = transformers;

function plain(value) {
  if (value instanceof Tensor) {
    return { dims: value.dims, data: Array.from(value.data, Number) };
  }
  if (typeof value === 'bigint') return Number(value);
  if (ArrayBuffer.isView(value)) return Array.from(value, Number);
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  }
  return value;
}

async function generate(model, { input_ids, ...kwargs }) {
  const ids = input_ids.flat().map(BigInt);
  const dims = [input_ids.length, input_ids[0].length];
  const inputs = new Tensor('int64', BigInt64Array.from(ids), dims);
  const mask = new Tensor('int64', new BigInt64Array(ids.length).fill(1n), dims);
  return model.generate({ inputs, attention_mask: mask, ...kwargs });
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  env.allowRemoteModels = Boolean(request.remote_host);
  env.allowLocalModels = !request.remote_host;
  env.useBrowserCache = false;
  if (request.remote_host) {
    env.remoteHost = request.remote_host;
    env.cacheDir = request.cache_dir; // Node loads downloaded graphs from this cache by path
  } else {
    env.useFSCache = false;
    env.localModelPath = request.models;
  }

  const options = request.options ?? {};
  const pipe = request.auto ? null : await pipeline(request.task, request.model, options);
  const auto = request.auto && transformers[request.auto];
  const model = pipe?.model ?? (await auto.from_pretrained(request.model, options));
  const results = [];
  for (const call of request.calls) {
    const out = call.generate
      ? await generate(model, call.generate)
      : await pipe(call.audio ? Float32Array.from(call.audio) : call.inputs, call.options ?? {});
    results.push(plain(out));
  }
  await (pipe ?? model).dispose();
  process.stdout.write(JSON.stringify({ results }) + '\n');
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
