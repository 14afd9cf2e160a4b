/**
 * A filesystem store in TypeScript, served to dw-testing through the dw-store/1 shim.
 *
 *   deno run -A examples/typescript/fs_store.ts [ROOT]
 *
 * Records live under ROOT (default: dw-ts-fs-store in the temp directory, so every
 * handle of a run shares it). A key's segments but the last are directories named
 * "<segment>.d" and the last is a file "<segment>.rec", so "a" and "a/b" coexist.
 * The create writes a complete temporary file, then hard-links it into place: the link
 * fails if a record exists, and no reader ever sees a half-written record.
 */
// In this repository the shim is imported from the package source; elsewhere import a copy,
// or run the shim itself: deno run -A "$(dw store shim-path)" fs_store.ts (see docs).
import {
  byCodePoint,
  checkKey,
  checkPrefix,
  type ControlPlaneStore,
  serve,
  type ServeOptions,
  StoreUnavailable,
} from "../../reference_engine/stores/exec/shim/dw_store_shim.js";

const RECORD = ".rec";
const DIR = ".d";
const TEMP = ".tmp";

export class FsStore implements ControlPlaneStore {
  constructor(readonly root: string) {}

  protected dirOf(segments: string[]): string {
    return [this.root, ...segments.map((s) => s + DIR)].join("/");
  }

  protected pathsOf(key: string): { dir: string; file: string } {
    const segments = key.split("/");
    const leaf = segments.pop()!;
    const dir = this.dirOf(segments);
    return { dir, file: `${dir}/${leaf}${RECORD}` };
  }

  /** A complete temporary file beside the record (its directory is made on demand). */
  protected async writeTemp(dir: string, data: Uint8Array): Promise<string> {
    await Deno.mkdir(dir, { recursive: true });
    const temp = `${dir}/.${crypto.randomUUID()}${TEMP}`;
    await Deno.writeFile(temp, data, { createNew: true });
    return temp;
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    checkKey(key, "put");
    const { dir, file } = this.pathsOf(key);
    const temp = await this.writeTemp(dir, data);
    await Deno.rename(temp, file);
  }

  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    checkKey(key, "put_if_absent");
    const { dir, file } = this.pathsOf(key);
    const temp = await this.writeTemp(dir, data);
    try {
      await Deno.link(temp, file);
      return true;
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return false;
      throw error;
    } finally {
      await Deno.remove(temp).catch(() => {});
    }
  }

  async get(key: string): Promise<Uint8Array | null> {
    checkKey(key, "get");
    try {
      return await Deno.readFile(this.pathsOf(key).file);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    checkKey(key, "delete");
    // Directories are left in place: pruning them would race with a create beneath them.
    await Deno.remove(this.pathsOf(key).file).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
  }

  async list(prefix: string): Promise<string[]> {
    const base = checkPrefix(prefix);
    const keys: string[] = [];
    await this.walk(this.dirOf(base ? base.split("/") : []), base, keys);
    return keys.sort(byCodePoint);
  }

  protected async walk(dir: string, keyPrefix: string, out: string[]): Promise<void> {
    const lead = keyPrefix ? keyPrefix + "/" : "";
    try {
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isFile && entry.name.endsWith(RECORD)) {
          out.push(lead + entry.name.slice(0, -RECORD.length));
        } else if (entry.isDirectory && entry.name.endsWith(DIR)) {
          await this.walk(`${dir}/${entry.name}`, lead + entry.name.slice(0, -DIR.length), out);
        }
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}

async function openRoot(root: string): Promise<FsStore> {
  try {
    await Deno.mkdir(root, { recursive: true });
  } catch (error) {
    throw new StoreUnavailable(`cannot create the store directory ${root}: ${error}`);
  }
  return new FsStore(root);
}

/** serve()'s options; the default export, so the shim can also run this file itself. */
const options: ServeOptions = {
  name: "fs-ts",
  open: (args) => openRoot(args[0] ?? `${Deno.env.get("TMPDIR") ?? "/tmp"}/dw-ts-fs-store`),
  capabilities: {
    cross_process: true,
    durable_reopen: true,
    segment_prefixes: true,
    sorted_list: true,
    refuses_bad_keys: true, // checkKey and checkPrefix on every call
    nested_keys: true, // "<segment>.d" directories beside "<segment>.rec" files
  },
};
export default options;

if (import.meta.main) await serve(options);
