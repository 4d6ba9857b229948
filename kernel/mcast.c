// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD multicast: attach_mcast/detach_mcast, and delivery to the attached
 * QPs.
 *
 * A device keeps its groups in a short list: a group is a multicast GID and
 * the UD QPs attached to it (at most URDMA_MAX_MCAST_QP_ATTACH).  The first
 * attach adds the group's Ethernet address to the netdev's filter, the last
 * detach removes it.
 *
 * A UD send to a multicast GID (destination QPN 0xffffff) goes on the wire
 * as an IP multicast datagram, and is delivered at once to the QPs attached
 * on the urdma devices of this host, other than the sender.  The IP layer's
 * loopback copy of the datagram is not taken again (net.c takes only
 * PACKET_HOST and PACKET_MULTICAST frames).  A multicast packet from the
 * wire goes to every QP attached to its destination group on the device it
 * came in on.  Each delivery checks the receiving QP's Q_Key.
 *
 * The engine copies a group's QP pointers under the lock, then delivers
 * without it.  A QP stays alive while attached (the core counts it), and
 * freeing a group waits for the engines (urdma_engine_sync()).
 */
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <net/ip.h>

#include "exec.h"

struct urdma_mcast {
	struct list_head node;
	union ib_gid gid;
	u32 nqps;
	struct urdma_qp *qps[URDMA_MAX_MCAST_QP_ATTACH];
};

bool urdma_gid_is_mcast(const union ib_gid *gid)
{
	if (ipv6_addr_v4mapped((const struct in6_addr *)gid->raw))
		return ipv4_is_multicast(*(const __be32 *)&gid->raw[12]);
	return gid->raw[0] == 0xff;
}

static void urdma_mcast_mac(const union ib_gid *gid, u8 *mac)
{
	if (ipv6_addr_v4mapped((const struct in6_addr *)gid->raw))
		ip_eth_mc_map(*(const __be32 *)&gid->raw[12], mac);
	else
		ipv6_eth_mc_map((const struct in6_addr *)gid->raw, mac);
}

static struct urdma_mcast *urdma_mcast_find(struct urdma_dev *udev,
					    const union ib_gid *gid)
{
	struct urdma_mcast *m;

	lockdep_assert_held(&udev->mcast_lock);
	list_for_each_entry(m, &udev->mcast, node)
		if (!memcmp(&m->gid, gid, sizeof(*gid)))
			return m;
	return NULL;
}

int urdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct urdma_dev *udev = to_udev(ibqp->device);
	struct urdma_qp *qp = to_uqp(ibqp);
	struct urdma_mcast *m, *fresh;
	u8 mac[ETH_ALEN];
	int ret = 0;
	u32 i;

	if (ibqp->qp_type != IB_QPT_UD || !urdma_gid_is_mcast(gid))
		return -EINVAL;
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;

	mutex_lock(&udev->mcast_mutex);
	spin_lock_irq(&udev->mcast_lock);
	m = urdma_mcast_find(udev, gid);
	if (!m) {
		if (udev->nmcast >= URDMA_MAX_MCAST_GRP) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		m = fresh;
		fresh = NULL;
		m->gid = *gid;
		list_add_tail(&m->node, &udev->mcast);
		udev->nmcast++;
	}
	for (i = 0; i < m->nqps; i++)
		if (m->qps[i] == qp)
			goto out_unlock;	/* attached already */
	if (m->nqps >= URDMA_MAX_MCAST_QP_ATTACH) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	m->qps[m->nqps++] = qp;
	spin_unlock_irq(&udev->mcast_lock);
	if (m->nqps == 1) {
		urdma_mcast_mac(gid, mac);
		dev_mc_add(udev->ndev, mac);
	}
	mutex_unlock(&udev->mcast_mutex);
	kfree(fresh);
	return 0;

out_unlock:
	spin_unlock_irq(&udev->mcast_lock);
	mutex_unlock(&udev->mcast_mutex);
	kfree(fresh);
	return ret;
}

int urdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct urdma_dev *udev = to_udev(ibqp->device);
	struct urdma_qp *qp = to_uqp(ibqp);
	struct urdma_mcast *m;
	bool gone = false;
	u8 mac[ETH_ALEN];
	int ret = -EINVAL;
	u32 i;

	mutex_lock(&udev->mcast_mutex);
	spin_lock_irq(&udev->mcast_lock);
	m = urdma_mcast_find(udev, gid);
	for (i = 0; m && i < m->nqps; i++) {
		if (m->qps[i] != qp)
			continue;
		m->qps[i] = m->qps[--m->nqps];
		if (!m->nqps) {
			list_del(&m->node);
			udev->nmcast--;
			gone = true;
		}
		ret = 0;
		break;
	}
	spin_unlock_irq(&udev->mcast_lock);
	if (gone) {
		urdma_mcast_mac(gid, mac);
		dev_mc_del(udev->ndev, mac);
	}
	mutex_unlock(&udev->mcast_mutex);
	/* No engine delivers to the QP through the group any more. */
	urdma_engine_sync();
	if (gone)
		kfree(m);
	return ret;
}

/**
 * urdma_mcast_qp_gone - take a QP being destroyed off every group
 * @qp: a UD QP, unpublished
 *
 * The core refuses to destroy a QP that ib_attach_mcast() attached, and
 * uverbs detaches a user QP's groups first, so normally nothing is left;
 * but a group must never point at a freed QP, whoever forgot to detach.
 */
void urdma_mcast_qp_gone(struct urdma_qp *qp)
{
	struct urdma_dev *udev = to_udev(qp->ibqp.device);
	struct urdma_mcast *m, *tmp;
	LIST_HEAD(gone);
	u8 mac[ETH_ALEN];
	bool found = false;
	u32 i;

	mutex_lock(&udev->mcast_mutex);
	spin_lock_irq(&udev->mcast_lock);
	list_for_each_entry_safe(m, tmp, &udev->mcast, node) {
		for (i = 0; i < m->nqps; i++) {
			if (m->qps[i] != qp)
				continue;
			m->qps[i] = m->qps[--m->nqps];
			found = true;
			break;
		}
		if (!m->nqps) {
			list_move(&m->node, &gone);
			udev->nmcast--;
		}
	}
	spin_unlock_irq(&udev->mcast_lock);
	list_for_each_entry(m, &gone, node) {
		urdma_mcast_mac(&m->gid, mac);
		dev_mc_del(udev->ndev, mac);
	}
	mutex_unlock(&udev->mcast_mutex);
	if (!found)
		return;
	/* No engine delivers to the QP through a group any more. */
	urdma_engine_sync();
	list_for_each_entry_safe(m, tmp, &gone, node)
		kfree(m);
}

/* Free what is left at device removal (the core detached every QP). */
void urdma_mcast_destroy(struct urdma_dev *udev)
{
	struct urdma_mcast *m, *tmp;

	list_for_each_entry_safe(m, tmp, &udev->mcast, node) {
		list_del(&m->node);
		kfree(m);
	}
}

/* The QPs of @udev attached to @gid, but @skip; under the lock. */
static u32 urdma_mcast_qps(struct urdma_dev *udev, const union ib_gid *gid,
			   const struct urdma_qp *skip,
			   struct urdma_qp **qps)
{
	struct urdma_mcast *m;
	unsigned long flags;
	u32 n = 0, i;

	spin_lock_irqsave(&udev->mcast_lock, flags);
	m = urdma_mcast_find(udev, gid);
	for (i = 0; m && i < m->nqps; i++)
		if (m->qps[i] != skip)
			qps[n++] = m->qps[i];
	spin_unlock_irqrestore(&udev->mcast_lock, flags);
	return n;
}

/**
 * urdma_mcast_deliver - a multicast message to the QPs of one device
 * @eng: the engine, in a pass
 * @udev: the device whose attached QPs receive it
 * @gid: the group
 * @skip: the sending QP (not delivered to itself), or NULL
 * @m: the message; @qkey is checked against each QP's
 * @qkey: the Q_Key the message carries
 *
 * Return: how many QPs took it.
 */
u32 urdma_mcast_deliver(struct urdma_engine *eng, struct urdma_dev *udev,
			const union ib_gid *gid, const struct urdma_qp *skip,
			const struct urdma_msg *m, u32 qkey)
{
	struct urdma_qp *qps[URDMA_MAX_MCAST_QP_ATTACH];
	u32 n = urdma_mcast_qps(udev, gid, skip, qps), i, got = 0;

	for (i = 0; i < n; i++) {
		if (!urdma_ud_qkey_ok(qps[i], qkey) ||
		    !urdma_state_receives(READ_ONCE(qps[i]->attr.qp_state)))
			continue;
		int ret = urdma_recv_msg(eng, qps[i], udev, m);

		if (ret != -EMSGSIZE && ret != -EBUSY)
			got++;
	}
	return got;
}

/**
 * urdma_mcast_local - a UD send to a multicast group, to this host's QPs
 * @eng: the engine
 * @qp: the sender (it does not receive its own message)
 * @wqe: the WQE; @nsrc pieces of @len bytes gathered in the scratch area
 * @av: its AH's address vector: the group is the destination GID
 *
 * Only the urdma devices in the sender's network namespace take it, as on
 * the unicast local path (urdma_devtab_find_gid()): a namespace is a host
 * of its own.  The message also goes on the wire (urdma_ud_xmit()).
 */
void urdma_mcast_local(struct urdma_engine *eng, struct urdma_qp *qp,
		       const struct urdma_send_wqe *wqe,
		       const struct urdma_av *av, int nsrc, u32 len)
{
	u32 qkey = urdma_wqe_qkey(qp, wqe);
	struct urdma_msg m = {
		.src = eng->scratch->src,
		.nsrc = nsrc,
		.len = len,
		.grh = eng->scratch->grh,
		.src_qp = qp->ibqp.qp_num,
		.cqe_opcode = URDMA_CQE_RECV,
		.net_type = av->net_type,
		.sl = av->sl,
		.solicited = wqe->flags & URDMA_WQE_SOLICITED,
	};
	const struct net *net = dev_net(to_udev(qp->ibqp.device)->ndev);
	struct urdma_dev *udev;
	unsigned long id = 0;

	if (wqe->opcode == URDMA_WQE_SEND_IMM) {
		m.cqe_flags = URDMA_CQE_IMM;
		m.ex = wqe->ex;
	}
	urdma_build_grh(eng->scratch->grh, av, len);
	while ((udev = urdma_devtab_next(&id)))
		if (net_eq(dev_net(udev->ndev), net))
			urdma_mcast_deliver(eng, udev, &av->dgid, qp, &m, qkey);
}
