#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# libibverbs' example programs move data over $DEV: ibv_{rc,uc,ud,srq}_pingpong,
# polling and with completion events (-e), server and client in this guest,
# both on $DEV with its IPv4 RoCE v2 GID.  A run passes when both sides exit 0
# and print their "N bytes in S seconds" line, and neither saw invalid data
# (-c).  The -e runs are unprivileged (user nobody, with the memlock limit a
# normal user gets); every command runs under a timeout, so a hang fails.
# Works for any RoCE device: URDMA_DEV=rxe0 validates the lane against rxe.
# URDMA_PP_ITERS sets the iteration count (-n, default 200).
. "$(dirname "$0")/lib.sh"
RESULTS=${URDMA_RESULTS:-/tmp}/pingpong
mkdir -p "$RESULTS"
ITERS=${URDMA_PP_ITERS:-200}
PORT=18600

# The unprivileged user.  Its memlock limit is the kernel default a normal
# login gets (8 MiB), even if this shell (root, PID 1's child) has more.
UNPRIV=nobody
MEMLOCK_KB=8192
AS_USER=(setpriv --reuid="$UNPRIV" --regid=nogroup --clear-groups --)

if ! wait_gid_v4 "$DEV"; then
	tap_fail "$DEV has an IPv4 RoCE v2 GID" \
		"$(grep -H . /sys/class/infiniband/"$DEV"/ports/1/gid_attrs/types/* 2>&1 | head)"
	tap_done
fi
tap_ok "$DEV has an IPv4 RoCE v2 GID (index $GIDIDX)"
echo "# $DEV: GID $GIDIDX = $(</sys/class/infiniband/"$DEV"/ports/1/gids/"$GIDIDX")," \
	"active_mtu $(ibv_devinfo -d "$DEV" 2>/dev/null | sed -n 's/.*active_mtu:[[:space:]]*//p')"

# pp NAME WHO TOOL ARGS...: WHO is root or user.
pp() {
	local name=$1 who=$2 tool=$3 log as=() lim=
	shift 3
	log=$RESULTS/${name// /_}
	if [ "$who" = user ]; then
		as=("${AS_USER[@]}")
		lim=$MEMLOCK_KB
		name+=" (as $UNPRIV, memlock $(ulimit_l_as_user) KiB)"
	fi
	PORT=$((PORT + 1))
	(
		[ -z "$lim" ] || ulimit -l "$lim"
		run_pair "$log" "$PORT" "${TMO[@]}" "${as[@]}" "$tool" -d "$DEV" \
			-g "$GIDIDX" -p "$PORT" -n "$ITERS" -c "$@"
		echo "$PAIR_SRC $PAIR_CRC" >"$log.rc"
	)
	read -r PAIR_SRC PAIR_CRC <"$log.rc"
	if pingpong_ok "$log"; then
		tap_ok "$name"
		echo "# $(grep -h ' bytes in .* seconds' "$log.client")"
	else
		tap_fail "$name" "command: $tool -d $DEV -g $GIDIDX -p $PORT -n $ITERS -c $*" \
			"$(pair_diag "$log")"
	fi
}
ulimit_l_as_user() { (ulimit -l "$MEMLOCK_KB" && "${AS_USER[@]}" bash -c 'ulimit -l'); }

# One run per tool, size and mode.  65536 bytes span 16 pages (and 64
# packets at the default path MTU of 1024); UD messages must fit the port's
# active MTU (1024 on a 1500-byte netdev).
# The debug kernel (KASAN under TCG) takes the larger size only, and runs
# unprivileged (-e: events, as nobody) on RC and UD only, for time.
RC_SIZES=(4096 65536) UD_SIZES=(64 1024) USER_UC_SRQ=1
if [ "${URDMA_KERNEL:-}" = debug ]; then
	RC_SIZES=(65536) UD_SIZES=(1024) USER_UC_SRQ=
fi
for size in "${RC_SIZES[@]}"; do
	pp "ibv_rc_pingpong -s $size" root ibv_rc_pingpong -s "$size"
	pp "ibv_rc_pingpong -s $size -e" user ibv_rc_pingpong -s "$size" -e
	pp "ibv_uc_pingpong -s $size" root ibv_uc_pingpong -s "$size"
	[ -z "$USER_UC_SRQ" ] ||
		pp "ibv_uc_pingpong -s $size -e" user ibv_uc_pingpong -s "$size" -e
	pp "ibv_srq_pingpong -s $size" root ibv_srq_pingpong -s "$size"
	[ -z "$USER_UC_SRQ" ] ||
		pp "ibv_srq_pingpong -s $size -e" user ibv_srq_pingpong -s "$size" -e
done
pp "ibv_rc_pingpong -s 65536 -N (new post-send API)" root ibv_rc_pingpong -s 65536 -N
# An empty poll that yields to an awake engine, which the provider does
# by default only with one CPU online (the two-host guests): forced here.
URDMA_POLL_YIELD=1 pp "ibv_rc_pingpong -s 65536, URDMA_POLL_YIELD=1 (empty polls yield)" \
	root ibv_rc_pingpong -s 65536
for size in "${UD_SIZES[@]}"; do
	pp "ibv_ud_pingpong -s $size" root ibv_ud_pingpong -s "$size"
	pp "ibv_ud_pingpong -s $size -e" user ibv_ud_pingpong -s "$size" -e
done
tap_done
