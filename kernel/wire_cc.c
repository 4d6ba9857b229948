// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RC requester's congestion control: a retransmission timeout that
 * follows the measured round trip (RFC 6298), and a window of PSNs that
 * grows while ACKs come back and shrinks on loss (RFC 5681's slow start,
 * additive increase and multiplicative decrease).  Plain arithmetic over
 * struct urdma_cc: the requester (wire_req.c) and the completer
 * (wire_comp.c) call it, and only the QP's engine thread does.  See the
 * "Congestion control" section of docs/wire.md.
 */
#include <linux/minmax.h>
#include <kunit/visibility.h>

#include "roce.h"
#include "wire.h"

/**
 * urdma_cc_init - the state of a QP that has sent nothing yet
 * @cc: its congestion control
 *
 * No round trip measured (the RTO is the ceiling), slow start from
 * URDMA_CC_CWND_INIT PSNs up to the whole window.
 */
void urdma_cc_init(struct urdma_cc *cc)
{
	*cc = (struct urdma_cc) {
		.cwnd = URDMA_CC_CWND_INIT,
		.ssthresh = URDMA_WIRE_PKTS,
	};
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_init);

/**
 * urdma_cc_rtt - take a round-trip sample (RFC 6298, 2.2 and 2.3)
 * @cc: the congestion control
 * @ns: the time from sending a PSN to the ACK that covered it; only of a
 *	PSN that was sent once (Karn: urdma_req_rewind() stops the timing)
 */
void urdma_cc_rtt(struct urdma_cc *cc, u64 ns)
{
	u64 err;

	ns = max_t(u64, ns, 1);
	if (!cc->srtt) {
		cc->srtt = ns;
		cc->rttvar = ns / 2;
		return;
	}
	err = cc->srtt > ns ? cc->srtt - ns : ns - cc->srtt;
	cc->rttvar = (3 * cc->rttvar + err) / 4;
	cc->srtt = (7 * cc->srtt + ns) / 8;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_rtt);

/**
 * urdma_cc_rto - the retransmission timeout now
 * @cc: the congestion control
 * @ceil: its ceiling: the QP's local ACK timeout (IBTA's formula, at least
 *	URDMA_RTO_FLOOR_NS)
 *
 * SRTT + max(G, 4 * RTTVAR), at least URDMA_RTO_FLOOR_NS, doubled for each
 * timeout since the last progress (RFC 6298, 5.5), at most @ceil.  The
 * ceiling itself until a round trip was measured.
 */
u64 urdma_cc_rto(const struct urdma_cc *cc, u64 ceil)
{
	u64 rto;

	if (!cc->srtt)
		return ceil;
	rto = cc->srtt + max_t(u64, URDMA_RTO_GRAN_NS, 4 * cc->rttvar);
	rto = max_t(u64, rto, URDMA_RTO_FLOOR_NS);
	if (cc->backoff >= 32 || rto >= ceil >> cc->backoff)
		return ceil;
	return rto << cc->backoff;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_rto);

/**
 * urdma_cc_acked - an ACK covered @n more PSNs, up to @acked
 * @cc: the congestion control
 * @acked: the PSN the ACK named
 * @n: how many PSNs it acknowledged that no ACK had before
 *
 * Slow start below the threshold (one PSN more per PSN acknowledged),
 * additive increase above it (URDMA_CC_AI more per window acknowledged),
 * never beyond URDMA_WIRE_PKTS.  An ACK at or past the PSN a cut was made at
 * ends that loss episode: the next loss cuts again.  Progress also ends the
 * timeout backoff.
 */
void urdma_cc_acked(struct urdma_cc *cc, u32 acked, u32 n)
{
	cc->backoff = 0;
	if (cc->recovering && urdma_psn_diff(acked, cc->recover) >= 0)
		cc->recovering = false;
	if (cc->cwnd < cc->ssthresh) {
		cc->cwnd = min3(cc->cwnd + n, cc->ssthresh, (u32)URDMA_WIRE_PKTS);
		return;
	}
	/* A READ's ACK may cover 2^23 PSNs: at most 128 steps. */
	cc->acc += n * URDMA_CC_AI;
	while (cc->acc >= cc->cwnd && cc->cwnd < URDMA_WIRE_PKTS) {
		cc->acc -= cc->cwnd;
		cc->cwnd++;
	}
	if (cc->cwnd >= URDMA_WIRE_PKTS)
		cc->acc = 0;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_acked);

/*
 * Cut the window by 1/2^@shift into the threshold, once per loss
 * episode.
 */
static bool urdma_cc_cut(struct urdma_cc *cc, u32 psn_max, unsigned int shift)
{
	if (cc->recovering)
		return false;
	cc->ssthresh = max_t(u32, cc->cwnd - (cc->cwnd >> shift),
			     URDMA_CC_CWND_MIN);
	cc->recover = psn_max;
	cc->recovering = true;
	cc->acc = 0;
	return true;
}

/**
 * urdma_cc_loss - the path lost a packet (a sequence NAK)
 * @cc: the congestion control
 * @psn_max: the PSN after the last one sent
 *
 * Multiplicative decrease by URDMA_CC_MD_SHIFT, once for all the losses
 * of the PSNs sent so far (the go-back resends them all).
 * Return: whether it was cut.
 */
bool urdma_cc_loss(struct urdma_cc *cc, u32 psn_max)
{
	if (!urdma_cc_cut(cc, psn_max, URDMA_CC_MD_SHIFT))
		return false;
	cc->cwnd = cc->ssthresh;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_loss);

/**
 * urdma_cc_congestion - the path is congested (the local queue dropped a
 *	packet)
 * @cc: the congestion control
 * @psn_max: the PSN after the last one sent
 *
 * Multiplicative decrease by half, once per episode.
 * Return: whether it was cut.
 */
bool urdma_cc_congestion(struct urdma_cc *cc, u32 psn_max)
{
	if (!urdma_cc_cut(cc, psn_max, 1))
		return false;
	cc->cwnd = cc->ssthresh;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_congestion);

/**
 * urdma_cc_timeout - the retransmission timer expired with no progress
 * @cc: the congestion control
 * @psn_max: the PSN after the last one sent
 *
 * The go-back starts again from URDMA_CC_CWND_MIN PSNs (slow start up to
 * half the window there was), and the RTO doubles.
 */
void urdma_cc_timeout(struct urdma_cc *cc, u32 psn_max)
{
	urdma_cc_cut(cc, psn_max, 1);
	cc->cwnd = URDMA_CC_CWND_MIN;
	cc->timing = false;
	if (cc->backoff < 32)
		cc->backoff++;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_cc_timeout);
