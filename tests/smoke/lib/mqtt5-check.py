#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""MQTT 5.0 against the broker with a real client library: Python paho-mqtt (Debian's
python3-paho-mqtt, MQTTv5) over TLS with the development certificates. One line per
scenario, "PASS mqtt5/<name> (detail)" or "FAIL mqtt5/<name> (why)", each read from its own
connection; every wait is bounded (T seconds), so the whole run ends by itself.

usage: mqtt5-check.py HOST PORT CERTS [TAG [console]]   (TAG prefixes the names: default mqtt5;
       console: the broker has ops as a console identity, and the console is checked too)

Identities: the development CA's dev-1..dev-10 (devices: devices/<id>/# only) and ops (a
service: subscribes devices/+/telemetry/# and devices/+/status, publishes devices/+/cmd/#).
"""
import queue
import sys
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

HOST, PORT, CERTS = sys.argv[1], int(sys.argv[2]), sys.argv[3]
TAG = sys.argv[4] if len(sys.argv) > 4 else "mqtt5"
CONSOLE = len(sys.argv) > 5 and sys.argv[5] == "console"
T = 10.0       # the longest wait for anything that must come
QUIET = 1.5    # how long "nothing came" is watched
failed = False


def result(name, ok, detail):
    global failed
    failed = failed or not ok
    print("%s %s/%s (%s)" % ("PASS" if ok else "FAIL", TAG, name, detail), flush=True)


def props(kind, **kv):
    p = Properties(kind)
    for k, v in kv.items():
        setattr(p, k, v)
    return p


class Client:
    """A paho MQTTv5 client whose callbacks feed queues the scenarios read with timeouts."""

    def __init__(self, cert, cid, clean=True, expiry=None, will=None, **connect_props):
        self.msgs, self.acks, self.connacks, self.gone = (queue.Queue() for _ in range(4))
        c = mqtt.Client(client_id=cid, protocol=mqtt.MQTTv5)
        c.tls_set(ca_certs=CERTS + "/ca.crt", certfile="%s/%s.crt" % (CERTS, cert),
                  keyfile="%s/%s.key" % (CERTS, cert))
        c.tls_insecure_set(True)  # the development server certificate names localhost
        c.on_connect = lambda cl, u, flags, rc, p=None: self.connacks.put((rc, flags, p))
        c.on_message = lambda cl, u, m: self.msgs.put(m)
        c.on_subscribe = lambda cl, u, mid, rcs, p=None: self.acks.put(rcs)
        c.on_unsubscribe = lambda cl, u, mid, p, rcs: self.acks.put(rcs)
        c.on_disconnect = lambda cl, u, rc, p=None: self.gone.put(rc)
        if will:
            c.will_set(**will)
        cp = props(PacketTypes.CONNECT, **connect_props)
        if expiry is not None:
            cp.SessionExpiryInterval = expiry
        self.c = c
        c.connect(HOST, PORT, keepalive=30, clean_start=clean, properties=cp)
        c.loop_start()
        self.rc, self.flags, self.props = self.connacks.get(timeout=T)

    @property
    def ok(self):
        return self.rc.value == 0

    def sub(self, topic, qos=1, **opts):
        self.c.subscribe(topic, options=SubscribeOptions(qos=qos, **opts))
        return [r.value for r in self.acks.get(timeout=T)]

    def unsub(self, topic):
        self.c.unsubscribe(topic)
        rcs = self.acks.get(timeout=T)
        return [r.value for r in (rcs if isinstance(rcs, list) else [rcs])]

    def pub(self, topic, payload, qos=1, retain=False, **kv):
        info = self.c.publish(topic, payload, qos=qos, retain=retain,
                              properties=props(PacketTypes.PUBLISH, **kv) if kv else None)
        if qos:
            info.wait_for_publish(timeout=T)
        return info

    def recv(self, timeout=T):
        try:
            return self.msgs.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self, clean=True):
        if clean:
            self.c.disconnect()
        self.c.loop_stop()


def uprops(m):
    return list(getattr(m.properties, "UserProperty", []) or []) if m else []


def scenario(fn):
    try:
        fn()
    except Exception as e:  # a scenario that cannot run is a failure, never a pass
        result(fn.__name__.replace("_", "-"), False, "%s: %s" % (type(e).__name__, e))


def properties_passed():
    ops = Client("ops", "ops/5-props")
    old = mqtt.Client(client_id="ops/311-props", protocol=mqtt.MQTTv311)
    got311 = queue.Queue()
    old.tls_set(ca_certs=CERTS + "/ca.crt", certfile=CERTS + "/ops.crt", keyfile=CERTS + "/ops.key")
    old.tls_insecure_set(True)
    old.on_message = lambda c, u, m: got311.put(m)
    old.on_connect = lambda c, u, f, rc: c.subscribe("devices/dev-1/telemetry/#", 1)
    old.connect(HOST, PORT, 30)
    old.loop_start()
    codes = ops.sub("devices/dev-1/telemetry/#")
    time.sleep(0.5)
    d1 = Client("dev-1", "dev-1")
    d1.pub("devices/dev-1/telemetry/p", b"hello", UserProperty=[("k", "v"), ("k2", "v2")],
           ContentType="text/plain", ResponseTopic="devices/dev-1/cmd/resp", CorrelationData=b"abc",
           PayloadFormatIndicator=1, MessageExpiryInterval=60)
    m = ops.recv()
    o = got311.get(timeout=T)
    p = m.properties if m else None
    ok = (codes == [1] and m is not None and m.payload == b"hello" and uprops(m) == [("k", "v"), ("k2", "v2")]
          and p.ContentType == "text/plain" and p.ResponseTopic == "devices/dev-1/cmd/resp"
          and p.CorrelationData == b"abc" and p.PayloadFormatIndicator == 1
          and 0 < p.MessageExpiryInterval <= 60 and not hasattr(p, "TopicAlias")
          and o.payload == b"hello")
    result("properties", ok, "user properties %s, content type %s, response topic, correlation data, "
           "expiry %s s left; a 3.1.1 subscriber got the payload" %
           (uprops(m), getattr(p, "ContentType", None), getattr(p, "MessageExpiryInterval", None)))
    # request/response: ops answers on the response topic with the correlation data
    d1.sub("devices/dev-1/cmd/#")
    ops.pub("devices/dev-1/cmd/resp", b"answer", CorrelationData=p.CorrelationData if p else b"")
    r = d1.recv()
    result("request-response", r is not None and r.payload == b"answer" and
           getattr(r.properties, "CorrelationData", None) == b"abc",
           "dev-1 got the answer with correlation data %r" % (getattr(r.properties, "CorrelationData", None) if r else None))
    # a 3.1.1 publisher's message to a 5.0 subscriber: no properties
    ops.sub("devices/dev-10/telemetry/#")
    d10 = mqtt.Client(client_id="dev-10", protocol=mqtt.MQTTv311)
    d10.tls_set(ca_certs=CERTS + "/ca.crt", certfile=CERTS + "/dev-10.crt", keyfile=CERTS + "/dev-10.key")
    d10.tls_insecure_set(True)
    d10.connect(HOST, PORT, 30)
    d10.loop_start()
    d10.publish("devices/dev-10/telemetry/from311", b"x", 1).wait_for_publish(timeout=T)
    d10.loop_stop()
    d10.disconnect()
    m = ops.recv()
    result("from-311", m is not None and m.payload == b"x" and uprops(m) == [] and
           not hasattr(m.properties, "ContentType"), "a 3.1.1 PUBLISH reached the 5.0 subscriber without properties")
    old.loop_stop()
    old.disconnect()
    ops.close()
    d1.close()


def refusals():
    out = []
    c = Client("dev-2", "")
    out.append(("empty client id", c.rc.value, 0x85))
    c.close(False)
    c = Client("dev-2", "dev-3")
    out.append(("another identity's id", c.rc.value, 0x87))
    c.close(False)
    c = Client("dev-2", "dev-2", AuthenticationMethod="SCRAM-SHA-1")
    out.append(("enhanced authentication", c.rc.value, 0x8C))
    c.close(False)
    result("refusals", all(a == b for _, a, b in out),
           ", ".join("%s 0x%02x" % (n, a) for n, a, _ in out))


def connack_properties():
    c = Client("dev-2", "dev-2", expiry=300)
    p = c.props
    # shared subscriptions are offered by a broker with one broker core only (ADR-069)
    offered = getattr(p, "SharedSubscriptionAvailable", 1)
    ok = (c.ok and p.ReceiveMaximum >= 1 and p.MaximumPacketSize > 0 and p.TopicAliasMaximum >= 1 and
          p.SubscriptionIdentifierAvailable == 1 and offered in (0, 1) and p.SessionExpiryInterval == 300)
    result("connack", ok, "receive maximum %s, maximum packet size %s, topic alias maximum %s, subscription "
           "identifiers, shared subscriptions %s, session expiry %s (as asked)" %
           (getattr(p, "ReceiveMaximum", None), getattr(p, "MaximumPacketSize", None),
            getattr(p, "TopicAliasMaximum", None), "offered" if offered else "not offered",
            getattr(p, "SessionExpiryInterval", None)))
    shared = c.sub("$share/g/devices/dev-2/cmd/#")
    want = [1] if offered else [0x9E]
    result("shared-as-announced", shared == want, "SUBSCRIBE $share/g/...: 0x%02x, as the CONNACK announced "
           "(shared subscriptions %s)" % (shared[0], "offered" if offered else "not offered"))
    c.close()


def session_expiry():
    d = Client("dev-6", "dev-6", expiry=300)
    d.sub("devices/dev-6/cmd/#")
    d.close()
    e = Client("dev-7", "dev-7", expiry=0)
    e.sub("devices/dev-7/cmd/#")
    e.close()
    ops = Client("ops", "ops/5-sess")
    ops.pub("devices/dev-6/cmd/a", b"kept")
    ops.pub("devices/dev-6/cmd/b", b"expires", MessageExpiryInterval=1)
    time.sleep(2.2)
    d = Client("dev-6", "dev-6", clean=False, expiry=300)
    m1, m2 = d.recv(), d.recv(QUIET)
    e = Client("dev-7", "dev-7", clean=False, expiry=0)
    ok = (d.flags.get("session present") == 1 and m1 is not None and m1.payload == b"kept" and m2 is None and
          e.flags.get("session present") == 0)
    result("session-expiry", ok, "expiry 300: session present, the queued message delivered and the one past "
           "its 1 s Message Expiry Interval not; expiry 0: no session kept")
    d.close()
    e.close()
    ops.close()


def subscription_options():
    d = Client("dev-4", "dev-4")
    d.pub("devices/dev-4/telemetry/r", b"retained", retain=True)
    ops = Client("ops", "ops/5-opts")
    rh2 = ops.sub("devices/dev-4/telemetry/#", retainHandling=2)
    none2 = ops.recv(QUIET)
    ops.unsub("devices/dev-4/telemetry/#")
    ops.sub("devices/dev-4/telemetry/#", retainHandling=1)
    first = ops.recv()
    ops.sub("devices/dev-4/telemetry/#", retainHandling=1)
    again = ops.recv(QUIET)
    ok = rh2 == [1] and none2 is None and first is not None and first.retain and again is None
    result("retain-handling", ok, "2: nothing; 1: the retained message once, not on the repeated SUBSCRIBE")
    # Retain As Published: a live retained PUBLISH keeps RETAIN 1 only for the subscription asking it
    plain = Client("ops", "ops/5-plain")
    plain.sub("devices/dev-4/telemetry/#", retainHandling=2)
    ops.sub("devices/dev-4/telemetry/#", retainAsPublished=True, retainHandling=2)
    d.pub("devices/dev-4/telemetry/r", b"live", retain=True)
    a, b = ops.recv(), plain.recv()
    result("retain-as-published", a is not None and a.retain and b is not None and not b.retain,
           "RETAIN %s with Retain As Published, %s without" % (a.retain if a else None, b.retain if b else None))
    # No Local: dev-4 does not get its own message back; ops does
    d.sub("devices/dev-4/telemetry/#", noLocal=True, retainHandling=2)
    d.pub("devices/dev-4/telemetry/n", b"own")
    own, seen = d.recv(QUIET), plain.recv()
    result("no-local", own is None and seen is not None and seen.payload == b"own",
           "the publisher's own No Local subscription got nothing, another subscriber got it")
    unsub = ops.unsub("devices/dev-4/telemetry/#") + ops.unsub("devices/never/#")
    result("unsuback", unsub == [0x00, 0x11], "UNSUBACK reason codes %s" % ["0x%02x" % r for r in unsub])
    d.pub("devices/dev-4/telemetry/r", b"", retain=True)  # the retained message cleared again
    d.close()
    ops.close()
    plain.close()


def topic_alias():
    ops = Client("ops", "ops/5-alias")
    ops.sub("devices/dev-5/telemetry/#")
    d = Client("dev-5", "dev-5")
    d.pub("devices/dev-5/telemetry/a", b"one", TopicAlias=1)
    d.pub("", b"two", TopicAlias=1)
    a, b = ops.recv(), ops.recv()
    ok = (a is not None and b is not None and (a.topic, a.payload, b.topic, b.payload) ==
          ("devices/dev-5/telemetry/a", b"one", "devices/dev-5/telemetry/a", b"two"))
    result("topic-alias", ok, "a topic set on alias 1, then the alias alone: both on %s" % (b.topic if b else None))
    d.pub("devices/dev-5/telemetry/a", b"bad", qos=0, TopicAlias=60000)
    try:
        rc = d.gone.get(timeout=T)
    except queue.Empty:
        rc = None
    result("topic-alias-invalid", rc is not None and getattr(rc, "value", rc) == 0x94,
           "alias above the maximum: DISCONNECT %s" % rc)
    d.close(False)
    ops.close()


def will_delay():
    ops = Client("ops", "ops/5-will")
    ops.sub("devices/+/status")
    will = {"topic": "devices/dev-9/status", "payload": b"gone", "qos": 1,
            "properties": props(PacketTypes.WILLMESSAGE, WillDelayInterval=2)}
    d = Client("dev-9", "dev-9", expiry=300, will=will)
    t0 = time.monotonic()
    d.c.socket().close()  # the connection is lost: no DISCONNECT
    d.c.loop_stop()
    early = ops.recv(1.0)
    m = ops.recv()
    dt = time.monotonic() - t0
    result("will-delay", early is None and m is not None and m.payload == b"gone" and dt >= 1.5,
           "the will arrived %.1f s after the connection was lost (Will Delay Interval 2 s)" % dt)
    ops.close()


def subscription_ids():
    d = Client("dev-9", "dev-9")
    d.c.subscribe("devices/dev-9/cmd/#", options=SubscribeOptions(qos=1),
                  properties=props(PacketTypes.SUBSCRIBE, SubscriptionIdentifier=7))
    a1 = d.acks.get(timeout=T)
    d.c.subscribe("devices/dev-9/cmd/a", options=SubscribeOptions(qos=1),
                  properties=props(PacketTypes.SUBSCRIBE, SubscriptionIdentifier=70000))
    a2 = d.acks.get(timeout=T)
    ops = Client("ops", "ops/5-subid")
    ops.pub("devices/dev-9/cmd/a", b"both")
    ops.pub("devices/dev-9/cmd/b", b"one")
    m1, m2 = d.recv(), d.recv()
    ids1 = sorted(getattr(m1.properties, "SubscriptionIdentifier", []) or []) if m1 else None
    ids2 = sorted(getattr(m2.properties, "SubscriptionIdentifier", []) or []) if m2 else None
    ok = (a1[0].value == 1 and a2[0].value == 1 and m1 is not None and m1.payload == b"both" and
          ids1 == [7, 70000] and m2 is not None and m2.payload == b"one" and ids2 == [7])
    result("subscription-ids", ok, "the PUBLISH carries every matching subscription's identifier: %s on "
           "cmd/a, %s on cmd/b" % (ids1, ids2))
    d.close()
    ops.close()


def max_packet_size():
    ops = Client("ops", "ops/5-max", MaximumPacketSize=200)
    ops.sub("devices/dev-8/telemetry/#")
    d = Client("dev-8", "dev-8")
    d.pub("devices/dev-8/telemetry/big", b"x" * 1000)
    d.pub("devices/dev-8/telemetry/small", b"y")
    m = ops.recv()
    extra = ops.recv(QUIET)
    result("maximum-packet-size", m is not None and m.payload == b"y" and extra is None,
           "a client with Maximum Packet Size 200 got the small message only")
    d.close()
    ops.close()


def console():
    ops = Client("ops", "ops/5-console")
    ops.sub("$CONTROL/urmqtt/reply/#", qos=0)
    ops.pub("$CONTROL/urmqtt/config", b"", qos=1)
    m = ops.recv()
    text = m.payload.decode(errors="replace") if m else ""
    result("console", m is not None and m.topic == "$CONTROL/urmqtt/reply/config" and "profile=" in text,
           "a 5.0 console got its reply on %s: %s" % (m.topic if m else None, text[:40]))
    ops.close()


for s in (connack_properties, properties_passed, refusals, session_expiry, subscription_options, topic_alias,
          will_delay, max_packet_size, subscription_ids) + ((console,) if CONSOLE else ()):
    scenario(s)
sys.exit(1 if failed else 0)
