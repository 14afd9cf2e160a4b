"""A dw-store/1 child that misbehaves on purpose: ``python exec_misbehaving_child.py MODE [OP]``.

In mode ``serve`` it serves a dict (a key ``raise/<kind>`` answers an error of that kind);
other modes serve it until the first request whose op is OP (any op when OP is omitted),
then do what MODE says. Every mode writes a recognisable line to stderr first, so the tests
can check that the parent's error quotes the child's last stderr lines.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading

MODES = ("serve", "exit", "hang", "not-json", "unknown-id", "wrong-shape", "twice",
         "bad-version", "no-handshake", "garbage-handshake", "stdout-closed", "reverse", "deaf")


def reply(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    mode = sys.argv[1]
    trigger = sys.argv[2] if len(sys.argv) > 2 else None
    print(f"misbehaving child: mode {mode}", file=sys.stderr, flush=True)
    if mode == "no-handshake":
        print("misbehaving child: giving up before the handshake", file=sys.stderr, flush=True)
        return 7
    if mode == "garbage-handshake":
        reply({"hello": "world"})
        sys.stdin.read()
        return 0
    version = "dw-store/9" if mode == "bad-version" else "dw-store/1"
    reply({"protocol": version, "store": "misbehaving", "put_if_absent": True})
    if mode == "deaf":
        print("misbehaving child: deaf, never reading stdin", file=sys.stderr, flush=True)
        threading.Event().wait()  # blocks forever without reading: stdin's pipe fills up
    records: dict[str, str] = {}
    held: list[dict[str, object]] = []
    for line in sys.stdin:
        request = json.loads(line)
        op, rid = request["op"], request["id"]
        if mode == "reverse" and op != "close":
            # Holds gets until two are in flight, then answers the later one first, each
            # with its own key as the value.
            held.append(request)
            if len(held) == 2:
                for waiting in reversed(held):
                    echo = base64.b64encode(str(waiting["key"]).encode()).decode()
                    reply({"id": waiting["id"], "result": echo})
                held.clear()
            continue
        if mode == "serve" and str(request.get("key", "")).startswith("raise/"):
            kind = str(request["key"]).split("/", 1)[1]
            reply({"id": rid, "error": {"kind": kind, "message": f"raised {kind} on purpose"}})
            continue
        if mode != "serve" and (trigger is None or op == trigger):
            print(f"misbehaving child: {mode} on {op}", file=sys.stderr, flush=True)
            if mode == "exit":
                return 3
            if mode == "hang":
                sys.stdin.read()  # never answers; blocks until the parent ends it
                return 0
            if mode == "not-json":
                sys.stdout.write("debug: this is not json\n")
                sys.stdout.flush()
                continue
            if mode == "unknown-id":
                reply({"id": rid + 1000, "result": None})
                continue
            if mode == "wrong-shape":
                reply({"id": rid, "result": "surely not a boolean"})
                continue
            if mode == "twice":
                reply({"id": rid, "result": None if op != "put_if_absent" else True})
                reply({"id": rid, "result": None if op != "put_if_absent" else True})
                continue
            if mode == "stdout-closed":
                os.close(1)
                sys.stdin.read()
                return 0
        if op == "close":
            reply({"id": rid, "result": None})
            return 0
        key = request.get("key", "")
        if op == "put":
            records[key] = request["data"]
            reply({"id": rid, "result": None})
        elif op == "put_if_absent":
            created = key not in records
            records.setdefault(key, request["data"])
            reply({"id": rid, "result": created})
        elif op == "get":
            reply({"id": rid, "result": records.get(key)})
        elif op == "delete":
            records.pop(key, None)
            reply({"id": rid, "result": None})
        else:
            prefix = request["prefix"].rstrip("/")
            reply({"id": rid, "result": sorted(k for k in records if k.startswith(prefix + "/"))})
    return 0


if __name__ == "__main__":
    sys.exit(main())
