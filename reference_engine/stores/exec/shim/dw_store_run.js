// dw_store_run.js: serve the default export of the module named first as a dw-store/1 child.
//
//   deno run -A "$(dw store shim-path --runner)" ./my_store.ts [ARGS...]
//   node "$(dw store shim-path --runner)" ./my_store.js [ARGS...]
//
// The module's default export is serve()'s options ({ name, open, capabilities }); open
// receives ARGS. A separate file from the shim, so a store module may import the shim too.
import { serve } from "./dw_store_shim.js";

const deno = globalThis.Deno;
const [target, ...rest] = deno ? [...deno.args] : globalThis.process.argv.slice(2);
if (!target) {
  console.error("usage: deno run -A dw_store_run.js ./my_store.ts [ARGS...]  (or node " +
    "dw_store_run.js ./my_store.js [ARGS...]); the module exports serve()'s options by default");
  deno ? deno.exit(2) : globalThis.process.exit(2);
}
const cwd = deno ? deno.cwd() : globalThis.process.cwd();
const module = await import(new URL(target, `file://${cwd}/`).href);
await serve(module.default, rest);
