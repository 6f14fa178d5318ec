#!/bin/sh
# CPU and RSS of cg-send and cg-recv at a fixed rate over loopback.
# Usage: sender/scripts/cpu_rss.sh RATE SECONDS [extra cg-send args...]
# e.g.   sender/scripts/cpu_rss.sh 2M 30 --width 640 --height 360 --pattern smpte
# Binaries: $BIN (default target/release). CPU is (utime+stime) over the last SECONDS-5 s
# from /proc/PID/stat; RSS is VmRSS from /proc/PID/status, sampled every 5 s.
set -eu
RATE=$1; SECS=$2; shift 2
BIN=${BIN:-target/release}
PORT=$((20000 + $$ % 10000))
$BIN/cg-recv --listen 127.0.0.1:$PORT --cc gcc --quiet --duration $((SECS + 3))s \
  --stats-file /tmp/cpu_rss_recv.jsonl 2>/dev/null &
R=$!
sleep 0.3
$BIN/cg-send --to 127.0.0.1:$PORT --cc gcc --start-bitrate $RATE --min-bitrate $RATE \
  --max-bitrate $RATE --duration ${SECS}s --quiet --stats-file /tmp/cpu_rss_send.jsonl "$@" 2>/dev/null &
S=$!
ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
rss() { awk '/VmRSS/ {print $2}' /proc/$1/status; }
HZ=$(getconf CLK_TCK)
sleep 5
s0=$(ticks $S); r0=$(ticks $R); t0=$(date +%s.%N)
i=5
while [ $i -lt $((SECS - 5)) ]; do
  echo "t=${i}s rss_kib send=$(rss $S) recv=$(rss $R)"
  sleep 5; i=$((i + 5))
done
s1=$(ticks $S); r1=$(ticks $R); t1=$(date +%s.%N)
echo "cpu% send=$(echo "($s1 - $s0) * 100 / $HZ / ($t1 - $t0)" | bc -l | cut -c1-5) recv=$(echo "($r1 - $r0) * 100 / $HZ / ($t1 - $t0)" | bc -l | cut -c1-5)"
wait $S
wait $R
tail -n 1 /tmp/cpu_rss_send.jsonl | sed 's/"extra".*//' | cut -c1-400
tail -n 1 /tmp/cpu_rss_recv.jsonl | cut -c1-300
