/**
 * BROKEN on purpose: handles that do not share records. Each handle (each child process)
 * keeps its map in its own memory, yet the store declares what the shared map does; the
 * suite's cross-handle tests must catch it.
 *
 *   deno run -A examples/typescript/broken/unshared_handles.ts ROOT
 */
import { serve, type ServeOptions } from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";
import mapOptions, { MapStore, openRoot, type Records } from "../map_store.ts";

class UnsharedHandlesStore extends MapStore {
  readonly #records: Records = new Map(); // this process's alone

  protected override load(): Promise<Records> {
    return Promise.resolve(this.#records);
  }

  protected override save(_records: Records): Promise<void> {
    return Promise.resolve();
  }
}

const options: ServeOptions = {
  ...mapOptions,
  name: "unshared-handles-ts",
  open: async (args) => new UnsharedHandlesStore(await openRoot(args[0])),
};
export default options;

if (import.meta.main) await serve(options);
