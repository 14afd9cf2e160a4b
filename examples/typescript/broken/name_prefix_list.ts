/**
 * BROKEN on purpose: list() matches the prefix as a string, not by whole segments, so
 * list("a") also returns "ab" and "a-b"; the suite's list tests must catch it.
 *
 *   deno run -A examples/typescript/broken/name_prefix_list.ts [ROOT]
 */
import {
  byCodePoint,
  checkPrefix,
  serve,
  type ServeOptions,
} from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";
import fsOptions, { FsStore } from "../fs_store.ts";

class NamePrefixListStore extends FsStore {
  override async list(prefix: string): Promise<string[]> {
    checkPrefix(prefix); // refuses bad prefixes like the real store: only the match is wrong
    const everything = await super.list("");
    return everything.filter((key) => key.startsWith(prefix)).sort(byCodePoint);
  }
}

const options: ServeOptions = {
  ...fsOptions,
  name: "name-prefix-list-ts",
  open: async (args) => new NamePrefixListStore((await fsOptions.open(args) as FsStore).root),
};
export default options;

if (import.meta.main) await serve(options);
