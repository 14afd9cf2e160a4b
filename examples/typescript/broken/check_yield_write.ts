/**
 * BROKEN on purpose: a create that checks, yields, then writes. The check and the write
 * each hold the lock, but not together: a create that runs in the gap sees "absent" too,
 * and both answer true. The suite's races must catch it.
 *
 *   deno run -A examples/typescript/broken/check_yield_write.ts ROOT
 */
import { checkKey, serve, type ServeOptions } from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";
import mapOptions, { MapStore, openRoot } from "../map_store.ts";

class CheckYieldWriteStore extends MapStore {
  override async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    checkKey(key, "put_if_absent");
    if ((await this.get(key)) !== null) return false;
    await new Promise((resolve) => setTimeout(resolve, 1)); // as a round trip would
    await this.put(key, data);
    return true;
  }
}

const options: ServeOptions = {
  ...mapOptions,
  name: "check-yield-write-ts",
  open: async (args) => new CheckYieldWriteStore(await openRoot(args[0])),
};
export default options;

if (import.meta.main) await serve(options);
