#!/bin/bash
B=$1; MIX=$2; DUR=$3; P=$4; OUT=$5
d=$(mktemp -d)
$B/ringstore-node --data-dir $d/n --listen 127.0.0.1:0 --shards 1 --log warn > $d/out &
NP=$!
for i in $(seq 100); do grep -q ready $d/out && break; sleep 0.1; done
ADDR=$(sed -n 's/.*listen=\([^ ]*\).*/\1/p' $d/out)
( sleep 4; perf record -e cpu-clock -g -p $NP -o $d/perf.data -- sleep 3 >/dev/null 2>&1 ) &
$B/ringstore-load --addr $ADDR --server-pid $NP --mix $MIX=100 --distribution uniform --connections 50 --threads 1 --pipeline $P --duration 6s --warmup 2s --durability $DUR 2>/dev/null | tail -2 | tr "\n" " " | awk "{print \$4, \$17, \$18, \$19, \$20, \$21, \$22}"
wait %2 2>/dev/null; sleep 1
perf report -i $d/perf.data --no-children --sort comm,dso --stdio 2>/dev/null | grep "%" | head -12 > $OUT
perf report -i $d/perf.data --no-children --sort sym --stdio -g none --percent-limit 0.8 2>/dev/null | grep "%" | head -40 >> $OUT
kill $NP; wait $NP 2>/dev/null; rm -rf $d
