#!/usr/bin/env node
// SPDX-License-Identifier: MIT
/*
 * MQTT 5.0 against the broker with MQTT.js 5 (npm `mqtt`, pinned by
 * tests/smoke/lib/mqttjs5/package-lock.json and installed by tests/smoke/lib/mqttjs5-install.sh
 * into the build directory: MQTTJS5_DIR names it). mTLS with the development certificates,
 * the server certificate verified (IP SANs 127.0.0.1 and 10.79.0.2). One line per scenario,
 * "PASS TAG/<name> (detail)" or "FAIL TAG/<name> (why)", each read from its own connections;
 * every wait is bounded (T ms) and a watchdog ends the run, so the process exits by itself.
 * A test client only: it never changes the broker's configuration and leaves no retained
 * message or kept session behind.
 *
 * usage: MQTTJS5_DIR=DIR node mqttjs5-check.mjs HOST PORT CERTS [TAG]   (TAG: default mqttjs5)
 *
 * Scenarios (issue 23):
 *   topic-alias-in    dev-5 sets Topic Aliases with their topics, then publishes with the alias
 *                     alone (and rebinds one): the subscriber gets every message on its topic
 *   topic-alias-out   a subscriber with Topic Alias Maximum 2 receives 12 messages on 3
 *                     topics: every one on the right topic after MQTT.js resolved the aliases,
 *                     no alias above 2, and at least one PUBLISH carried an alias without its
 *                     topic (the broker assigning aliases: fails until it does)
 *   shared-sub        ops/sa, ops-b/sb, ops-c/sc, ops-d/sd on $share/workers/devices/+/telemetry at QoS 1; dev-3
 *                     publishes 60 QoS 1 messages: each reaches exactly one member, every
 *                     member gets some (members on different cores too, ADR-070). A broker
 *                     whose CONNACK says Shared Subscriptions are not available must refuse
 *                     every SUBSCRIBE with 0x9E instead
 *   request-response  ops/rq asks dev-4 on devices/dev-4/cmd/x with a Response Topic
 *                     (devices/dev-4/reply/<n>) and binary Correlation Data; dev-4 answers
 *                     there: the property and the data round-trip byte for byte
 *   receive-maximum   a subscriber with Receive Maximum 2 that acknowledges each QoS 1
 *                     PUBLISH 250 ms late: counted on the wire, never more than 2
 *                     unacknowledged PUBLISHes to it, and all 10 arrive in order
 *   retain-handling   subscription option Retain Handling 0 (the retained message on every
 *                     SUBSCRIBE), 1 (only when the subscription is new), 2 (never)
 *   refuse-acl        dev-2 subscribing its own and dev-3's topics in one SUBSCRIBE: SUBACK
 *                     0x01 and 0x87 (Not authorized), the connection still serves
 *   refuse-client-id  dev-2's certificate with client id dev-3, ops's with ops-x: CONNACK
 *                     0x87 (Not authorized) and the connection closed
 */
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const [HOST, PORT_S, CERTS, TAG = 'mqttjs5'] = process.argv.slice(2);
const T = 10000;      // the longest wait for anything that must come (ms)
const QUIET = 1500;   // how long "nothing came" is watched (ms)
const WATCHDOG = 170000;
let failed = false;

function result(name, ok, detail) {
	failed = failed || !ok;
	console.log(`${ok ? 'PASS' : 'FAIL'} ${TAG}/${name} (${detail})`);
}

if (!HOST || !PORT_S || !CERTS || !process.env.MQTTJS5_DIR) {
	result('setup', false, 'usage: MQTTJS5_DIR=DIR mqttjs5-check.mjs HOST PORT CERTS [TAG]');
	process.exit(1);
}
let mqtt, mqttPacket;
try {
	const require = createRequire(path.join(process.env.MQTTJS5_DIR, 'package.json'));
	mqtt = require('mqtt');
	mqttPacket = require('mqtt-packet');
} catch (e) {
	result('setup', false, `MQTT.js not loadable from ${process.env.MQTTJS5_DIR}: ${e.message}`);
	process.exit(1);
}
let current = 'setup';
setTimeout(() => {
	result(current, false, `watchdog: the run took over ${WATCHDOG / 1000} s`);
	process.exit(1);
}, WATCHDOG).unref();

const ca = fs.readFileSync(`${CERTS}/ca.crt`);
const nonce = randomBytes(4).toString('hex'); // this run's messages, never an older run's
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/* Polls pred every 20 ms until it returns something truthy (that value) or ms pass (null). */
async function until(pred, ms = T) {
	const end = Date.now() + ms;
	for (;;) {
		const v = pred();
		if (v) return v;
		if (Date.now() >= end) return null;
		await sleep(20);
	}
}

/*
 * One MQTT.js 5.0 connection as identity `cert` with client id `id`; what it receives is
 * kept in lists the scenarios read with bounded waits. Never reconnects. `wire` also
 * parses the bytes as they arrive on the TLS socket, before MQTT.js (which handles one
 * packet at a time and waits for an acknowledgement it was asked to delay) sees them.
 */
function open(cert, id, { properties = {}, wire = false, ...more } = {}) {
	const c = mqtt.connect(`mqtts://${HOST}:${PORT_S}`, {
		ca,
		cert: fs.readFileSync(`${CERTS}/${cert}.crt`),
		key: fs.readFileSync(`${CERTS}/${cert}.key`),
		rejectUnauthorized: true,
		clientId: id,
		protocolVersion: 5,
		clean: true,
		keepalive: 30,
		reconnectPeriod: 0,
		connectTimeout: T,
		properties,
		...more,
	});
	const w = { c, id, rx: [], msgs: [], errors: [], closed: false, wireRx: [] };
	c.on('packetreceive', (p) => w.rx.push(p));
	c.on('message', (topic, payload, packet) => w.msgs.push({ topic, payload, packet }));
	c.on('error', (e) => w.errors.push(e));
	c.on('close', () => { w.closed = true; });
	if (wire) {
		const parser = mqttPacket.parser({ protocolVersion: 5 });
		parser.on('packet', (p) => w.wireRx.push(p));
		parser.on('error', (e) => w.errors.push(e));
		c.stream.on('data', (buf) => parser.parse(buf));
	}
	return w;
}

/* The CONNACK (null: none within T, or the connection closed first). */
async function connack(w) {
	const p = await until(() => w.rx.find((x) => x.cmd === 'connack') || (w.closed ? 'closed' : null));
	return p === 'closed' ? null : p;
}

/* open() and wait for the CONNACK; throws unless it accepted. */
async function connected(cert, id, opts) {
	const w = open(cert, id, opts);
	const ca_ = await connack(w);
	if (!ca_ || ca_.reasonCode !== 0) {
		w.c.end(true);
		throw new Error(`${id}: CONNACK ${ca_ ? '0x' + ca_.reasonCode.toString(16) : 'none'}` +
			`${w.errors.length ? ': ' + w.errors[0].message : ''}`);
	}
	return w;
}

/* SUBSCRIBE; the SUBACK's reason codes (null: none within T). */
async function sub(w, filters, opts = { qos: 1 }) {
	const n = w.rx.filter((p) => p.cmd === 'suback').length;
	w.c.subscribe(filters, opts, () => {});
	const acks = await until(() => {
		const s = w.rx.filter((p) => p.cmd === 'suback');
		return s.length > n ? s : null;
	});
	return acks ? acks[n].granted : null;
}

/* PUBLISH and, at QoS > 0, its acknowledgement: null when done, else why not. */
function pub(w, topic, payload, opts = { qos: 1 }) {
	return new Promise((resolve) => {
		const timer = setTimeout(() => resolve('no acknowledgement within T'), T);
		w.c.publish(topic, payload, opts, (err) => {
			clearTimeout(timer);
			resolve(err ? err.message : null);
		});
	});
}

/* The end of a connection: DISCONNECT (forced after 2 s), or dropped when `force`. */
function close(w, force = false) {
	return new Promise((resolve) => {
		if (w.closed) return resolve();
		const timer = setTimeout(() => { w.c.end(true); resolve(); }, 2000);
		w.c.end(force, {}, () => { clearTimeout(timer); resolve(); });
	});
}

const hex = (n) => (n === undefined || n === null ? String(n) : '0x' + Number(n).toString(16).padStart(2, '0'));
const codes = (g) => (g ? '[' + g.map(hex).join(', ') + ']' : 'no SUBACK');
const errs = (...ws) => ws.flatMap((w) => w.errors.map((e) => `${w.id}: ${e.message}`));

async function topicAliasIn() {
	const ops = await connected('ops', 'ops/js-alias-in');
	const d = await connected('dev-5', 'dev-5');
	const base = 'devices/dev-5/telemetry/alias/';
	const sent = [ // [topic on the wire, alias, payload, the topic it stands for]
		[base + 'a', 1, 'a1', base + 'a'], ['', 1, 'a2', base + 'a'],
		[base + 'b', 2, 'b1', base + 'b'], ['', 2, 'b2', base + 'b'], ['', 1, 'a3', base + 'a'],
		[base + 'c', 1, 'c1', base + 'c'], ['', 1, 'c2', base + 'c'], ['', 2, 'b3', base + 'b'],
	];
	const codes_ = await sub(ops, base + '+');
	const why = [];
	let aliasOnly = 0; // counted as MQTT.js wrote them: the topic left out, the alias alone
	d.c.on('packetsend', (p) => {
		if (p.cmd === 'publish' && p.topic.length === 0 && p.properties?.topicAlias) aliasOnly++;
	});
	const maxAlias = (await connack(d)).properties?.topicAliasMaximum;
	for (const [t, alias, p] of sent) {
		const e = await pub(d, t, `${nonce}:${p}`, { qos: 1, properties: { topicAlias: alias } });
		if (e) why.push(`${p}: ${e}`);
	}
	await until(() => ops.msgs.length >= sent.length);
	const got = ops.msgs.map((m) => `${m.topic} ${m.payload}`);
	const want = sent.map(([, , p, topic]) => `${topic} ${nonce}:${p}`);
	const ok = codes_?.[0] === 1 && why.length === 0 && aliasOnly === sent.filter(([t]) => t === '').length && JSON.stringify(got) === JSON.stringify(want) &&
		errs(ops, d).length === 0;
	result('topic-alias-in', ok, ok
		? `${sent.length} PUBLISHes, ${aliasOnly} with the alias alone (aliases 1 and 2, 1 rebound; the broker's maximum ${maxAlias}): every one delivered on its topic`
		: `SUBACK ${codes(codes_)}; ${aliasOnly} sent with the alias alone; ${why.join('; ')} got [${got.join('; ')}] want [${want.join('; ')}] ${errs(ops, d).join('; ')}`);
	await close(d);
	await close(ops);
}

async function topicAliasOut() {
	const max = 2;
	const ops = await connected('ops', 'ops/js-alias-out', { properties: { topicAliasMaximum: max } });
	const d = await connected('dev-6', 'dev-6');
	const base = 'devices/dev-6/telemetry/out/';
	const codes_ = await sub(ops, base + '+');
	// repeats at once and after another topic: any sensible alias strategy reuses one
	const sent = [...'aababcabccaa'].map((s, i) => [base + s, `${nonce}:${i}`]);
	const why = [];
	for (const [t, p] of sent) {
		const e = await pub(d, t, p);
		if (e) why.push(`${p}: ${e}`);
	}
	await until(() => ops.msgs.length >= sent.length);
	await sleep(300);
	const pubs = ops.rx.filter((p) => p.cmd === 'publish');
	const withAlias = pubs.filter((p) => p.properties?.topicAlias !== undefined);
	const aliasOnly = withAlias.filter((p) => p.topic.length === 0);
	const over = withAlias.filter((p) => p.properties.topicAlias < 1 || p.properties.topicAlias > max);
	const wrong = ops.msgs.filter((m) => {
		const i = sent.findIndex(([, p]) => p === String(m.payload));
		return i < 0 || sent[i][0] !== m.topic;
	});
	const delivered = ops.msgs.length === sent.length && wrong.length === 0 && over.length === 0 &&
		errs(ops).length === 0 && why.length === 0 && codes_?.[0] === 1;
	const detail = `${ops.msgs.length} of ${sent.length} on the right topic after alias resolution; ` +
		`${withAlias.length} PUBLISHes carried a Topic Alias, ${aliasOnly.length} without the topic` +
		(over.length ? `; ${over.length} alias(es) above the client's maximum ${max}` : '') +
		(wrong.length ? `; wrong: ${wrong.map((m) => `'${m.topic}' ${m.payload}`).join(', ')}` : '') +
		(why.length ? `; ${why.join('; ')}` : '') + (errs(ops).length ? `; ${errs(ops).join('; ')}` : '');
	result('topic-alias-out', delivered && aliasOnly.length > 0,
		delivered && aliasOnly.length === 0 ? `${detail}: the broker sent no outbound alias` : detail);
	await close(d);
	await close(ops);
}

async function sharedSub() {
	const n = 60;
	const filter = '$share/workers/devices/+/telemetry';
	/* four members of four service identities: a session lives on its identity's home core,
	 * so on a broker with several cores they usually live on different ones */
	const names = ['ops/sa', 'ops-b/sb', 'ops-c/sc', 'ops-d/sd'];
	const m = [];
	for (const id of names) m.push(await connected(id.split('/')[0], id));
	const g = [];
	for (const c of m) g.push(await sub(c, filter));
	/* a broker whose CONNACK says Shared Subscriptions are not available must refuse the
	 * filter with 0x9E (MQTT 5.0 3.2.2.3.18, 3.8.4); one that offers them must share */
	const flag = (await connack(m[0]))?.properties?.sharedSubscriptionAvailable;
	const offered = flag === undefined || flag === true || flag === 1; /* absent: available */
	if (!offered) {
		result('shared-sub', g.every((x) => x?.[0] === 0x9e),
			`the CONNACK says Shared Subscriptions are not available; SUBACK ${g.map(codes).join(' ')} (0x9e wanted)`);
		for (const c of m) await close(c);
		return;
	}
	const d = await connected('dev-3', 'dev-3');
	const why = [];
	for (let i = 0; i < n; i++) {
		const e = await pub(d, 'devices/dev-3/telemetry', `${nonce}:${i}`);
		if (e) why.push(`${i}: ${e}`);
	}
	const mine = (w) => w.msgs.filter((x) => String(x.payload).startsWith(nonce + ':')).map((x) => String(x.payload));
	await until(() => m.reduce((t, c) => t + mine(c).length, 0) >= n);
	await sleep(QUIET); // a duplicate would come now
	const got = m.map(mine);
	const all = got.flat();
	const dup = all.length - new Set(all).size;
	const lost = n - new Set(all).size;
	const ok = g.every((x) => x?.[0] === 1) && dup === 0 && lost === 0 && got.every((x) => x.length > 0) &&
		why.length === 0;
	result('shared-sub', ok, `SUBACK ${g.map(codes).join(' ')}; of ${n} QoS 1 messages ` +
		names.map((id, i) => `${id} got ${got[i].length}`).join(', ') + `, ${dup} twice, ${lost} lost` +
		(why.length ? `; ${why.join('; ')}` : ''));
	await close(d);
	for (const c of m) await close(c);
}

async function requestResponse() {
	const n = randomBytes(3).toString('hex');
	const replyTopic = `devices/dev-4/reply/${n}`;
	const corr = Buffer.concat([Buffer.from([0x00, 0xff, 0x80, 0x0a]), randomBytes(12)]);
	const dev = await connected('dev-4', 'dev-4');
	const rq = await connected('ops', 'ops/rq');
	const gd = await sub(dev, 'devices/dev-4/cmd/#');
	const gr = await sub(rq, replyTopic);
	let asked = null;
	dev.c.on('message', (topic, payload, packet) => {
		if (asked) return;
		asked = packet.properties || {};
		if (asked.responseTopic)
			dev.c.publish(asked.responseTopic, Buffer.concat([Buffer.from('re:'), payload]),
				{ qos: 1, properties: { correlationData: asked.correlationData } });
	});
	const e = await pub(rq, 'devices/dev-4/cmd/x', `${nonce}:ask`,
		{ qos: 1, properties: { responseTopic: replyTopic, correlationData: corr } });
	const r = await until(() => rq.msgs.find((m) => m.topic === replyTopic));
	const back = r?.packet.properties?.correlationData;
	const ok = gd?.[0] === 1 && gr?.[0] === 1 && !e && asked?.responseTopic === replyTopic &&
		Buffer.isBuffer(asked?.correlationData) && asked.correlationData.equals(corr) &&
		r && String(r.payload) === `re:${nonce}:ask` && Buffer.isBuffer(back) && back.equals(corr);
	result('request-response', ok, `SUBACK ${codes(gd)} ${codes(gr)}; dev-4 got Response Topic ` +
		`${asked?.responseTopic}; ${corr.length} B of Correlation Data ${corr.toString('hex')} came back as ` +
		`${back ? back.toString('hex') : 'nothing'}${e ? '; ' + e : ''}`);
	await close(dev);
	await close(rq);
}

async function receiveMaximum() {
	const n = 10, recvMax = 2, delayMs = 250;
	const delayed = (topic, message, packet, cb) => setTimeout(() => cb(0), delayMs);
	const s = await connected('ops', 'ops/js-rm', { properties: { receiveMaximum: recvMax }, wire: true,
		customHandleAcks: delayed });
	// outstanding: QoS 1 PUBLISHes come off the wire minus the PUBACKs sent back
	let out = 0, peak = 0;
	const ids = new Set();
	s.c.stream.on('data', () => {
		for (const p of s.wireRx.splice(0)) {
			if (p.cmd !== 'publish' || !p.qos) continue;
			if (ids.has(p.messageId)) out--; // a resend of one still outstanding
			ids.add(p.messageId);
			out++;
			peak = Math.max(peak, out);
		}
	});
	s.c.on('packetsend', (p) => {
		if (p.cmd === 'puback' && ids.delete(p.messageId)) out--;
	});
	const g = await sub(s, 'devices/dev-7/telemetry/rm');
	const d = await connected('dev-7', 'dev-7');
	const acks = [];
	for (let i = 0; i < n; i++) acks.push(pub(d, 'devices/dev-7/telemetry/rm', `${nonce}:${i}`));
	const why = (await Promise.all(acks)).filter((x) => x);
	await until(() => s.msgs.length >= n, T + n * delayMs);
	await sleep(300);
	const got = s.msgs.map((m) => String(m.payload));
	const want = Array.from({ length: n }, (_, i) => `${nonce}:${i}`);
	const ok = g?.[0] === 1 && peak >= 1 && peak <= recvMax && JSON.stringify(got) === JSON.stringify(want) &&
		errs(s).length === 0 && why.length === 0;
	result('receive-maximum', ok, `Receive Maximum ${recvMax}, each PUBACK ${delayMs} ms late: at most ${peak} ` +
		`unacknowledged QoS 1 PUBLISHes on the wire; ${got.length} of ${n} arrived` +
		(JSON.stringify(got) === JSON.stringify(want) ? ' in order' : `: [${got.join(', ')}]`) +
		(why.length ? `; ${why.join('; ')}` : '') + (errs(s).length ? `; ${errs(s).join('; ')}` : ''));
	await close(d);
	await close(s);
}

async function retainHandling() {
	const topic = 'devices/dev-8/telemetry/rh';
	const d = await connected('dev-8', 'dev-8');
	const e = await pub(d, topic, `${nonce}:kept`, { qos: 1, retain: true });
	const cs = await Promise.all([0, 1, 2].map((rh) => connected('ops', `ops/js-rh${rh}`)));
	const kept = (w) => w.msgs.filter((m) => String(m.payload) === `${nonce}:kept` && m.packet.retain).length;
	const first = await Promise.all(cs.map((w, rh) => sub(w, topic, { qos: 1, rh })));
	await Promise.all(cs.slice(0, 2).map((w) => until(() => kept(w) >= 1)));
	const again = await Promise.all(cs.map((w, rh) => sub(w, topic, { qos: 1, rh })));
	await until(() => kept(cs[0]) >= 2);
	await sleep(QUIET);
	const n = cs.map(kept);
	const ok = !e && first.every((g) => g?.[0] === 1) && again.every((g) => g?.[0] === 1) &&
		n[0] === 2 && n[1] === 1 && n[2] === 0;
	result('retain-handling', ok, `the retained message on two SUBSCRIBEs of one filter: Retain Handling 0 ` +
		`${n[0]} times (want 2), 1 ${n[1]} (want 1), 2 ${n[2]} (want 0)` +
		(ok ? '' : `; SUBACKs ${first.map(codes).join(' ')} / ${again.map(codes).join(' ')}${e ? '; ' + e : ''}`));
	await pub(d, topic, '', { qos: 1, retain: true }); // the retained message cleared again
	await Promise.all(cs.map((w) => close(w)));
	await close(d);
}

async function refuseAcl() {
	const d = await connected('dev-2', 'dev-2');
	const g = await sub(d, { 'devices/dev-2/cmd/#': { qos: 1 }, 'devices/dev-3/#': { qos: 1 } });
	const ok1 = g && g.length === 2 && g[0] === 1 && g[1] === 0x87;
	// the refusal does not end the connection: a publish of its own is acknowledged
	const e = await pub(d, 'devices/dev-2/telemetry/after-refusal', `${nonce}:x`);
	result('refuse-acl', ok1 && !e && !d.closed, `SUBACK ${codes(g)} for devices/dev-2/cmd/# and devices/dev-3/#; ` +
		`then ${e ? 'no PUBACK: ' + e : 'a PUBACK on the same connection'}`);
	await close(d);
}

async function refuseClientId() {
	const out = [];
	for (const [cert, id] of [['dev-2', 'dev-3'], ['ops', 'ops-x']]) {
		const w = open(cert, id);
		const p = await connack(w);
		const gone = await until(() => w.closed, T);
		out.push({ cert, id, rc: p?.reasonCode, gone });
		w.c.end(true);
	}
	result('refuse-client-id', out.every((o) => o.rc === 0x87 && o.gone),
		out.map((o) => `${o.cert}'s certificate as ${o.id}: CONNACK ${hex(o.rc)}${o.gone ? ', closed' : ', still open'}`).join('; '));
}

const scenarios = [
	['topic-alias-in', topicAliasIn], ['topic-alias-out', topicAliasOut], ['shared-sub', sharedSub],
	['request-response', requestResponse], ['receive-maximum', receiveMaximum],
	['retain-handling', retainHandling], ['refuse-acl', refuseAcl], ['refuse-client-id', refuseClientId],
];
for (const [name, fn] of scenarios) {
	current = name;
	try {
		await fn();
	} catch (e) { // a scenario that cannot run is a failure, never a pass
		result(name, false, `${e.name}: ${e.message}`);
	}
}
process.exit(failed ? 1 : 0);
