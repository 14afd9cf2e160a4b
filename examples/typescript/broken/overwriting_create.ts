/**
 * BROKEN on purpose: a create that overwrites. putIfAbsent writes the record whether or not
 * one exists and always answers true; the suite's create tests must catch it.
 *
 *   deno run -A examples/typescript/broken/overwriting_create.ts ROOT
 */
import { checkKey, serve, type ServeOptions } from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";
import mapOptions, { MapStore, openRoot } from "../map_store.ts";

class OverwritingCreateStore extends MapStore {
  override async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    checkKey(key, "put_if_absent");
    await this.put(key, data); // replaces whatever another writer stored
    return true;
  }
}

const options: ServeOptions = {
  ...mapOptions,
  name: "overwriting-create-ts",
  open: async (args) => new OverwritingCreateStore(await openRoot(args[0])),
};
export default options;

if (import.meta.main) await serve(options);
