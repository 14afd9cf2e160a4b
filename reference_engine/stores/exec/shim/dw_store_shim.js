// @ts-self-types="./dw_store_shim.d.ts"
/**
 * dw_store_shim.js: serve a TypeScript or JavaScript store as a dw-store/1 child.
 *
 * One dependency-free ES module for Deno and Node.js >= 20, used in either of two ways:
 *
 *   // 1. import it and call serve() (the path: `dw store shim-path`, or a vendored copy)
 *   import { serve } from "./dw_store_shim.js";
 *   await serve({ name: "my-store", open: (args) => new MyStore(args[0]) });
 *
 *   // 2. export those options by default and run the shim's runner on the module:
 *   //    deno run -A "$(dw store shim-path --runner)" ./my_store.ts [ARGS...]
 *   export default { name: "my-store", open: (args) => new MyStore(args[0]) };
 *
 * The shim opens one handle, announces it (the handshake), then answers the parent's JSON
 * lines from stdin on stdout, several at a time, in whatever order the store finishes them.
 * stdout carries protocol lines only: console.log, console.info and console.debug are
 * sent to stderr, which is the child's log. See docs/reference/store-protocol.md and docs/how-to/typescript-store.md.
 */

export const PROTOCOL = "dw-store/1";

const MAX_SEGMENT_BYTES = 200;
const MAX_KEY_BYTES = 1024;
const KIND_BY_NAME = {
  InvalidKey: "invalid_key",
  InvalidKeyError: "invalid_key",
  TransientStoreError: "transient",
  TransientError: "transient",
  StoreUnavailable: "unavailable",
  StoreUnavailableError: "unavailable",
};
const KINDS = new Set(["invalid_key", "transient", "unavailable", "failed"]);
const encoder = new TextEncoder();

/** A key or prefix that breaks the key rules: the parent raises InvalidKey. */
export class InvalidKey extends Error {
  constructor(message) {
    super(message);
    this.name = "InvalidKey";
  }
}

/** The backend could not decide the call now; retrying may succeed. */
export class TransientStoreError extends Error {
  constructor(message) {
    super(message);
    this.name = "TransientStoreError";
  }
}

/** The store cannot be reached or opened. */
export class StoreUnavailable extends Error {
  constructor(message) {
    super(message);
    this.name = "StoreUnavailable";
  }
}

/** The wire kind of a thrown value: by `kind`, then by name or class name, else "failed". */
export function errorKind(error) {
  if (error && typeof error === "object") {
    if (typeof error.kind === "string" && KINDS.has(error.kind)) return error.kind;
    for (const name of [error.name, error.constructor && error.constructor.name]) {
      if (typeof name === "string" && Object.hasOwn(KIND_BY_NAME, name)) {
        return KIND_BY_NAME[name];
      }
    }
  }
  return "failed";
}

function keyProblem(key) {
  if (key === "") return "the key is empty";
  if (key.startsWith("/")) {
    return "the key is an absolute path; keys are relative, like 'runs/r1/rev/1'";
  }
  if (key.includes("\\")) return "the key holds a backslash; separate segments with '/'";
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(key)) {
    return "the key holds a NUL or other control character";
  }
  if (!key.isWellFormed()) return "the key is not valid UTF-8 (it holds a lone surrogate)";
  if (encoder.encode(key).length > MAX_KEY_BYTES) {
    return `the key is over ${MAX_KEY_BYTES} bytes in UTF-8`;
  }
  for (const segment of key.split("/")) {
    if (segment === "") return "the key has an empty segment ('//' or a trailing '/')";
    if (segment === "." || segment === "..") return "the key has a '.' or '..' segment";
    if (encoder.encode(segment).length > MAX_SEGMENT_BYTES) {
      return `a segment is over ${MAX_SEGMENT_BYTES} bytes in UTF-8`;
    }
  }
  return null;
}

/** Throw InvalidKey (naming `op`, never the key's text) unless `key` follows the key rules. */
export function checkKey(key, op) {
  if (typeof key !== "string") {
    throw new InvalidKey(`cannot ${op}: a key must be a string, got ${typeof key}`);
  }
  const problem = keyProblem(key);
  if (problem !== null) {
    throw new InvalidKey(`cannot ${op} key of ${key.length} chars: ${problem}`);
  }
  return key;
}

/** A list prefix without its trailing '/', or "" for everything; throws InvalidKey. */
export function checkPrefix(prefix) {
  const stripped = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  if (stripped === "") {
    if (prefix === "") return "";
    throw new InvalidKey("cannot list prefix '/': use '' to list every key");
  }
  checkKey(stripped, "list");
  return stripped;
}

/** Compare strings by Unicode code point (Array.prototype.sort compares UTF-16 units). */
export function byCodePoint(a, b) {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) return x.done === y.done ? 0 : x.done ? -1 : 1;
    const diff = x.value.codePointAt(0) - y.value.codePointAt(0);
    if (diff !== 0) return diff;
  }
}

// -- base64 and I/O on either runtime ---------------------------------------------------------

function fromBase64(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  if (typeof Buffer === "function") return new Uint8Array(Buffer.from(text, "base64"));
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function toBase64(bytes) {
  if (typeof bytes.toBase64 === "function") return bytes.toBase64();
  if (typeof Buffer === "function") {
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  }
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

function runtime() {
  const deno = globalThis.Deno;
  if (deno) {
    return {
      args: () => [...deno.args],
      chunks: () => deno.stdin.readable,
      write(text) {
        let bytes = encoder.encode(text);
        while (bytes.length > 0) bytes = bytes.subarray(deno.stdout.writeSync(bytes));
      },
      exit: (code) => deno.exit(code),
    };
  }
  const proc = globalThis.process;
  return {
    args: () => proc.argv.slice(2),
    chunks: () => proc.stdin,
    // Writes to a pipe are synchronous on Linux and macOS in Node.js.
    write: (text) => proc.stdout.write(text),
    exit: (code) => proc.exit(code),
  };
}

async function* lines(chunks) {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of chunks) {
    buffered += decoder.decode(chunk, { stream: true });
    let end;
    while ((end = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      if (line.trim() !== "") yield line;
    }
  }
  buffered += decoder.decode();
  if (buffered.trim() !== "") yield buffered;
}

// -- serving ------------------------------------------------------------------------------------

function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? (value.constructor?.name ?? "an object") : typeof value;
}

async function answer(store, request) {
  const { op, key } = request;
  switch (op) {
    case "put":
      await store.put(key, fromBase64(request.data));
      return null;
    case "put_if_absent": {
      if (typeof store.putIfAbsent !== "function") {
        throw new Error("this store has no putIfAbsent");
      }
      const created = await store.putIfAbsent(key, fromBase64(request.data));
      if (typeof created !== "boolean") {
        throw new Error(`putIfAbsent returned ${describe(created)}, not true or false`);
      }
      return created;
    }
    case "get": {
      const value = await store.get(key);
      if (value === null || value === undefined) return null;
      if (!(value instanceof Uint8Array)) {
        throw new Error(`get returned ${describe(value)}, not a Uint8Array or null`);
      }
      return toBase64(value);
    }
    case "delete":
      await store.delete(key);
      return null;
    case "list": {
      const keys = await store.list(request.prefix);
      if (!Array.isArray(keys) || !keys.every((k) => typeof k === "string")) {
        throw new Error(`list returned ${describe(keys)}, not an array of strings`);
      }
      return keys;
    }
    default:
      throw new Error(`unknown op ${JSON.stringify(op)}`);
  }
}

function reply(io, id, outcome) {
  io.write(JSON.stringify({ id, ...outcome }) + "\n");
}

/**
 * Open one handle with `options.open(args)`, announce it and serve it until the parent sends
 * `close` or closes stdin; then call the store's optional close() and exit the process.
 * `args` are the command-line arguments (after the store module when the shim is run).
 */
export async function serve(options, args = undefined) {
  const io = runtime();
  // stdout is the protocol channel: a store's own logging goes to the log (stderr).
  console.log = console.info = console.debug = console.error;
  if (!options || typeof options.open !== "function") {
    console.error("dw-store shim: serve() needs { name, open: () => store, capabilities }");
    return io.exit(2);
  }
  let store;
  try {
    store = await options.open(args ?? io.args());
  } catch (error) {
    console.error(`dw-store shim: cannot open the store: ${error?.stack ?? error}`);
    return io.exit(1);
  }
  for (const method of ["put", "get", "delete", "list"]) {
    if (typeof store?.[method] !== "function") {
      console.error(`dw-store shim: the opened store has no ${method}() method; it needs ` +
        "put, get, delete and list (putIfAbsent and close are optional)");
      return io.exit(1);
    }
  }
  const hello = {
    protocol: PROTOCOL,
    store: options.name || "typescript-store",
    put_if_absent: typeof store.putIfAbsent === "function",
    capabilities: { ...(options.capabilities ?? {}) },
  };
  io.write(JSON.stringify(hello) + "\n");

  const inFlight = new Set();
  let closeId = null;
  for await (const line of lines(io.chunks())) {
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      console.error("dw-store shim: a request line is not JSON; stopping");
      return io.exit(2);
    }
    if (request.op === "close") {
      closeId = request.id;
      break;
    }
    // Not awaited: the next line is read at once, so calls overlap like threads do.
    const call = Promise.resolve()
      .then(() => answer(store, request))
      .then(
        (result) => reply(io, request.id, { result }),
        (error) => reply(io, request.id, {
          error: { kind: errorKind(error), message: String(error?.message ?? error) },
        }),
      )
      .finally(() => inFlight.delete(call));
    inFlight.add(call);
  }
  await Promise.allSettled([...inFlight]);
  try {
    await store.close?.();
  } catch (error) {
    console.error(`dw-store shim: close() failed: ${error?.message ?? error}`);
  }
  if (closeId !== null) reply(io, closeId, { result: null });
  return io.exit(0);
}

