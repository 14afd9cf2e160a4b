/** Types of dw_store_shim.js: serve a store as a dw-store/1 child (Deno, Node.js >= 20). */

export declare const PROTOCOL: "dw-store/1";

/** The store shape the shim serves; putIfAbsent and close are optional. */
export interface ControlPlaneStore {
  put(key: string, data: Uint8Array): Promise<void>;
  putIfAbsent?(key: string, data: Uint8Array): Promise<boolean>;
  get(key: string): Promise<Uint8Array | null>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
  close?(): Promise<void> | void;
}

/** The capability names of dw-testing, as in a Python factory's `.capabilities`. */
export type Capability =
  | "put_if_absent"
  | "cross_handle"
  | "cross_process"
  | "durable_reopen"
  | "large_values"
  | "distinguishes_conflict"
  | "segment_prefixes"
  | "sorted_list"
  | "refuses_bad_keys"
  | "nested_keys";

export interface ServeOptions {
  /** The store's name in reports. */
  name: string;
  /** Opens the one handle this process serves; `args` are the command-line arguments. */
  open: (args: string[]) => ControlPlaneStore | Promise<ControlPlaneStore>;
  /** What the suite may assume, e.g. `{ cross_process: true, durable_reopen: true }`. */
  capabilities?: Partial<Record<Capability, boolean>>;
}

/** Serve until the parent closes the handle; then exits the process. */
export declare function serve(options: ServeOptions, args?: string[]): Promise<never>;

/** Thrown for a key or prefix that breaks the key rules; the parent raises InvalidKey. */
export declare class InvalidKey extends Error {}
/** Thrown when the backend could not decide now; the parent raises TransientStoreError. */
export declare class TransientStoreError extends Error {}
/** Thrown when the store cannot be reached; the parent raises StoreUnavailable. */
export declare class StoreUnavailable extends Error {}

/** "invalid_key" | "transient" | "unavailable" | "failed", as the shim maps `error`. */
export declare function errorKind(
  error: unknown,
): "invalid_key" | "transient" | "unavailable" | "failed";

/** Returns `key`, or throws InvalidKey naming `op` and the broken rule. */
export declare function checkKey(key: string, op: string): string;
/** Returns the prefix without a trailing '/', or throws InvalidKey. */
export declare function checkPrefix(prefix: string): string;
/** Orders strings by Unicode code point, as list() must. */
export declare function byCodePoint(a: string, b: string): number;
