/**
 * One map of records shared by every handle, listing as swamp's own in-memory store does.
 * The correct store of the TypeScript parity set: it must pass the suite, and each store
 * under broken/ that extends it changes one method and must fail.
 *
 *   deno run -A examples/typescript/map_store.ts ROOT
 *
 * The suite starts one child process per handle, so the map cannot live in one process's
 * memory: it lives in ROOT/records.json. Every call takes an exclusive lock on
 * ROOT/records.lock, reads the map and, for a write, saves it whole (a temporary file,
 * then a rename), so all handles see one map and every call is atomic.
 *
 * list() returns every key that starts with the prefix string, in the order the keys were
 * first written. That is the core clause (C-LIST-3) for "" and for a prefix ending in "/",
 * the only forms swamp and the reference engine ask for; so this store declares neither
 * segment_prefixes nor sorted_list, and the suite asks nothing more of its list.
 *
 * Like swamp's in-memory double it checks no key: the engine hands a store only keys of
 * its own grammar, so it declares no refuses_bad_keys, and the suite never sends it a bad
 * shape. (A flat map does hold "a" beside "a/b"; it need not say so: the engine never
 * writes a record beneath another record's name.)
 */
import {
  type ControlPlaneStore,
  serve,
  type ServeOptions,
  StoreUnavailable,
} from "../../reference_engine/stores/exec/shim/dw_store_shim.js";

export type Records = Map<string, Uint8Array>;

const CHUNK = 0x8000;

function encode(bytes: Uint8Array): string {
  let text = "";
  for (let at = 0; at < bytes.length; at += CHUNK) {
    text += String.fromCharCode(...bytes.subarray(at, at + CHUNK));
  }
  return btoa(text);
}

function decode(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

export class MapStore implements ControlPlaneStore {
  constructor(readonly root: string) {}

  /** Runs `use` on the map under the lock; saves the map afterwards when `write`. */
  protected async withRecords<T>(write: boolean, use: (records: Records) => T): Promise<T> {
    const lock = await Deno.open(`${this.root}/records.lock`, { write: true, create: true });
    try {
      await lock.lock(true);
      const records = await this.load();
      const result = use(records);
      if (write) await this.save(records);
      return result;
    } finally {
      lock.close(); // closing the file releases its lock
    }
  }

  protected async load(): Promise<Records> {
    try {
      const pairs: [string, string][] = JSON.parse(
        await Deno.readTextFile(`${this.root}/records.json`),
      );
      return new Map(pairs.map(([key, value]) => [key, decode(value)]));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return new Map();
      throw error;
    }
  }

  protected async save(records: Records): Promise<void> {
    const temp = `${this.root}/records.${crypto.randomUUID()}.tmp`;
    const pairs = [...records].map(([key, value]) => [key, encode(value)]);
    await Deno.writeTextFile(temp, JSON.stringify(pairs));
    await Deno.rename(temp, `${this.root}/records.json`);
  }

  put(key: string, data: Uint8Array): Promise<void> {
    return this.withRecords(true, (records) => {
      records.set(key, data.slice());
    });
  }

  putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    return this.withRecords(true, (records) => {
      if (records.has(key)) return false;
      records.set(key, data.slice());
      return true;
    });
  }

  get(key: string): Promise<Uint8Array | null> {
    return this.withRecords(false, (records) => records.get(key) ?? null);
  }

  delete(key: string): Promise<void> {
    return this.withRecords(true, (records) => {
      records.delete(key);
    });
  }

  list(prefix: string): Promise<string[]> {
    return this.withRecords(false, (records) =>
      [...records.keys()].filter((key) => key.startsWith(prefix)));
  }
}

export async function openRoot(root: string | undefined): Promise<string> {
  if (!root) throw new StoreUnavailable("give the store's directory: map_store.ts ROOT");
  try {
    await Deno.mkdir(root, { recursive: true });
  } catch (error) {
    throw new StoreUnavailable(`cannot create the store directory ${root}: ${error}`);
  }
  return root;
}

/** serve()'s options; the default export, so the shim can also run this file itself. */
const options: ServeOptions = {
  name: "map-ts",
  open: async (args) => new MapStore(await openRoot(args[0])),
  // The map is a file every process opens: handles share it, and it outlives them.
  capabilities: { cross_handle: true, cross_process: true, durable_reopen: true },
};
export default options;

if (import.meta.main) await serve(options);
