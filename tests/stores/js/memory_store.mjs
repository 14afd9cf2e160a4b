// A JavaScript memory store for Node.js, served by the shim's runner (one handle per process).
import { byCodePoint, checkKey, checkPrefix } from "../../../reference_engine/stores/exec/shim/dw_store_shim.js";

class MemoryStore {
  records = new Map();

  async put(key, data) {
    checkKey(key, "put");
    this.records.set(key, data.slice());
  }

  async putIfAbsent(key, data) {
    checkKey(key, "put_if_absent");
    if (this.records.has(key)) return false;
    this.records.set(key, data.slice());
    return true;
  }

  async get(key) {
    checkKey(key, "get");
    if (key.endsWith("/transient")) {
      throw Object.assign(new Error("busy on purpose"), { name: "TransientStoreError" });
    }
    if (key.endsWith("/boom")) throw new TypeError("boom on purpose");
    return this.records.get(key) ?? null;
  }

  async delete(key) {
    checkKey(key, "delete");
    this.records.delete(key);
  }

  async list(prefix) {
    const base = checkPrefix(prefix);
    return [...this.records.keys()]
      .filter((key) => base === "" || key.startsWith(base + "/"))
      .sort(byCodePoint);
  }
}

export default {
  name: "memory-js",
  open: () => new MemoryStore(),
  // Each process holds its own map: a second handle is a second, empty store.
  capabilities: { cross_handle: false, cross_process: false, durable_reopen: false },
};
