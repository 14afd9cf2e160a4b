/**
 * BROKEN on purpose: a create that checks, then writes. Two creates of one key can both
 * see "absent" and both report true; the suite's races must catch it.
 *
 *   deno run -A examples/typescript/broken/check_then_write.ts [ROOT]
 */
import { serve, type ServeOptions } from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";
import fsOptions, { FsStore } from "../fs_store.ts";

class CheckThenWriteStore extends FsStore {
  override async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    if ((await this.get(key)) !== null) return false;
    await this.put(key, data); // another create may have written in between
    return true;
  }
}

const options: ServeOptions = {
  ...fsOptions,
  name: "check-then-write-ts",
  open: async (args) => new CheckThenWriteStore((await fsOptions.open(args) as FsStore).root),
};
export default options;

if (import.meta.main) await serve(options);
