# shellcheck shell=bash
# Sourced by perf/compare.sh and perf/profile-redis.sh: what both need to run Redis against its
# own benchmark and measure it.

# free_port: a free TCP port on loopback.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cpu_ticks PID: utime + stime of a process, in clock ticks (the fields after the command name,
# which may hold spaces); TICKS is the ticks per second.
cpu_ticks() {
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}
TICKS=$(getconf CLK_TCK)

# write_redis_preload FILE: the 100,000 keys redis-benchmark -r 100000 draws from (key:%012d,
# 16 bytes), each with a 100-byte value, as a redis-cli --pipe stream.
write_redis_preload() {
    python3 - "$1" <<'PY'
import sys
v = b"x" * 100
with open(sys.argv[1], "wb") as f:
    for i in range(100000):
        k = b"key:%012d" % i
        f.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
}
