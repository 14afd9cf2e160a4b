/**
 * A filesystem store that maps a key straight onto a path, as many real ones do: the key
 * "runs/r1/rev/1" is the file ROOT/runs/r1/rev/1, each segment but the last a directory.
 *
 *   deno run -A examples/typescript/dir_store.ts ROOT [--declare=nested_keys,refuses_bad_keys]
 *
 * It checks no key, and a record "a" cannot live beside a record "a/b" (one path cannot be
 * a file and a directory): put("a/b") after put("a") fails, a create of "a" beside "a/b"
 * answers false with no record under "a", get("a") then fails. Neither is wrong for the
 * engine, whose keys are all in the grammar and never nest, so by default it declares
 * neither refuses_bad_keys nor nested_keys and the suite asks neither of it.
 * --declare= claims them anyway (the self-test does, to see the suite hold it to them).
 *
 * put writes a temporary file and renames it into place; put_if_absent writes a temporary
 * file and hard-links it into place, which fails if anything is there. Temporary files
 * live in ROOT.tmp beside the root, so they are never listed. list walks the directories
 * and returns every file whose key starts with the prefix string, in walk order.
 */
import {
  type ControlPlaneStore,
  serve,
  type ServeOptions,
  StoreUnavailable,
} from "../../reference_engine/stores/exec/shim/dw_store_shim.js";

export class DirStore implements ControlPlaneStore {
  constructor(readonly root: string, readonly temp: string) {}

  protected pathOf(key: string): string {
    return `${this.root}/${key}`;
  }

  /** A complete temporary file, and the directory the record goes in, made on demand. */
  protected async staged(key: string, data: Uint8Array): Promise<string> {
    const path = this.pathOf(key);
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    const temp = `${this.temp}/${crypto.randomUUID()}`;
    await Deno.writeFile(temp, data, { createNew: true });
    return temp;
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    await Deno.rename(await this.staged(key, data), this.pathOf(key));
  }

  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    const temp = await this.staged(key, data);
    try {
      await Deno.link(temp, this.pathOf(key));
      return true;
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) return false;
      throw error;
    } finally {
      await Deno.remove(temp);
    }
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      return await Deno.readFile(this.pathOf(key));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await Deno.remove(this.pathOf(key));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }

  async list(prefix: string): Promise<string[]> {
    // Walk from the deepest directory the prefix names whole; keep the keys it starts.
    const base = prefix.slice(0, prefix.lastIndexOf("/") + 1);
    const found: string[] = [];
    const walk = async (dir: string, keyPrefix: string): Promise<void> => {
      try {
        for await (const entry of Deno.readDir(dir)) {
          const key = keyPrefix + entry.name;
          if (entry.isDirectory) await walk(`${dir}/${entry.name}`, `${key}/`);
          else if (key.startsWith(prefix)) found.push(key);
        }
      } catch (error) {
        // Nothing there, or a record where the prefix wants a directory: nothing under it.
        const absent = error instanceof Deno.errors.NotFound ||
          error instanceof Deno.errors.NotADirectory;
        if (!absent) throw error;
      }
    };
    await walk(base ? this.pathOf(base.slice(0, -1)) : this.root, base);
    return found;
  }
}

/** The capabilities claimed with --declare=a,b (the self-test's), else none. */
export function declared(args: string[]): Record<string, boolean> {
  const flag = args.find((arg) => arg.startsWith("--declare="));
  const names = flag ? flag.slice("--declare=".length).split(",").filter(Boolean) : [];
  return Object.fromEntries(names.map((name) => [name, true]));
}

async function open(args: string[]): Promise<DirStore> {
  const root = args.find((arg) => !arg.startsWith("--"));
  if (!root) throw new StoreUnavailable("give the store's directory: dir_store.ts ROOT");
  try {
    await Deno.mkdir(root, { recursive: true });
    await Deno.mkdir(`${root}.tmp`, { recursive: true });
  } catch (error) {
    throw new StoreUnavailable(`cannot create the store directory ${root}: ${error}`);
  }
  return new DirStore(root, `${root}.tmp`);
}

const options: ServeOptions = {
  name: "dir-ts",
  open,
  // Files every process opens: handles share them, and they outlive the handles.
  capabilities: {
    cross_handle: true,
    cross_process: true,
    durable_reopen: true,
    ...declared(Deno.args),
  },
};
export default options;

if (import.meta.main) await serve(options);
