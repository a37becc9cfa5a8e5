// faultlane-relay driven by the real Toxiproxy client for Node.js
// (toxiproxy-node-client, pinned in package-lock.json), the way its README
// uses it. Run by ctest (relay_toxiproxy_compat, label compat):
//
//   node toxiproxy_client_test.js path/to/faultlane-relay
//
// It starts the relay with --api on a free port and a plain TCP peer that
// answers a line "N\n" with N bytes, then creates a proxy in front of the
// peer and checks, through the client only: latency (measured), bandwidth
// (measured), a faultlane stall and drop_frame as extra toxic types, list,
// update, disable/enable, remove, reset, populate, delete. Every wait has a
// deadline; any failure exits 1 with the reason.
"use strict";
const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const net = require("node:net");
const toxiproxyClient = require("toxiproxy-node-client");

const deadline = (ms, what) =>
  new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref());

// The peer: each line "N" is answered with N bytes of 'x'.
function startPeer() {
  const server = net.createServer((socket) => {
    let pending = "";
    socket.on("data", (chunk) => {
      pending += chunk.toString();
      let nl;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const n = Number(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
        socket.write(Buffer.alloc(n, "x"));
      }
    });
    socket.on("error", () => {});
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

function startRelay(program) {
  const relay = spawn(program, ["--api", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const api = new Promise((resolve, reject) => {
    relay.stdout.on("data", (d) => {
      out += d.toString();
      const m = out.match(/api listening on (http:\/\/[0-9.:]+)/);
      if (m) resolve(m[1]);
    });
    relay.on("exit", (code) => reject(new Error(`faultlane-relay exited (${code}): ${out}`)));
  });
  return { relay, api: Promise.race([api, deadline(20000, "faultlane-relay --api to start")]) };
}

// Asks for n bytes through `listen` (HOST:PORT); resolves with what came
// back within `ms` and the time it took.
function fetchBytes(listen, n, ms) {
  const [host, port] = [listen.slice(0, listen.lastIndexOf(":")), Number(listen.slice(listen.lastIndexOf(":") + 1))];
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const socket = net.connect(port, host);
    let got = 0;
    const finish = (error) => {
      clearTimeout(timer);
      socket.destroy();
      const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
      if (error) reject(error);
      else resolve({ got, elapsed });
    };
    const timer = setTimeout(() => finish(), ms);
    socket.on("connect", () => socket.write(`${n}\n`));
    socket.on("data", (d) => {
      got += d.length;
      if (got >= n) finish();
    });
    socket.on("error", (e) => finish(e));
    socket.on("close", () => finish());
  });
}

async function main() {
  const program = process.argv[2];
  assert.ok(program, "usage: node toxiproxy_client_test.js FAULTLANE_RELAY");
  const peer = await startPeer();
  const upstream = `127.0.0.1:${peer.address().port}`;
  const { relay, api } = startRelay(program);
  try {
    const toxiproxy = new toxiproxyClient.Toxiproxy(await api);
    await run(toxiproxy, upstream);
    console.log("toxiproxy-node-client: every check passed");
  } finally {
    relay.kill("SIGTERM");
    peer.close();
  }
}

async function run(toxiproxy, upstream) {
  const version = await toxiproxy.getVersion();
  assert.match(version, /"version":"2\./);

  // As in the client's README: a proxy on localhost:0, then a toxic.
  const proxy = await toxiproxy.createProxy({ listen: "localhost:0", name: "peer", upstream });
  assert.equal(proxy.name, "peer");
  assert.equal(proxy.enabled, true);
  assert.match(proxy.listen, /^127\.0\.0\.1:[1-9][0-9]*$/);
  const direct = await fetchBytes(proxy.listen, 100, 5000);
  assert.equal(direct.got, 100, "bytes through the proxy");

  // latency: 600 ms on every response, measured. Bounds are one-sided
  // where a loaded machine (or ThreadSanitizer) could only add time.
  const latency = await proxy.addToxic({ attributes: { latency: 600 }, type: "latency" });
  assert.equal(latency.name, "latency_downstream");
  assert.equal(latency.stream, "downstream");
  assert.deepEqual(latency.attributes, { latency: 600, jitter: 0 });
  const slow = await fetchBytes(proxy.listen, 100, 10000);
  assert.equal(slow.got, 100);
  assert.ok(slow.elapsed >= 600, `latency 600 ms, round trip took ${slow.elapsed} ms`);

  // update: down to 50 ms, so the answer now comes well before 600 ms.
  const updated = await latency.update({ attributes: { latency: 50 } });
  assert.equal(updated.attributes.latency, 50);
  const faster = await fetchBytes(proxy.listen, 100, 10000);
  assert.equal(faster.got, 100);
  assert.ok(faster.elapsed >= 50 && faster.elapsed < 600, `latency 50 ms, took ${faster.elapsed} ms`);
  await updated.remove();

  // bandwidth: 500 KB/s, 500 000 bytes in about a second.
  const bandwidth = await proxy.addToxic({ attributes: { rate: 500 }, type: "bandwidth" });
  assert.equal(bandwidth.attributes.rate, 500);
  const capped = await fetchBytes(proxy.listen, 500000, 20000);
  assert.equal(capped.got, 500000);
  const rate = 500000 / (capped.elapsed / 1000) / 1000;  // KB/s
  // Never above the cap; below it only by what a loaded machine takes.
  assert.ok(rate > 150 && rate < 560, `bandwidth 500 KB/s measured ${rate.toFixed(0)} KB/s`);
  await bandwidth.remove();

  // faultlane's own faults as toxic types: a stall after 10 bytes of each
  // response holds the rest; removing it lets the rest through.
  const stall = await proxy.addToxic({ type: "stall", name: "hold", attributes: { after_bytes: 10 } });
  assert.deepEqual(stall.attributes, { after_bytes: 10 });
  const held = await fetchBytes(proxy.listen, 100, 3000);
  assert.equal(held.got, 10, "a stall after 10 bytes lets 10 through");
  const dropFrame = await proxy.addToxic({
    type: "drop_frame", stream: "upstream", attributes: { opcode: "write", count: 1 },
  });
  assert.equal(dropFrame.name, "drop_frame_upstream");
  const listed = await toxiproxy.get("peer");
  const shown = await listed.getToxic("drop_frame_upstream");
  assert.deepEqual(shown.attributes, { opcode: "write", count: 1 });
  await assert.rejects(proxy.addToxic({ type: "no_such_type" }), /status code 400/);
  await assert.rejects(proxy.addToxic({ type: "stall", name: "hold" }), /status code 409/);
  await stall.remove();

  // list, disable, enable.
  const all = await toxiproxy.getAll();
  assert.deepEqual(Object.keys(all), ["peer"]);
  const disabled = await proxy.update({ enabled: false, listen: proxy.listen, upstream, name: "peer" });
  assert.equal(disabled.enabled, false);
  await assert.rejects(fetchBytes(proxy.listen, 100, 2000), /ECONNREFUSED/);
  const enabled = await proxy.update({ enabled: true, listen: proxy.listen, upstream, name: "peer" });
  assert.equal(enabled.enabled, true);
  assert.equal((await fetchBytes(enabled.listen, 100, 5000)).got, 100);

  // reset: every toxic gone, every proxy enabled.
  await toxiproxy.reset();
  const afterReset = await toxiproxy.get("peer");
  await assert.rejects(afterReset.getToxic("drop_frame_upstream"), /status code 404/);

  // populate: adds a second proxy, keeps the first.
  const populated = await toxiproxy.populate([{ name: "second", listen: "127.0.0.1:0", upstream }]);
  assert.ok(populated.second, "populate returns the proxies it made");
  assert.equal((await fetchBytes(populated.second.listen, 100, 5000)).got, 100);
  assert.deepEqual(Object.keys(await toxiproxy.getAll()).sort(), ["peer", "second"]);

  // delete.
  await populated.second.remove();
  await enabled.remove();
  await assert.rejects(toxiproxy.get("peer"), /status code 404/);
  assert.deepEqual(Object.keys(await toxiproxy.getAll()), []);
}

Promise.race([main(), deadline(120000, "the whole test")]).then(
  () => process.exit(0),
  (e) => {
    console.error(`FAILED: ${e.stack || e}`);
    process.exit(1);
  },
);
