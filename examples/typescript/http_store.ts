/**
 * A store over an HTTP object API, written the way cloud object stores often are:
 *
 *   deno run -A examples/typescript/http_store.ts http://127.0.0.1:PORT
 *
 * PUT /o/<key> writes an object (with "If-None-Match: *" for the write-once create, 412 when
 * one exists), GET /o/<key> reads it, DELETE /o/<key> removes it, GET /list?prefix=<p>
 * lists every key that starts with p (dw_testing.selftest.http_objects serves this API).
 *
 * Like an SDK it retries a request whose connection failed, up to three times. Two gaps
 * are left on purpose, as real stores leave them: a handle's first call is a credentials
 * check (HEAD /) made outside the retry loop, and a reply cut off mid-body surfaces as a
 * plain error, unretried. And a retried create can meet its own first attempt's object and
 * answer false to the writer that won (C-LOST-1). None of that breaks the contract: a call
 * may raise, and the engine reads every create back. It checks no key and declares no key
 * promise (refuses_bad_keys, nested_keys), as the engine needs neither.
 */
import {
  type ControlPlaneStore,
  serve,
  type ServeOptions,
  StoreUnavailable,
} from "../../reference_engine/stores/exec/shim/dw_store_shim.js";

const ATTEMPTS = 3;

// fetch's BodyInit takes only bytes over a plain ArrayBuffer; a view over another buffer
// (the shim's decoded value may be one) is copied into one.
function asBody(data: Uint8Array): Uint8Array<ArrayBuffer> {
  return data.slice();
}

export class HttpStore implements ControlPlaneStore {
  private checked = false;

  constructor(readonly endpoint: string) {}

  private object(key: string): string {
    return `${this.endpoint}/o/${encodeURIComponent(key)}`;
  }

  /** The credentials check: once per handle, before its first call, never retried. */
  private async check(): Promise<void> {
    if (this.checked) return;
    const reply = await fetch(this.endpoint, { method: "HEAD" });
    await reply.body?.cancel();
    if (!reply.ok) throw new Error(`the endpoint refused the credentials check: ${reply.status}`);
    this.checked = true;
  }

  /** A request retried when its connection fails or the server answers 5xx. */
  private async request(url: string, init: RequestInit): Promise<Response> {
    await this.check();
    for (let attempt = 1; ; attempt++) {
      try {
        const reply = await fetch(url, init);
        if (reply.status < 500 || attempt === ATTEMPTS) return reply;
        await reply.body?.cancel();
      } catch (error) {
        if (attempt === ATTEMPTS) throw error;
      }
    }
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    const reply = await this.request(this.object(key), { method: "PUT", body: asBody(data) });
    await reply.body?.cancel();
    if (!reply.ok) throw new Error(`put answered ${reply.status}`);
  }

  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    const reply = await this.request(this.object(key), {
      method: "PUT",
      body: asBody(data),
      headers: { "If-None-Match": "*" },
    });
    await reply.body?.cancel();
    if (reply.status === 412) return false;
    if (!reply.ok) throw new Error(`put_if_absent answered ${reply.status}`);
    return true;
  }

  async get(key: string): Promise<Uint8Array | null> {
    const reply = await this.request(this.object(key), { method: "GET" });
    if (reply.status === 404) {
      await reply.body?.cancel();
      return null;
    }
    if (!reply.ok) throw new Error(`get answered ${reply.status}`);
    // A body cut off here throws, unretried: the gap real stores leave.
    return new Uint8Array(await reply.arrayBuffer());
  }

  async delete(key: string): Promise<void> {
    const reply = await this.request(this.object(key), { method: "DELETE" });
    await reply.body?.cancel();
    if (!reply.ok) throw new Error(`delete answered ${reply.status}`);
  }

  async list(prefix: string): Promise<string[]> {
    const url = `${this.endpoint}/list?prefix=${encodeURIComponent(prefix)}`;
    const reply = await this.request(url, { method: "GET" });
    if (!reply.ok) throw new Error(`list answered ${reply.status}`);
    return await reply.json();
  }
}

const options: ServeOptions = {
  name: "http-ts",
  open: (args) => {
    if (!args[0]) throw new StoreUnavailable("give the endpoint: http_store.ts http://HOST:PORT");
    return new HttpStore(args[0].replace(/\/+$/, ""));
  },
  // One server behind every handle: they share its objects.
  capabilities: { cross_handle: true },
};
export default options;

if (import.meta.main) await serve(options);
