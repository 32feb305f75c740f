"""A hookbus interceptor in Python: the README's guard, on nats-py.

It denies the calculator on tool.before, registers itself in the registry
with a lease (docs/PROTOCOL.md, "Leases"), renews the lease every second
and removes its registration when it stops: killed, loops stop calling it
within seconds.

    pip install nats-py
    NATS_URL=nats://127.0.0.1:4222 python3 examples/python/guard.py

Then, in another terminal: bin/loop run --nats nats://127.0.0.1:4222 "What is 6*7?"
"""

import asyncio
import json
import os
import signal
import socket
import uuid

import nats

PLUGIN = os.environ.get("GUARD_PLUGIN", "guard-py")
STAGE = "tool.before"
PREFIX = "hookbus"


async def decide(payload):
    """The policy: payload is tool.before's data (docs/schema/payloads)."""
    if payload["call"]["name"] == "calculator":
        return {"decision": "deny", "reason": "the calculator is off today"}
    return None  # allow


async def main():
    url = os.environ.get("NATS_URL", "nats://127.0.0.1:4222")
    try:
        nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=0)
    except Exception as e:  # no server there
        raise SystemExit(f"guard: no NATS server at {url} ({e}): start one (bin/loop server), or set NATS_URL")
    js = nc.jetstream()

    async def handle(msg):
        budget = int((msg.headers or {}).get("Hookbus-Timeout-Ms", "5000")) / 1000

        async def error(code, text):
            await nc.publish(msg.reply, b"", headers={"Nats-Service-Error-Code": code, "Nats-Service-Error": text})

        if not msg.data:  # claim-checked data (ce-dataref): not fetched by this example
            return await error("500", "claim-checked requests are not handled by this example")
        try:
            payload = json.loads(msg.data)
        except ValueError:
            return await error("400", "malformed request: the body is not JSON")
        try:
            decision = await asyncio.wait_for(decide(payload), budget)
        except asyncio.TimeoutError:
            return await error("504", "no decision within the deadline")
        except Exception as e:
            return await error("500", str(e))
        await msg.respond(json.dumps(decision).encode() if decision else b"")

    await nc.subscribe(f"{PREFIX}.hook.{STAGE}.{PLUGIN}", queue=PLUGIN, cb=handle)
    await nc.flush()

    # The lease first, then the registration marked leased.
    leases = await js.key_value(f"{PREFIX}_leases")
    hooks = await js.key_value(f"{PREFIX}_hooks")
    instance = uuid.uuid4().hex
    lease_key = f"{PLUGIN}.{instance}"
    lease = json.dumps({"plugin": PLUGIN, "instance": instance, "host": f"{socket.gethostname()}:{os.getpid()}"}).encode()
    await leases.put(lease_key, lease)
    reg_key = f"{STAGE}.{PLUGIN}"
    await hooks.put(reg_key, json.dumps({"lease": True, "plugin": PLUGIN, "stage": STAGE, "tools": "calculator"}).encode())
    print(f"guard: plugin {PLUGIN} serving {STAGE} on {url} (registered, with a lease)", flush=True)

    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            await leases.put(lease_key, lease)  # renewed well within the bucket's 4 s

    # Stopped cleanly: the lease goes, and the registration with it when no
    # other instance of the plugin holds one.
    await leases.delete(lease_key)
    try:
        keys = await leases.keys()
    except Exception:  # nats-py raises when the bucket holds no key
        keys = []
    others = [k for k in keys if k.startswith(PLUGIN + ".") and k != lease_key]
    if not others:
        entry = await hooks.get(reg_key)
        if entry.value and json.loads(entry.value).get("lease") is True:
            await hooks.delete(reg_key, last=entry.revision)
    await nc.drain()
    print("guard: stopped, registration removed", flush=True)



if __name__ == "__main__":
    asyncio.run(main())
