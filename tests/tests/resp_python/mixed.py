"""A few hundred mixed operations through redis-py (a client nobody here wrote) against a
RESP server, each result checked against a model kept here; pipelines; a SCAN loop.
Run by tests/tests/resp_python.rs as: python3 mixed.py PORT. Exits non-zero on a mismatch."""

import random
import sys

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10, decode_responses=True)
rng = random.Random(7)
model = {}

assert r.ping() is True
r.client_setname("mixed-test")
assert r.client_getname() == "mixed-test"

for i in range(400):
    key = f"py:{rng.randrange(60)}"
    op = rng.choice(["set", "get", "incr", "delete", "exists", "append", "getset", "setnx"])
    if op == "set":
        value = str(rng.randrange(1000))
        assert r.set(key, value) is True
        model[key] = value
    elif op == "get":
        assert r.get(key) == model.get(key), (i, key)
    elif op == "incr":
        current = model.get(key, "0")
        if current.lstrip("-").isdigit():
            assert r.incr(key, 3) == int(current) + 3, (i, key)
            model[key] = str(int(current) + 3)
        else:
            try:
                r.incr(key)
                raise AssertionError(f"INCR of {current!r} succeeded")
            except redis.ResponseError as e:
                assert "not an integer" in str(e), e
    elif op == "delete":
        assert r.delete(key) == (1 if key in model else 0), (i, key)
        model.pop(key, None)
    elif op == "exists":
        assert r.exists(key) == (1 if key in model else 0), (i, key)
    elif op == "append":
        assert r.append(key, "x") == len(model.get(key, "")) + 1, (i, key)
        model[key] = model.get(key, "") + "x"
    elif op == "getset":
        assert r.getset(key, "g") == model.get(key), (i, key)
        model[key] = "g"
    else:
        assert r.setnx(key, "n") == (key not in model), (i, key)
        model.setdefault(key, "n")

# Pipelines (no transaction): 100 commands a round trip, replies in order.
pipe = r.pipeline(transaction=False)
for i in range(100):
    pipe.set(f"pipe:{i}", i)
    pipe.get(f"pipe:{i}")
results = pipe.execute()
assert results == [x for i in range(100) for x in (True, str(i))], results[:6]
for i in range(100):
    model[f"pipe:{i}"] = str(i)

assert r.mset({"m:a": "1", "m:b": "2"}) is True
model.update({"m:a": "1", "m:b": "2"})
assert r.mget(["m:a", "nothing", "m:b"]) == ["1", None, "2"]

assert r.set("ttl:k", "v", ex=100) is True
model["ttl:k"] = "v"
assert 99 <= r.ttl("ttl:k") <= 100
assert r.persist("ttl:k") is True
assert r.ttl("ttl:k") == -1

# A SCAN loop sees exactly the model's keys.
seen = set(r.scan_iter(match="*", count=25))
assert seen == set(model), sorted(seen ^ set(model))[:10]
assert r.dbsize() == len(model)
info = r.info()
assert info["redis_version"] and info["connected_clients"] >= 1, info
assert r.flushdb() is True
assert r.dbsize() == 0
print("ok", len(model))
