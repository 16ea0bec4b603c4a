"""redis-py's cluster client against a ringstore node's RESP port (tests/tests/resp_cluster.rs).

Usage: cluster.py PORT. Reads the slot map, runs 300 random operations on 80 keys checked
against a model, a pipeline, MSET/MGET on hash-tagged keys, MGET across slots, a SCAN of every
node (each node must list only its own keys: no key twice) and DBSIZE summed over the nodes.
Prints "ok N" on success.
"""
import random
import sys

from redis.cluster import RedisCluster

port = int(sys.argv[1])
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
nodes = rc.get_primaries()
assert len(nodes) >= 2, f"expected a node per shard, got {nodes}"
assert all(n.port != port for n in nodes), "the nodes are the shards' own ports"

rng = random.Random(16)
model = {}
for _ in range(300):
    key = f"k{rng.randrange(80)}"
    op = rng.randrange(4)
    if op == 0:
        value = str(rng.randrange(1_000_000))
        assert rc.set(key, value) is True
        model[key] = value
    elif op == 1:
        assert rc.get(key) == model.get(key), key
    elif op == 2:
        assert rc.delete(key) == (1 if key in model else 0), key
        model.pop(key, None)
    else:
        assert rc.exists(key) == (1 if key in model else 0), key

pipe = rc.pipeline()
for i in range(100):
    pipe.set(f"p{i}", str(i))
assert all(pipe.execute())
model.update({f"p{i}": str(i) for i in range(100)})
assert rc.mget_nonatomic([f"p{i}" for i in range(100)]) == [str(i) for i in range(100)]

assert rc.mset({"{tag}a": "1", "{tag}b": "2"}) is True
assert rc.mget("{tag}a", "{tag}b") == ["1", "2"]
model.update({"{tag}a": "1", "{tag}b": "2"})
assert rc.keyslot("{tag}a") == rc.keyslot("{tag}b")

scanned = list(rc.scan_iter(count=25))
assert len(scanned) == len(set(scanned)), "a key listed by two nodes"
assert set(scanned) == set(model), (sorted(set(scanned) ^ set(model)))[:10]
# DBSIZE counts one node's keys, as in Redis Cluster; the sum over the primaries is all of them.
total = rc.dbsize(target_nodes=RedisCluster.PRIMARIES)
assert total == len(model), (total, len(model))
assert rc.dbsize(target_nodes=RedisCluster.RANDOM) < len(model)
print("ok", len(model))
