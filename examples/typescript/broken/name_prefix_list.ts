/**
 * BROKEN on purpose: list() drops the prefix's trailing "/" and matches the rest as a
 * string, so list("r/list/") also returns "r/listing". Even for a "/"-ending prefix it is
 * wrong (C-LIST-3); the suite's list tests must catch it.
 *
 *   deno run -A examples/typescript/broken/name_prefix_list.ts ROOT
 */
import { checkPrefix, serve, type ServeOptions } from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";
import mapOptions, { MapStore, openRoot } from "../map_store.ts";

class NamePrefixListStore extends MapStore {
  override async list(prefix: string): Promise<string[]> {
    const name = checkPrefix(prefix); // the prefix without its trailing "/"
    return (await super.list("")).filter((key) => key.startsWith(name));
  }
}

const options: ServeOptions = {
  ...mapOptions,
  name: "name-prefix-list-ts",
  open: async (args) => new NamePrefixListStore(await openRoot(args[0])),
};
export default options;

if (import.meta.main) await serve(options);
